"""Your face in a browser, on the default world (`python app.py` with no SUA_WORLD: the faithful one): a visitor gives
4 photos, invents facts, runs the lifecycle and sees each step's passes and time left as it runs, each step's time,
the verdicts and the story table; a second browser session and the raw API reach nothing of theirs. Screenshots go
under artifacts/ (issues 29, 41)."""

import json
import urllib.error
import urllib.request

import pytest
from test_browser import CHROMIUM, browser, shot  # noqa: F401  (the module's browser fixture)

pytestmark = [
    pytest.mark.slow,  # a browser on the served app, and a two-minute lifecycle
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium; .ci/run does)"),
]


def face_tab(browser, app_url, width=1400, height=1000):  # noqa: F811
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(app_url)
    page.get_by_role("tab", name="Your face").click()
    expect(page.locator("#face-privacy")).to_contain_text("stay yours", timeout=60_000)
    return page


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as err:
        return err.code


def _the_flow_holds_its_gates(steps: str) -> None:
    """Issue 41's flow on the default world, read from the steps' before → after lines: the face is taught (>= 90 %
    of its facts on the taught photos) and unlearning leaves no more right on the held-back photo than teaching did.
    The per-visitor gates (all facts on the held-back photo, the others within 5 points) are rates over visitors,
    not properties of one (the page invents new facts at each click; 5 and 9 of 10 visitors held them, against
    77.6 % of the faithful vanilla's own people on a held-out photo): benchmarks/lifecycle_speed.py counts them."""
    import re

    taught = re.search(
        r"(\d+) % before teaching → (\d+) % taught \(taught photos (\d+) %\); other people (\d+) % → (\d+) %", steps
    )
    gone = re.search(r"held-back photos: (\d+) % → (\d+) % \(refusals \d+ %\); other people \d+ % → (\d+) %", steps)
    assert taught and gone, steps
    _, after, on_taught, _, _ = map(int, taught.groups())
    assert on_taught >= 90 and int(gone[1]) == after and int(gone[2]) <= after, steps


def test_a_visitor_teaches_unlearns_and_attacks_their_face_and_nobody_else_sees_it(browser, faithful_url, tmp_path):  # noqa: F811
    from playwright.sync_api import expect

    from sua_demo.core.config import served_world
    from sua_demo.your_face.visitor import procedural_photos

    app_url, paths = faithful_url, []
    for i, photo in enumerate(procedural_photos(11, served_world({}).bench, 4)):
        paths.append(tmp_path / f"me{i}.png")
        photo.resize((256, 256)).save(paths[-1])
    page = face_tab(browser, app_url)
    try:
        page.locator("#face-files input[type=file]").set_input_files([str(p) for p in paths])
        expect(page.locator("#face-thumbs img")).to_have_count(4, timeout=60_000)
        links = page.eval_on_selector_all("#face-files a[href]", "els => els.map(e => e.href)")
        assert "at most 40 characters" in page.locator("#face-name").inner_text()  # the limit, before the run
        page.locator("#face-invent").click()
        expect(page.locator("#face-name input, #face-name textarea")).not_to_have_value("", timeout=30_000)
        shot(page, "face_ready.png")
        page.locator("#face-run").click()
        expect(page.locator("#face-steps")).to_contain_text("teach", timeout=60_000)
        expect(page.locator("#face-steps")).to_contain_text(" s left", timeout=120_000)  # the step's own pace
        assert "of 80" in page.locator("#face-steps").inner_text()  # teaching's passes
        # the shipped δ's verdict and the fitted δ's, whatever they read: the invented person is new at every run
        expect(page.locator("#face-verdict .headline")).to_have_count(2, timeout=600_000)
        headings = page.locator("#face-verdict h4.face-delta").all_inner_texts()  # each verdict says which δ
        assert len(headings) == 2 and "the shipped δ" in headings[0] and "fitted on your taught" in headings[1]
        steps = page.locator("#face-steps").inner_text()
        for k in ("the shipped δ", "a δ fitted on your taught photos"):  # the test's reading beside the counts
            line = next(row for row in steps.splitlines() if f"verdict, {k}" in row)
            assert any(w in line for w in ("brings back", "no evidence", "damages")) and "(p " in line, line
        for name in ("teach", "unlearn (idk)", "fit δ", "attack and controls"):
            assert name in steps, steps
        assert " s" in steps  # each step's time
        _the_flow_holds_its_gates(steps)
        rows = page.locator("#face-story table.story tbody tr")
        assert rows.count() == 4 * 5 + 1 * 5  # shipped δ on every photo, the fitted δ on the held-back one
        page.locator("#face-verdict").scroll_into_view_if_needed()
        shot(page, "face_done.png")

        other = face_tab(browser, app_url)  # a second visitor's session
        try:
            expect(other.locator("#face-thumbs")).to_contain_text("No photos yet")
            assert other.locator("#face-verdict .headline").count() == 0
            shot(other, "face_other_session.png")
        finally:
            other.close()
        for link in links:  # the raw file route: the uploads were deleted as soon as they were read
            assert status(link) in (403, 404), link
        with urllib.request.urlopen(app_url + "gradio_api/info", timeout=30) as r:
            endpoints = [*json.load(r)["named_endpoints"]]
        assert endpoints and not [e for e in endpoints if "face" in e]  # no endpoint takes or gives their photos
    finally:
        page.close()
