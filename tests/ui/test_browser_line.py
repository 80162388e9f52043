"""The line of heavy jobs in a browser, on the default world (issue 56): while one tab's Optimise runs, a second tab's
Your face waits in line and is told its place and a wait; an API caller in the same line hears the same words; the
second tab's Stop takes it out of the line, and nothing of its run ever starts."""

import time

import pytest
from test_browser import CHROMIUM, browser, open_page, shot  # noqa: F401  (the module's browser fixture)
from test_browser_face import face_tab

pytestmark = [
    pytest.mark.slow,  # two browser tabs on the served app
    pytest.mark.skipif(CHROMIUM is None, reason="needs chromium (apt-get install chromium; .ci/run does)"),
]


def _long_optimise(page) -> None:  # type: ignore[no-untyped-def]
    """The slider's most steps (300), synced with the server, then Optimise: a run that lasts tens of seconds."""
    from playwright.sync_api import expect

    page.get_by_text("Optimise a noise now").click()
    slider, status = page.locator("#opt-steps input[type=range]"), page.locator("#opt-status")
    for _ in range(10):  # a key pressed as the panel first opens was once lost (the estimate stayed at 60 steps)
        slider.focus()
        slider.press("End")
        slider.dispatch_event("pointerup")  # a key move ends with the release a drag ends on (see test_browser)
        try:
            expect(status).to_contain_text("for 300 steps", timeout=5_000)
            break
        except AssertionError:
            continue
    expect(status).to_contain_text("for 300 steps", timeout=30_000)
    page.get_by_role("button", name="Optimise", exact=True).click()
    expect(page.locator("#opt-status")).to_contain_text("step", timeout=60_000)


def _api_words_while_waiting(url: str) -> str:
    """An API caller's Optimise behind the page's jobs: the first thing it hears (then it leaves)."""
    from gradio_client import Client

    job = Client(url, verbose=False, download_files=False).submit(model="idk", steps=5, api_name="/optimise")
    deadline = time.monotonic() + 60
    while not job.outputs() and time.monotonic() < deadline:
        time.sleep(0.1)
    said = str(job.outputs()[0][0]) if job.outputs() else ""
    job.cancel()
    return said


@pytest.mark.parametrize("size", [(1400, 900), (400, 860)], ids=["desktop", "phone"])
def test_a_waiting_tab_sees_its_place_and_wait_and_its_stop_leaves_the_line(browser, faithful_url, tmp_path, size):  # noqa: F811
    from playwright.sync_api import expect

    from sua_demo.core.config import served_world
    from sua_demo.your_face.visitor import procedural_photos

    paths = []
    for i, photo in enumerate(procedural_photos(31, served_world({}).bench, 4)):
        paths.append(tmp_path / f"me{i}.png")
        photo.resize((256, 256)).save(paths[-1])
    second = face_tab(browser, faithful_url, *size)
    first = open_page(browser, faithful_url, 1400, 1000)
    try:
        second.locator("#face-files input[type=file]").set_input_files([str(p) for p in paths])
        expect(second.locator("#face-thumbs img")).to_have_count(4, timeout=60_000)
        second.locator("#face-invent").click()
        expect(second.locator("#face-name input, #face-name textarea")).not_to_have_value("", timeout=30_000)
        expect(first.locator("#note")).to_contain_text("the shipped δ", timeout=90_000)

        _long_optimise(first)
        second.locator("#face-run").click()
        status = second.locator("#face-status")
        expect(status).to_contain_text("In line: place 2", timeout=30_000)
        expect(status).to_contain_text("1 job ahead of yours, one running", timeout=5_000)
        expect(status).to_contain_text("it starts in about", timeout=5_000)  # an Optimise's length is known up front
        shot(second, f"line_waiting_{size[0]}.png")

        api = _api_words_while_waiting(faithful_url)  # behind the Optimise and the waiting Your face
        assert api.startswith("In line: place 3 (2 jobs ahead of yours, one running); "), api
        # a Your face ahead has not been timed on this server yet unless another test ran one first: said, not guessed
        assert "it starts in about" in api or "its wait is not known yet" in api, api
        assert "stop with run=" in api  # an API caller's handle on its run

        second.locator("#face-stop").click()
        expect(status).to_contain_text("Stopped while waiting: it left the line", timeout=10_000)
        first.get_by_role("button", name="Stop", exact=True).click()
        expect(first.locator("#opt-status")).to_contain_text("stopped early", timeout=60_000)
        time.sleep(2)  # had the stopped run kept its place, it would start now that the line is free
        assert "pass" not in second.locator("#face-steps").inner_text()
        assert "Stopped while waiting" in status.inner_text()
        shot(second, f"line_left_{size[0]}.png")
    finally:
        second.close()
        first.close()
