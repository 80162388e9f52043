"""The page a visitor can trust, in a browser at 1400x900 and at a phone's 400 px: a failed load keeps the page true,
messages stay, greyed-out noise sources say why, Optimise shows its pace and lands its verdict in view, the
results carry their own reading, the tables fit a phone, a typed photo number applies, the story diagram, and a
stealth view that reads on its own. Each test saves screenshots under artifacts/ (issue 26)."""

import re
from contextlib import contextmanager

import pytest
from test_browser import CHROMIUM, browser, open_page, shot  # noqa: F401  (the module's browser fixture)

pytestmark = [
    pytest.mark.slow,  # a browser on the served app: `make test-fast` leaves it out
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium; .ci/run does)"),
]
SIZES = [(1400, 900), (400, 860)]


@contextmanager
def visit(browser, app_url, width, height):  # noqa: F811
    """A page at this size on the first example's verdict, closed whatever the test found."""
    page = open_page(browser, app_url, width, height)
    try:
        yield page
    finally:
        page.close()


ids = [f"{w}x{h}" for w, h in SIZES]


@pytest.mark.parametrize("size", SIZES, ids=ids)
def test_a_failed_load_says_why_and_the_page_stays_on_the_last_model(browser, app_url, size):  # noqa: F811
    from playwright.sync_api import expect

    with visit(browser, app_url, *size) as page:
        person = page.locator("#person input").input_value()
        headline = page.locator("#verdict .headline").inner_text()
        page.locator("#model input").fill("no_such_model")
        page.keyboard.press("Enter")
        message = page.locator("#message .message")
        expect(message).to_contain_text("Still showing IDK (taught to refuse)", timeout=60_000)
        expect(page.locator("#model input")).to_have_value("IDK (taught to refuse)", timeout=30_000)  # its label
        expect(page.locator("#verdict .headline")).to_contain_text("δ brings back", timeout=60_000)
        assert page.locator("#person input").input_value() == person
        assert page.locator("#verdict .headline").inner_text() == headline
        assert page.get_by_text("Error", exact=True).count() == 0, "no control is replaced by an error pill"
        text = message.inner_text()
        assert "Traceback" not in text and "/" not in text.split("Still showing")[0], text
        shot(page, f"failed_load_{size[0]}.png")
        page.wait_for_timeout(11_000)  # longer than Gradio's toast lives
        expect(message).to_be_visible()
        page.get_by_role("button", name="Apply δ and compare").click()  # the next action takes it down
        expect(page.locator("#message .message")).to_have_count(0, timeout=30_000)


def test_sources_with_nothing_yet_are_greyed_out_and_say_what_they_need(browser, app_url):  # noqa: F811
    with visit(browser, app_url, 1400, 900) as page:
        styles = page.evaluate(
            """() => ['uploaded', 'optimised'].map(v => {
                const label = document.querySelector(`#source input[value=${v}]`).closest('label');
                const s = getComputedStyle(label); return [s.pointerEvents, parseFloat(s.opacity)]; })"""
        )
        assert all(events == "none" and opacity < 1 for events, opacity in styles), styles
        info = page.locator("#source").inner_text()
        assert "'uploaded' needs a noise file" in info and "'optimised' needs a run" in info, info
        shot(page, "sources_greyed_out.png")


@pytest.mark.parametrize("size", SIZES, ids=ids)
def test_the_results_read_themselves(browser, app_url, size):  # noqa: F811
    """A sentence draws the conclusion under the headline; a legend says what δ, unseen, retrain and denoised mean."""
    with visit(browser, app_url, *size) as page:
        reading = page.locator("#verdict .reading").inner_text()
        first_chip = page.locator("#examples").inner_text()  # the page opens on the first chip's person and photo
        p = re.search(r"\(p ([<=]) ([0-9.]+)", first_chip)
        assert p, first_chip
        found = p[1] == "<" or float(p[2]) < 0.05  # the paired test's reading, as the verdict must say it
        expected = "no control does (p" if found else "No evidence beyond the controls (p"
        assert expected in reading, (first_chip, reading)
        legend = page.locator("#legend").inner_text()
        for word in ("δ", "unseen by δ", "retrain control", "denoised", "random noise"):
            assert word in legend, word
        chip = page.locator("#examples").inner_text()
        assert "brings back" in chip and "(p " in chip, "the chips read the headline's count and test"
        shot(page, f"reading_{size[0]}.png")


def test_a_retain_person_reads_as_damage_or_no_change(browser, app_url):  # noqa: F811
    from playwright.sync_api import expect

    with visit(browser, app_url, 1400, 900) as page:
        page.locator("#role-filter").get_by_text("retain", exact=True).click()
        page.wait_for_timeout(1500)
        page.locator("#people button.thumbnail-item").first.click()
        expect(page.locator("#verdict .headline")).to_contain_text("right answers across", timeout=90_000)
        assert "retain person" in page.locator("#verdict .reading").inner_text()
        assert "brings back" not in page.locator("#verdict .headline").inner_text()
        shot(page, "retain_person.png")


@pytest.mark.parametrize("size", SIZES, ids=ids)
def test_a_typed_photo_number_applies(browser, app_url, size):  # noqa: F811
    from playwright.sync_api import expect

    with visit(browser, app_url, *size) as page:
        box = page.locator("#photo input[type=number]")
        box.fill("3")
        box.press("Enter")
        expect(page.locator("#preview")).to_contain_text("photo 3", timeout=60_000)
        expect(page.locator("#note")).to_contain_text("photo 3", timeout=60_000)
        shot(page, f"typed_photo_{size[0]}.png")


