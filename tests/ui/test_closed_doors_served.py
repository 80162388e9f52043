"""Closed doors through the served app (issue 39): a visitor's photos are gone from every route once their tab
closes, a page-only event deletes no file the server made, and one caller cannot stop another's run. Each case
also checks that the server still answers."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from gradio_client import Client

pytestmark = pytest.mark.slow  # the served app


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def post_json(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def upload(app_url: str, name: str, data: bytes) -> str:
    """POST a file to Gradio's /upload as a browser does; the server path it was stored at."""
    boundary = "sua-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    req = urllib.request.Request(
        app_url + "gradio_api/upload", data=body, headers={"Content-Type": f"multipart/form-data; boundary={boundary}"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())[0]


def page_stream(app_url: str, elem_id: str, trigger: str, data: list, session: str, chained: bool = False) -> Any:
    """Start a page-only event (no api_name) the way a hostile caller can: by its index, through the queue; with
    `chained`, the event the page runs after that one (a click's `.success`). The open event stream: its lines."""
    config = json.loads(get(app_url + "config")[1])
    ids = {c["id"] for c in config["components"] if c.get("props", {}).get("elem_id") == elem_id}
    deps = config["dependencies"]
    index = next(i for i, dep in enumerate(deps) if any(t[0] in ids and t[1] == trigger for t in dep["targets"]))
    fn = deps[index].get("id", index)
    if chained:
        fn = next(dep.get("id", i) for i, dep in enumerate(deps) if dep.get("trigger_after") == fn)
    post_json(app_url + "gradio_api/queue/join", {"data": data, "fn_index": fn, "session_hash": session})
    return urllib.request.urlopen(app_url + f"gradio_api/queue/data?session_hash={session}", timeout=120)


def page_event(app_url: str, elem_id: str, trigger: str, data: list, session: str) -> list:
    """A page-only event called by its index (`page_stream`), waited for: its outputs."""
    with page_stream(app_url, elem_id, trigger, data, session) as stream:
        for line in stream:
            if line.startswith(b"data:"):
                msg = json.loads(line[5:])
                if msg.get("msg") == "process_completed":
                    return msg.get("output", {}).get("data", [])
    raise AssertionError("the event never completed")


def photo_bytes(seed: int = 5) -> bytes:
    import io

    from sua_demo.core.config import BenchConfig
    from sua_demo.your_face.visitor import procedural_photos

    buf = io.BytesIO()
    procedural_photos(seed, BenchConfig(), 1)[0].resize((128, 128)).save(buf, format="PNG")
    return buf.getvalue()


def still_up(app_url: str) -> None:
    words, _ = Client(app_url, verbose=False).predict("idk", "5", 5, api_name="/answer")
    assert sum(line.startswith("Q: ") for line in words.splitlines()) == 5


def file_data(path: str) -> dict:
    return {"path": path, "meta": {"_type": "gradio.FileData"}, "orig_name": path.rsplit("/", 1)[-1]}


# -- 2. a visitor's photos: gone when the tab closes; no deep link ----------------------------------------------
def test_the_deep_link_route_is_closed(app_url):
    code, body = get(app_url + "gradio_api/deep_link?session_hash=anything")
    assert code == 404 and b"keeps no copy" in body
    still_up(app_url)


def test_sessions_keep_what_gradio_gives_them_but_no_copy_of_the_page():
    """The copy of the page a deep link would read is never built (the route is closed, and it cost 50 ms of the
    event loop per visitor); every other field Gradio's own SessionState sets is there, so Gradio works as before."""
    import gradio as gr
    from gradio.state_holder import SessionState

    from sua_demo.ui.serving.launch import sessions_keep_no_page_copy

    sessions_keep_no_page_copy()
    with gr.Blocks() as demo:
        gr.Textbox("a value")
    full = SessionState.__new__(SessionState)
    SessionState.__init__._gradios(full, demo)
    lean = SessionState(demo)
    assert set(vars(lean)) == set(vars(full)) and full.config_values and not lean.config_values
    lean._update_value_in_config(next(iter(demo.blocks)), "new")
    assert not lean.config_values


