"""What the page uses, it names (issue 57), in a browser on the default world at 1400x900 and at a phone's 400x860:
the noise in every result after a model change and after a Stop, widgets that show their content on every path
that opens them, chips shown whole under a true label, the world's own words, the name limit told before the run.
Screenshots under artifacts/."""

import re

import pytest
from test_browser import ARTIFACTS, CHROMIUM, browser, open_page  # noqa: F401  (the module's browser fixture)

pytestmark = [
    pytest.mark.slow,  # a browser on the served app: `make test-fast` leaves it out
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium; .ci/run does)"),
]
SIZES = {"1400": (1400, 900), "400": (400, 860)}


def shot(page, name):
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=False)


def _optimise(page, steps: int, stop_after_s: float | None = None) -> str:
    """Run Optimise from its panel (`stop_after_s`: press Stop once its clock shows, after that long); its last
    status."""
    before = page.locator("#opt-status").inner_text().splitlines()[-1:]  # the last run's, until this one reports
    steps_box = page.locator("#opt-steps input[type=number]")
    for _ in range(20):  # typed as the panel opens, the value was once lost (the run took the default 90 steps)
        steps_box.fill(str(steps))
        steps_box.press("Enter")
        page.wait_for_timeout(250)
        if steps_box.input_value() == str(steps):
            break
    assert steps_box.input_value() == str(steps), steps_box.input_value()
    page.get_by_role("button", name="Optimise", exact=True).click()
    for _ in range(1500):  # every 0.2 s, at most 5 minutes
        said = page.locator("#opt-status").inner_text()
        if stop_after_s is not None and "s left" in said:
            page.wait_for_timeout(int(1000 * stop_after_s))
            page.get_by_role("button", name="Stop", exact=True).click()
            stop_after_s = None
        if "noise source set to 'optimised'" in said and said.splitlines()[-1:] != before:
            return said
        page.wait_for_timeout(200)
    raise AssertionError(f"Optimise never finished: {said}")


def _source(page) -> str:
    page.locator("#verdict .source").wait_for(timeout=120_000)
    return page.locator("#verdict .source").inner_text()


def test_the_noise_is_named_after_a_model_change_and_a_stop(browser, faithful_url):  # noqa: F811
    """Case 1: an optimised δ says whom it was fitted on and how many steps it ran, in the verdict, the note, the
    exports and Batch; after a model change it says it was not fitted on the model now attacked; a Stop's δ says
    it stopped early, with the steps asked for."""
    from playwright.sync_api import expect

    page = open_page(browser, faithful_url, *SIZES["1400"])
    try:
        assert _source(page).startswith("noise: the shipped δ, fitted on IDK") and "faithful world" in _source(page)
        page.get_by_text("Optimise a noise now").click()
        _optimise(page, 10)
        expect(page.locator("#verdict .source")).to_contain_text("optimised δ (fitted on IDK", timeout=120_000)
        assert "10 steps" in _source(page) and "not on" not in _source(page)
        page.locator("#model input").fill("grad_diff")
        page.locator("#model input").press("Enter")
        expect(page.locator("#model-status")).to_contain_text("GradDiff", timeout=90_000)
        expect(page.locator("#verdict .source")).to_contain_text("fitted on IDK, not on GradDiff", timeout=120_000)
        assert (
            "model: GradDiff" in _source(page)
            and "fitted on IDK, not on GradDiff" in page.locator("#note").inner_text()
        )
        page.get_by_text("See the noise").click()  # the exports sit in its panel
        page.locator("a[href*='sua_answers_'][href*='.csv']").first.wait_for(timeout=60_000)
        csv = page.locator("a[href*='sua_answers_'][href*='.csv']").first.get_attribute("href")
        csv = csv if csv.startswith("http") else faithful_url.rstrip("/") + "/" + csv.lstrip("/")
        exported = page.request.get(csv).text()
        assert '# noise,"optimised δ (fitted on IDK, not on GradDiff, 10 steps' in exported, exported[:500]
        assert "# world,the faithful world (bench seed 0)" in exported
        shot(page, "issue57_names_model_change_1400.png")
        page.get_by_role("tab", name="Batch").click()
        page.get_by_role("button", name="Run the protocol").click()
        expect(page.locator("#batch")).to_contain_text("(p ", timeout=300_000)
        batch = page.locator("#batch").inner_text()
        assert "noise: optimised δ (fitted on IDK, not on GradDiff" in batch and "faithful world" in batch, batch[:400]
        assert "ships no budget curves" in batch  # this world draws none: the tab does not promise them
        page.get_by_role("tab", name="Attack").click()
        said = _optimise(page, 300, stop_after_s=1.0)
        assert "stopped early" in said, said
        expect(page.locator("#verdict .source")).to_contain_text("stopped early at", timeout=120_000)
        assert re.search(r"stopped early at \d+ of 300 steps", _source(page)), _source(page)
        page.set_viewport_size({"width": SIZES["400"][0], "height": SIZES["400"][1]})
        source = page.locator("#verdict .source")
        source.scroll_into_view_if_needed()
        assert source.bounding_box()["width"] <= SIZES["400"][0]  # the whole line wraps in view on a phone
        shot(page, "issue57_names_stopped_400.png")
    finally:
        page.close()


