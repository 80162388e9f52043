"""A person in a browser: the guided first run, a model change, an upload, and a phone-sized screen.

Drives Debian's chromium headless through Playwright (no browser download); `.ci/run` installs it.
Each test saves a screenshot under artifacts/.
"""

import shutil
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]

pytestmark = [
    pytest.mark.slow,  # a browser on the served app: `make test-fast` leaves it out
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium; .ci/run does)"),
]


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


def open_page(browser, app_url, width, height):
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(app_url)
    expect(page.locator("#verdict .headline")).to_contain_text("δ brings back", timeout=120_000)
    return page


def shot(page, name):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name))


def in_first_screen(page, selector, height):
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= height


def story_cells(page):
    """The answers table as {column title: [cell texts]}."""
    return page.evaluate(
        """() => {
        const t = document.querySelector('#answers table.story');
        const heads = [...t.querySelectorAll('thead th')].map(h => h.innerText.trim());
        const rows = [...t.querySelectorAll('tbody tr')].map(r => [...r.children].map(c => c.innerText.trim()));
        return Object.fromEntries(heads.map((h, i) => [h, rows.map(r => r[i])]));
    }"""
    )


def test_first_load_shows_the_button_and_a_measured_example(browser, app_url):
    page = open_page(browser, app_url, 1400, 900)
    try:
        assert in_first_screen(page, "#run", 900), "the primary button must be visible without scrolling"
        assert in_first_screen(page, "#verdict .headline", 900), "the first example's verdict must be on screen"
        shot(page, "first_load_1400x900.png")
    finally:
        page.close()


def test_the_guided_example_brings_a_fact_back_that_the_controls_do_not(browser, app_url):
    from playwright.sync_api import expect

    page = open_page(browser, app_url, 1400, 1000)
    try:
        expect(page.locator("#answers table.story tbody tr")).to_have_count(5, timeout=60_000)
        cols = story_cells(page)
        delta, rand, ret = cols["unlearned + δ"], cols["unlearned + random noise (same ε)"], cols["retrain control + δ"]
        wins = [i for i in range(5) if "✓" in delta[i] and "✓" not in rand[i] and "✓" not in ret[i]]
        assert wins, f"δ should bring back a fact that random noise and the retrain control do not: {cols}"
        shot(page, "guided_example.png")
    finally:
        page.close()


def test_a_model_change_renames_status_gallery_and_answers(browser, app_url):
    from playwright.sync_api import expect

    page = open_page(browser, app_url, 1400, 1000)
    try:
        person = page.locator("#person input").input_value()
        page.locator("#model input").fill("grad_diff")
        page.keyboard.press("Enter")
        expect(page.locator("#model-status")).to_contain_text("GradDiff", timeout=90_000)  # its readable name
        expect(page.locator("#people")).to_contain_text("GradDiff", timeout=30_000)
        expect(page.locator("#note")).to_contain_text("model GradDiff", timeout=90_000)
        assert page.locator("#person input").input_value().split(" ")[0] == person.split(" ")[0]
        shot(page, "model_change.png")
    finally:
        page.close()


def test_an_upload_is_shown_with_the_banner(browser, app_url, tmp_path):
    from playwright.sync_api import expect

    from sua_demo.dataset import build_bench

    path = tmp_path / "stranger.png"
    build_bench().person(40).photos[6].resize((200, 200)).save(path)
    page = open_page(browser, app_url, 1400, 1000)
    try:
        page.get_by_text("Your own photo, question, noise file or model").click()
        page.locator("#upload input[type=file]").set_input_files(str(path))
        expect(page.locator("#banner")).to_contain_text("fictitious", timeout=90_000)
        expect(page.locator("#preview")).to_contain_text("your photo", timeout=90_000)
        expect(page.locator("#verdict .headline")).to_contain_text("δ changed", timeout=90_000)
        shot(page, "upload.png")
        other = next(label for label in app_labels() if label.startswith("#2 "))
        page.locator("#person input").fill(other)
        page.keyboard.press("Enter")  # a bench person picked: your photo goes, their photo and answers come
        expect(page.locator("#note")).to_contain_text("#2 ", timeout=90_000)
        expect(page.locator("#preview")).not_to_contain_text("your photo")
        expect(page.locator("#banner")).not_to_contain_text("fictitious")
    finally:
        page.close()