def test_on_a_phone_the_answers_scroll_with_the_questions_fixed_and_tables_read_whole(browser, app_url):  # noqa: F811
    with visit(browser, app_url, 400, 860) as page:
        page.locator("#answers").scroll_into_view_if_needed()
        assert page.locator(".scroll-hint").is_visible(), "a phone is told the table scrolls"
        before = page.evaluate(
            """() => { const w = document.querySelector('#answers .story-wrap');
                const q = w.querySelector('tbody th').getBoundingClientRect().left;
                const scrolls = w.scrollWidth > w.clientWidth + 1; w.scrollLeft = w.scrollWidth;
                return [scrolls, q]; }"""
        )
        page.wait_for_timeout(300)
        after = page.evaluate(
            """() => { const w = document.querySelector('#answers .story-wrap');
                const heads = [...w.querySelectorAll('thead th')]; const last = heads[heads.length - 1];
                const box = w.getBoundingClientRect(), l = last.getBoundingClientRect();
                return [w.querySelector('tbody th').getBoundingClientRect().left, l.right <= box.right + 1]; }"""
        )
        assert before[0], "the answers table scrolls sideways in its box"
        assert abs(after[0] - before[1]) < 2, f"the question column stays put: {before} {after}"
        assert after[1], "scrolled, the last column is in view"
        shot(page, "phone_answers_scrolled.png")
        overflowing = page.evaluate(
            "() => [...document.querySelectorAll('#people .caption-label')]"
            ".filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.innerText)"
        )
        assert not overflowing, f"gallery badges cut: {overflowing[:3]}"
        page.locator("#people").scroll_into_view_if_needed()
        shot(page, "phone_gallery.png")
        for tab, selector, wait in (("Audit", "#audit-table", "above control"), ("About", "#about", "δ")):
            page.get_by_role("tab", name=tab).click()
            page.locator(selector).filter(has_text=wait).first.wait_for(timeout=30_000)
            broken = page.evaluate(
                f"""() => [...document.querySelectorAll('{selector} td, {selector} th')].filter(c => {{
                    const s = getComputedStyle(c); return c.offsetParent !== null && (s.wordBreak === 'break-all'
                      || s.overflowWrap === 'anywhere' || c.scrollWidth > c.clientWidth + 1); }})
                    .map(c => c.innerText)"""
            )
            assert not broken, f"{tab}: cells that break words: {broken[:5]}"
            shot(page, f"phone_{tab.lower()}.png")


@pytest.mark.parametrize("size", SIZES, ids=ids)
def test_the_story_diagram(browser, app_url, size):  # noqa: F811
    with visit(browser, app_url, *size) as page:
        page.get_by_role("tab", name="About").click()
        diagram = page.locator("#story-diagram .story-flow")
        diagram.wait_for(timeout=30_000)
        steps = diagram.locator(".step")
        assert steps.count() == 4
        texts = [steps.nth(i).inner_text() for i in range(4)]
        assert "learns" in texts[0] and "hides" in texts[1] and "gate" in texts[2] and "controls" in texts[3]
        width = page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= size[0] + 1, "the diagram fits the screen"
        shot(page, f"story_diagram_{size[0]}.png")


@pytest.mark.parametrize("size", SIZES, ids=ids)
def test_the_stealth_view_reads_on_its_own(browser, app_url, size):  # noqa: F811
    from playwright.sync_api import expect

    with visit(browser, app_url, *size) as page:
        person = page.locator("#person input").input_value().split(" (")[0]  # '#51 Wren Carrow'
        page.get_by_text("Stealth: the embedding map").click()
        expect(page.locator("#map-text")).to_contain_text(person, timeout=90_000)
        expect(page.locator("#stealthy-text")).to_contain_text("0.5 is chance", timeout=120_000)
        expect(page.locator("#plain-text")).to_contain_text("stealth term", timeout=60_000)
        page.locator("#map").scroll_into_view_if_needed()
        shot(page, f"stealth_map_{size[0]}.png")
        page.locator("#stealthy-text").scroll_into_view_if_needed()  # its map is the one above (issue 57)
        shot(page, f"stealth_compare_{size[0]}.png")


def test_optimise_shows_its_pace_and_lands_its_verdict_in_view(browser, app_url):  # noqa: F811
    from playwright.sync_api import expect

    with visit(browser, app_url, 1400, 900) as page:
        page.get_by_text("Optimise a noise now").click()
        assert "once it runs, the time left comes from the run's own steps" in page.locator("#opt-status").inner_text()
        slider = page.locator("#opt-steps input[type=number]")
        slider.fill("20")
        slider.press("Enter")
        page.get_by_role("button", name="Optimise", exact=True).click()
        expect(page.locator("#opt-status")).to_contain_text("s left", timeout=120_000)
        shot(page, "optimise_running.png")
        expect(page.locator("#opt-status")).to_contain_text("done", timeout=180_000)
        expect(page.locator("#note")).to_contain_text("optimised δ (fitted on IDK", timeout=90_000)
        page.wait_for_timeout(1500)
        box = page.locator("#verdict").bounding_box()
        assert box is not None and -5 <= box["y"] < 800, f"the new verdict is in view: {box}"
        shot(page, "optimise_done_verdict.png")