@pytest.mark.parametrize("size", SIZES)
def test_every_widget_shows_its_content_in_the_worlds_words(browser, faithful_url, size):  # noqa: F811
    """Cases 2, 3, 5 and 7 at each size: 'how visible is δ' filled when opened after the results; the chips whole,
    under a label true to them; the world's own photo size, figures and the two worlds explained; the stealth maps
    labelled and the shipped δ's map not drawn twice; bold text in a weight the page loads; case 4's name limit
    told before the run, and a name the model cannot say refused as it is typed."""
    from playwright.sync_api import expect

    page = open_page(browser, faithful_url, *SIZES[size])
    try:
        label = page.locator("#examples").inner_text()
        chips = page.locator("#examples button").all_inner_texts()
        assert chips and all(c.endswith("one of the people δ was fitted on") for c in chips), chips  # whole
        assert "never saw first" not in label and "each is one of the people δ was fitted on" in label, label
        page.get_by_text("See the noise").click()
        table = page.locator("#visible table")
        expect(table).to_contain_text("largest change of one pixel", timeout=30_000)
        value = page.locator("#visible td").first.inner_text()
        assert re.fullmatch(r"\d+\.\d", value) and 0 < float(value) <= 16.05, value  # filled, opened after
        assert "112-pixel photos" in page.locator("body").inner_text()
        page.get_by_text("Stealth: the embedding map").click()
        expect(page.locator("#stealthy-text")).to_contain_text("With the stealth term", timeout=120_000)
        expect(page.locator("#stealthy-map")).to_be_hidden()  # the map above is the shipped δ's already
        assert "the map above" in page.locator("#stealthy-text").inner_text()
        expect(page.locator("#plain-map")).to_be_hidden()  # this world ships no plain δ: no empty frame either
        assert "no second map" in page.locator("#plain-text").inner_text()
        assert page.locator("#map label, #map .label").first.inner_text().startswith("embedding map: this photo")
        weights = page.evaluate(
            "() => [...document.fonts].filter(f => f.family.includes('Source Sans')).map(f => f.weight)"
        )
        assert "600" not in weights and "700" in weights, weights  # the 600 file Gradio ships lacks capitals
        shot(page, f"issue57_widgets_{size}.png")
        page.get_by_role("tab", name="About").click()
        about = page.locator("#about").inner_text()
        assert "Why there are two worlds" in about and "SUA_WORLD" in about
        limits = about.split("What limits δ on people it never saw")[1][:400]
        assert limits.lstrip().startswith("In this world") and "+14.1" not in limits.split("In the first world")[0]
        page.get_by_role("tab", name="Your face").click()
        name = page.locator("#face-name")
        assert "at most 40 characters" in name.inner_text() and "Invent facts" in name.inner_text()
        box = page.locator("#face-name input, #face-name textarea")
        box.fill("Zorblax Quill")
        box.press("Tab")
        expect(page.locator("#face-message")).to_contain_text("cannot say 'Zorblax'", timeout=30_000)
        box.fill("Renée Quill")
        box.press("Tab")
        expect(page.locator("#face-message")).to_contain_text("cannot say 'Renée'", timeout=30_000)
        assert "letters, spaces" not in page.locator("#face-message").inner_text()
        shot(page, f"issue57_your_face_{size}.png")
    finally:
        page.close()