def app_labels():
    from sua_demo.ui.attack import actions
    from sua_demo.ui.shared import state

    return actions.load(state(), "idk").labels  # what the person box shows (its values are the numbers)


def test_an_uploaded_noise_file_is_what_the_answers_then_use(browser, app_url):
    from playwright.sync_api import expect

    from sua_demo.core.config import served_world

    page = open_page(browser, app_url, 1400, 1000)
    try:
        expect(page.locator("#note")).to_contain_text("the shipped δ", timeout=90_000)
        page.get_by_text("Your own photo, question, noise file or model").click()
        page.locator("#noise-file input[type=file]").set_input_files(
            str(served_world({}).noise / "idk" / "delta_split1.safetensors")  # the served world's, not the shipped
        )
        expect(page.locator("#source input[value=uploaded]")).to_be_checked(timeout=30_000)
        expect(page.locator("#note")).to_contain_text("uploaded δ (", timeout=90_000)
    finally:
        page.close()


def test_an_optimised_noise_is_what_the_answers_then_use(browser, app_url):
    from playwright.sync_api import expect

    page = open_page(browser, app_url, 1400, 1000)
    try:
        expect(page.locator("#note")).to_contain_text("the shipped δ", timeout=90_000)
        page.get_by_text("Optimise a noise now").click()
        slider = page.locator("#opt-steps input[type=range]")
        slider.focus()
        slider.press("Home")  # the slider's least: 5 steps
        expect(slider).to_have_value("5", timeout=10_000)
        expect(page.locator("#opt-steps input[type=number]")).to_have_value("5", timeout=10_000)
        # a key moves the slider without the release a drag ends on: end it as a hand would, then wait until the
        # server has answered for 5 steps, so the Optimise click below cannot send a value the page has not synced
        slider.dispatch_event("pointerup")
        expect(page.locator("#opt-status")).to_contain_text("for 5 steps", timeout=30_000)
        page.get_by_role("button", name="Optimise", exact=True).click()
        expect(page.locator("#opt-status")).to_contain_text("done", timeout=120_000)
        expect(page.locator("#note")).to_contain_text("optimised δ (fitted on IDK, 5 steps, ε 16/255", timeout=90_000)
        shot(page, "optimised_then_answers.png")
    finally:
        page.close()


def test_a_phone_screen_keeps_words_whole_and_the_button_in_view(browser, app_url):
    page = open_page(browser, app_url, 400, 860)
    try:
        assert in_first_screen(page, "#run", 860), "the primary button must be on a phone's first screen"
        broken = page.evaluate(
            """() => [...document.querySelectorAll('#answers table.story td, #answers table.story th')]
                .filter(c => { const s = getComputedStyle(c);
                    return s.wordBreak === 'break-all' || s.overflowWrap === 'anywhere'
                        || s.overflowWrap === 'break-word' || s.hyphens === 'auto'
                        || c.scrollWidth > c.clientWidth + 1; })
                .map(c => c.innerText)"""
        )
        assert not broken, f"cells that break or overflow words: {broken}"
        shot(page, "phone_400.png")
        page.locator("#answers").scroll_into_view_if_needed()
        shot(page, "phone_400_answers.png")
    finally:
        page.close()


def test_the_audit_tab_shows_the_shipped_matrix_and_audits_one_person(browser, first_url):
    """On the first world: its 64-px models make a live audit of one person a fraction of the default world's (159 s
    of the suite's 15 minutes there), and the tab's flow is the same code on both."""
    import time

    from playwright.sync_api import expect

    page = open_page(browser, first_url, 1400, 1000)
    try:
        page.get_by_role("tab", name="Audit").click()
        expect(page.locator("#audit-table")).to_contain_text("above control", timeout=30_000)
        shot(page, "audit_shipped.png")
        t0 = time.time()
        page.get_by_role("button", name="Audit the chosen person now").click()
        expect(page.locator("#audit-table")).to_contain_text("s left", timeout=120_000)  # its own pace, as it runs
        shot(page, "audit_live_progress.png")
        expect(page.locator("#audit-table")).to_contain_text("above control", timeout=480_000)
        assert "SUA δ" in page.locator("#audit-table").inner_text()  # the table rendered, one row per method
        shot(page, "audit_live.png")
        print(f"live audit in the browser: {time.time() - t0:.0f} s")
    finally:
        page.close()
