"""A person in a browser: pick a forget-set person, apply the shipped noise, see the answer change.

Drives Debian's chromium headless through Playwright (no browser download); `.ci/run` installs it.
The screenshot lands in artifacts/app.png.
"""

import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium; .ci/run does)")


def test_shipped_noise_changes_an_answer_in_the_browser(app_url):
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1700})
            page.goto(app_url)
            thumbs = page.locator("#people img")
            expect(thumbs).to_have_count(100, timeout=90_000)
            person = page.locator("#person input")
            thumbs.nth(1).click()  # the gallery lists forget people δ never saw first
            expect(person).to_have_value("#31 Odo Winslet (forget, unseen by δ)", timeout=30_000)
            thumbs.nth(0).click()  # back to the first: the shipped noise brings two of its answers back
            expect(person).to_have_value("#5 Elio Fennick (forget, unseen by δ)", timeout=30_000)
            page.locator("#run").click()
            expect(page.locator("#note")).to_contain_text("#5 Elio Fennick", timeout=90_000)
            cells = page.locator("#answers [role=gridcell]")
            expect(cells).to_have_count(25, timeout=30_000)
            texts = cells.all_inner_texts()
            rows = [texts[i : i + 5] for i in range(0, 25, 5)]
            assert all("refused" in r[2] for r in rows), f"clean answers should be refusals: {rows}"
            assert sum("✓" in r[3] for r in rows) >= 2, f"the shipped noise should bring back two true answers: {rows}"
            expect(page.locator(".js-plotly-plot")).to_have_count(1, timeout=90_000)  # the embedding map
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "app.png"), full_page=True)
        finally:
            browser.close()