# -- 3. a page-only event deletes no file the server made -----------------------------------------------------
def test_the_photo_upload_event_deletes_uploads_only_and_never_a_server_file(app_url):
    from pathlib import Path

    client = Client(app_url, verbose=False, download_files=False)
    from sua_demo.ui.serving.handouts import HANDOUTS

    made = client.predict("idk", 16, 5, "gaussian", 0, "", api_name="/optimise")  # a noise file the server made
    preview = str(HANDOUTS.find(made[2]))  # (where it keeps it: a caller is told a link, not this path)
    assert get(app_url + f"gradio_api/file={preview}")[0] == 200
    said = page_event(app_url, "face-files", "upload", [[file_data(preview)]], "hostile-1")
    assert Path(preview).is_file() and get(app_url + f"gradio_api/file={preview}")[0] == 200, said
    from sua_demo.ui.shared import state

    state().faces.drop("hostile-1")  # (it read the preview as a photo of its own: harmless, and now dropped)

    mine = upload(app_url, "me.png", photo_bytes())  # a real upload is read, then removed with its folder
    page_event(app_url, "face-files", "upload", [[file_data(mine)]], "visitor-1")
    assert not Path(mine).exists() and not Path(mine).parent.exists()
    assert get(app_url + f"gradio_api/file={mine}")[0] in (403, 404)
    assert len(state().faces.get("visitor-1").photos) == 1  # it was read into that session's memory
    state().faces.drop("visitor-1")
    still_up(app_url)


def test_a_closed_tab_leaves_no_photo_in_any_session_route_or_file(app_url, tmp_path):
    """The browser's own close: the unload event drops the session's photos and Gradio's copy of its page."""
    from test_browser import CHROMIUM, browser  # noqa: F401

    if CHROMIUM is None:
        pytest.skip("needs chromium (apt-get install chromium; .ci/run does)")
    from playwright.sync_api import expect, sync_playwright
    from test_browser import ARGS

    from sua_demo.ui.shared import state

    paths = []
    for i in range(3):
        paths.append(tmp_path / f"me{i}.png")
        paths[-1].write_bytes(photo_bytes())
    holding_before, keys_before = state().faces.holding(), state().faces.keys()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = b.new_page(viewport={"width": 1400, "height": 900})
        page.goto(app_url)
        page.get_by_role("tab", name="Your face").click()
        page.locator("#face-files input[type=file]").set_input_files([str(q) for q in paths])
        expect(page.locator("#face-thumbs img")).to_have_count(3, timeout=60_000)
        assert state().faces.holding() == holding_before + 1
        holders = [k for k in state().faces.keys() - keys_before if state().faces.get(k).photos]
        assert len(holders) == 1 and holders[0] in _state_holder(app_url)  # this tab's session, and its page
        page.close()
        deadline = time.monotonic() + 30  # the unload's handler and Gradio's own deletion each take their turn

        def kept() -> bool:
            return state().faces.holding() > holding_before or any(k in _state_holder(app_url) for k in holders)

        while kept() and time.monotonic() < deadline:
            time.sleep(0.2)
        b.close()
    assert state().faces.holding() == holding_before, "the photos outlived the tab"
    demo_holder = _state_holder(app_url)
    for key in holders:
        assert key not in demo_holder, "Gradio still keeps the closed tab's page (its thumbnails)"
        assert state().faces.get(key).photos == []  # a later call with the same session finds nothing
        state().faces.drop(key)
    still_up(app_url)


def _served_blocks(app_url: str):
    """The Blocks the session's app fixture serves (it launched in this process)."""
    import gc

    import gradio as gr

    for obj in gc.get_objects():
        if isinstance(obj, gr.Blocks) and getattr(obj, "local_url", None) == app_url:
            return obj
    raise AssertionError("the served Blocks was not found")


def _state_holder(app_url: str) -> dict:
    return _served_blocks(app_url).state_holder.session_data


# -- 4. stop belongs to the caller who started the run; one heavy job at a time -------------------------------
OPTIMISE = {"model": "idk", "eps": 16, "steps": 300, "denoiser": "gaussian", "stealth": 100}


def _text(result) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


async def _two_mcp_clients(url: str) -> tuple[str, str, str, str]:
    import asyncio

    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with (
        streamablehttp_client(url + "gradio_api/mcp/") as (ra, wa, _),
        ClientSession(ra, wa) as a,
        streamablehttp_client(url + "gradio_api/mcp/") as (rb, wb, _),
        ClientSession(rb, wb) as b,
    ):
        await a.initialize()
        await b.initialize()
        run = asyncio.create_task(a.call_tool("optimise", {**OPTIMISE, "run": "a-secret-7f3e"}))
        await asyncio.sleep(8)  # a's run is under way
        by_b = [_text(await b.call_tool("stop", args)) for args in ({}, {"run": "a-secret"}, {"run": ""})]
        await asyncio.sleep(2)
        by_a = _text(await a.call_tool("stop", {"run": "a-secret-7f3e"}))
        result = _text(await asyncio.wait_for(run, 300))
        after = _text(await b.call_tool("stop", {"run": "a-secret-7f3e"}))
        return by_b, by_a, result, after


def test_two_mcp_clients_cannot_stop_each_others_run(app_url):
    import asyncio

    pytest.importorskip("mcp")
    by_b, by_a, result, after = asyncio.run(_two_mcp_clients(app_url))
    nothing, wrong = "nothing is running to stop", "no run of yours with that id is running"
    assert by_b == [nothing, wrong, nothing], by_b  # b can neither stop a's run nor guess its name
    assert "stopping after the current step" in by_a, by_a  # a stops its own, by the name it gave it
    assert "stopped early" in result and "300 steps" not in result, result
    assert "no run of yours with that id is running" in after  # it is over: nothing left to stop
    still_up(app_url)


def _sse_events(url: str):
    with urllib.request.urlopen(url, timeout=300) as stream:
        for line in stream:
            if line.startswith(b"data:"):
                yield json.loads(line[5:])


def test_a_rest_caller_stops_its_own_run_by_its_id_and_nobody_elses(app_url):
    import re

    body = {"data": ["idk", 16, 300, "gaussian", 100, ""]}
    event = post_json(app_url + "gradio_api/call/optimise", body)["event_id"]
    events = _sse_events(app_url + f"gradio_api/call/optimise/{event}")
    first = next(events)
    run = re.search(r"run ([\w-]+)", json.dumps(first)).group(1)

    def stop(run_id: str) -> str:
        said = post_json(app_url + "gradio_api/call/stop", {"data": [run_id]})["event_id"]
        return json.dumps(next(_sse_events(app_url + f"gradio_api/call/stop/{said}")))

    assert "nothing is running to stop" in stop("")  # a plain REST call has no session: it names its run
    assert "no run of yours with that id" in stop(run[:-2] + "xx")  # a guess stops nothing
    assert "stopping after the current step" in stop(run)
    last = [e for e in events][-1]
    assert "stopped early" in json.dumps(last), last
    still_up(app_url)


def test_every_heavy_job_waits_in_the_one_line(app_url):
    """Gradio lets the heavy jobs in to wait in the library's line (threads.HeavyLine), which runs one at a time
    and tells each its place (tests/engine/test_threads.py, tests/ui/test_browser_line.py)."""
    from sua_demo.ui.serving.launch import LINE_SEATS

    fns = list(_served_blocks(app_url).fns.values())
    heavy = {f.name for f in fns if f.concurrency_id == "heavy"}
    assert {"optimise", "optimise_on_page", "audit", "face_run"} <= heavy, heavy
    assert {f.concurrency_limit for f in fns if f.concurrency_id == "heavy"} == {LINE_SEATS}


# -- 7. raw library text never reaches a caller ---------------------------------------------------------------------
def _call(app_url: str, api: str, data: list) -> str:
    event = post_json(app_url + f"gradio_api/call/{api}", {"data": data})["event_id"]
    with urllib.request.urlopen(app_url + f"gradio_api/call/{api}/{event}", timeout=300) as r:
        return r.read().decode()


FILE = {"path": "x" * 5000, "meta": {"_type": "gradio.FileData"}}
REST = ["", "shipped", None, "gaussian", "", ""]
RAW = ("<class", "object at 0x", "pydantic", "Errno", "Cannot move", "Traceback", "/work/", "/tmp/")


@pytest.mark.parametrize(
    "api, data, words",
    [
        ("load_model", ["idk", "", "nobody"], "'nobody' is not one of the choices; choose one of 'unseen by δ'"),
        ("answer", ["idk", "5", 5], "answer takes 10 values (model, person, photo, upload"),
        ("answer", ["idk", "5", "abc", None, *REST], "an input is not in a form it takes"),
        ("answer", ["idk", "5", 5, FILE, *REST], "an input is not in a form it takes"),
        ("answer", ["idk", "5", 5, {"url": "ftp://x"}, *REST], "your photo: give a file as the path"),
        ("answer", ["idk", "5", 5, None, "", "uploaded", {"path": "/etc/passwd"}, "gaussian", "", ""], "not in a form"),
    ],
)
def test_gradios_own_refusals_reach_callers_in_our_words(app_url, api, data, words):
    said = _call(app_url, api, data)
    assert "event: error" in said and words in said.replace("\\u03b4", "δ"), said
    assert not any(raw in said for raw in RAW), said
    still_up(app_url)


def test_an_unknown_api_name_is_a_404_that_names_the_real_ones(app_url):
    req = urllib.request.Request(
        app_url + "gradio_api/call/nonexistent", data=b'{"data": []}', headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=60)
    body = err.value.read().decode()
    assert err.value.code == 404 and "no API named 'nonexistent'" in body and "answer" in body and "stop" in body
    still_up(app_url)


def test_a_huge_request_writes_no_huge_log_line(app_url, caplog):
    import logging

    caplog.set_level(logging.INFO)
    said = _call(app_url, "answer", ["idk", "9" * 2_000_000, 5, None, *REST])
    assert "event: error" in said
    assert any("user error in answer" in r.getMessage() for r in caplog.records)  # it was logged, and short:
    longest = max(len(r.getMessage()) for r in caplog.records)
    assert longest < 2_000, longest
    still_up(app_url)


# -- 8. MCP: a noise can be given as base64 or as the URL of a noise this server serves ------------------------------
async def _noise_over_mcp(url: str) -> tuple[str, str, str]:
    import base64
    import re

    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    from sua_demo.core.config import served_world

    shipped = (served_world({}).noise / "idk" / "delta_split0.safetensors").read_bytes()
    as_base64 = "data:application/octet-stream;base64," + base64.b64encode(shipped).decode()
    ask = {"model": "idk", "person": "2", "photo": 5, "noise_source": "uploaded"}
    async with streamablehttp_client(url + "gradio_api/mcp/") as (r, w, _), ClientSession(r, w) as s:
        await s.initialize()
        by_base64 = await s.call_tool("answer", {**ask, "noise_file": as_base64})
        made = _text(await s.call_tool("optimise", {**OPTIMISE, "steps": 5}))
        served = re.findall(r"https?://[^'\"\s]+/gradio_api/noise/[\w-]+/[^/'\"\s]+_last_[0-9a-f]+\.safetensors", made)
        assert served, made[-3000:]
        served = served[0]
        by_url = await s.call_tool("answer", {**ask, "noise_file": served})
        elsewhere = await s.call_tool("answer", {**ask, "noise_file": "http://10.0.0.1/noise.safetensors"})
    said = [("error: " if r.isError else "") + _text(r) for r in (by_base64, by_url, elsewhere)]
    return said[0], said[1], said[2]


def test_an_mcp_client_can_give_a_noise_as_base64_or_as_a_served_url(app_url):
    import asyncio

    pytest.importorskip("mcp")
    by_base64, by_url, elsewhere = asyncio.run(_noise_over_mcp(app_url))
    assert not by_base64.startswith("error") and "unlearned + δ" in by_base64 and "uploaded δ" in by_base64
    assert not by_url.startswith("error") and "unlearned + δ" in by_url and "uploaded δ" in by_url
    assert elsewhere.startswith("error") and "/tmp/" not in elsewhere  # no fetch from other hosts, in one sentence
    still_up(app_url)


def test_optimise_hands_its_noise_out_by_a_link_that_names_no_server_folder(app_url, tmp_path):
    """The δ's link is a token of the app's own: it downloads the δ, names no folder, and an unknown token is a
    404 in our words."""
    import re

    from sua_demo.attacks.noise import load_noise

    asked = {**OPTIMISE, "steps": 5}
    status, data, link = Client(app_url, verbose=False).predict(*asked.values(), "", api_name="/optimise")
    named = r"gradio_api/noise/[\w-]{24}/sua_idk_eps16_last_[0-9a-f]+\.safetensors"
    assert re.fullmatch(re.escape(app_url) + named, link), link
    assert json.loads(data)["noise"] == link and "/tmp/" not in status + data + link
    code, body = get(link)
    (tmp_path / "delta.safetensors").write_bytes(body)
    assert code == 200 and load_noise(tmp_path / "delta.safetensors").eps == pytest.approx(16 / 255)
    code, body = get(link.replace("/noise/", "/noise/x").rsplit("/", 1)[0])
    assert code == 404 and b"no such noise" in body
    still_up(app_url)


# -- 4. a live audit over MCP: cancelled when its client leaves, and bounded when it stays ----------------------------
def _workers() -> int:
    """Heavy jobs waiting or running in the line (its one worker thread outlives them)."""
    from sua_demo.engine.threads import LINE

    return LINE.length()


async def _audit_over_mcp(url: str, person: str, leave_after: float | None) -> tuple[int, str]:
    """Call the live audit; with `leave_after`, the client goes away then. Returns the workers seen while it ran."""
    import asyncio

    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async with streamablehttp_client(url + "gradio_api/mcp/") as (r, w, _), ClientSession(r, w) as s:
        await s.initialize()
        call = asyncio.create_task(s.call_tool("audit", {"model": "idk", "person": person}))
        seen = 0
        for _ in range(int(10 * (leave_after or 600))):
            if call.done():
                break
            seen = max(seen, _workers())
            await asyncio.sleep(0.1)
        if not call.done():
            call.cancel()
            return seen, ""
        return seen, _text(call.result())


def test_a_live_audit_stops_when_its_mcp_client_leaves(app_url):
    import asyncio
    import time

    from sua_demo.ui.shared import state

    pytest.importorskip("mcp")
    person = str(state().engine.bench.forget_ids[0])
    seen, _ = asyncio.run(_audit_over_mcp(app_url, person, leave_after=6))
    assert seen >= 1, "the audit never started"
    left = time.monotonic()
    while _workers() and time.monotonic() - left < 60:  # the method under way ends, and then nothing runs
        time.sleep(0.5)
    assert _workers() == 0, "the audit kept working after its client left"
    still_up(app_url)


def test_a_live_audit_over_mcp_returns_within_its_bound(app_url, monkeypatch):
    import asyncio
    import time

    from sua_demo.ui import api
    from sua_demo.ui.shared import state

    pytest.importorskip("mcp")
    assert f"within {api.AUDIT_BOUND_S} s" in api.audit.__doc__  # the bound the tool states is the one it keeps
    monkeypatch.setattr(api, "AUDIT_BOUND_S", 3)
    person = str(state().engine.bench.forget_ids[0])
    t0 = time.monotonic()
    _, said = asyncio.run(_audit_over_mcp(app_url, person, leave_after=None))
    assert "stopped at its time bound" in said and '"complete": false' in said, said[:500]
    assert time.monotonic() - t0 < 60
    still_up(app_url)


async def _optimise_with_progress(url: str) -> tuple[list[str], str]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    said: list[str] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        said.append(message or "")

    async with streamablehttp_client(url + "gradio_api/mcp/") as (r, w, _), ClientSession(r, w) as s:
        await s.initialize()
        result = await s.call_tool("optimise", {**OPTIMISE, "steps": 20}, progress_callback=progress)
    return said, _text(result)


def test_a_long_mcp_tool_streams_its_progress_to_a_client_that_asks(app_url):
    import asyncio

    pytest.importorskip("mcp")
    said, result = asyncio.run(_optimise_with_progress(app_url))
    steps = [m for m in said if m.startswith("Progress ") and " of 20" in m]  # the run's own status, step by step
    assert steps and all("Step" in m for m in steps), said
    assert "done: 20 steps" in result and '"done": true' in result, result[:300]
    still_up(app_url)


# -- 10. uploads belong to their caller; no caller puts a traceback in the log; refusals in the app's words ----------
def test_an_upload_belongs_to_the_session_that_first_sent_it(app_url):
    from pathlib import Path

    mine = upload(app_url, "mine.png", photo_bytes(seed=31))
    owner, other = Client(app_url, verbose=False), Client(app_url, verbose=False)
    ask = ("idk", "5", 5, file_data(mine), "shipped", None, "", "")
    words = owner.predict(*ask, api_name="/verdict")[0]
    assert "your photo" in words
    with pytest.raises(Exception, match="uploaded by another visitor"):
        other.predict(*ask, api_name="/verdict")
    page_event(app_url, "face-files", "upload", [[file_data(mine)]], "not-the-owner")  # would read it, then delete it
    assert Path(mine).is_file() and get(app_url + f"gradio_api/file={mine}")[0] == 200
    assert owner.predict(*ask, api_name="/verdict")[0] == words  # the owner still has it
    still_up(app_url)


def test_a_removed_upload_is_a_404_and_a_path_outside_the_uploads_stays_gradios(app_url):
    from pathlib import Path

    gone = upload(app_url, "gone.png", photo_bytes(seed=32))
    Path(gone).unlink()
    code, body = get(app_url + f"gradio_api/file={gone}")
    assert code == 404 and b"removed once it is read" in body
    assert get(app_url + "gradio_api/file=/etc/no-such-file")[0] == 403  # says nothing of what exists elsewhere


def test_an_unknown_session_on_the_queue_is_one_404_and_no_traceback(app_url, caplog):
    import logging

    with caplog.at_level(logging.INFO):
        code, body = get(app_url + "gradio_api/queue/data?session_hash=nobody-here")
        time.sleep(0.5)
    assert code == 404 and b"join it first" in body
    assert "Traceback" not in caplog.text and "Exception in ASGI" not in caplog.text, caplog.text[-2000:]
    still_up(app_url)


async def _mcp_refusals(url: str) -> list[str]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    ask = {"model": "idk", "person": "2", "photo": 5, "noise_source": "uploaded"}
    calls = [
        {**ask, "noise_file": "/etc/passwd"},
        {**ask, "noise_file": "data:application/octet-stream;base64,@@@not-base64"},
        {**ask, "model": "nonsense", "noise_source": "shipped"},
    ]
    async with streamablehttp_client(url + "gradio_api/mcp/") as (r, w, _), ClientSession(r, w) as s:
        await s.initialize()
        results = [await s.call_tool("answer", args) for args in calls]
    assert all(r.isError for r in results)
    return [_text(r) for r in results]


def test_mcp_refusals_are_in_the_apps_words(app_url):
    import asyncio

    pytest.importorskip("mcp")
    local, base64, model = asyncio.run(_mcp_refusals(app_url))
    assert local.startswith("a path on the server is not taken") and "/etc/passwd" not in local
    assert "base64 data could not be read" in base64 and "multiple of 4" not in base64
    assert model.startswith("nonsense is not one of the choices; choose one of 'idk'"), model
    still_up(app_url)
