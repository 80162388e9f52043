"""How the app is served: server settings from the environment, caches that clean themselves, a warm-up."""

from __future__ import annotations

import argparse
import atexit
import importlib.util
import logging
import os
import re
import shutil
import signal
import threading
import time
from pathlib import Path
from typing import Any

from sua_demo.ui.serving.handouts import HANDOUTS, ROUTE
from sua_demo.ui.serving.page_cache import PageCache

log = logging.getLogger(__name__)

MAX_UPLOAD = "20mb"  # a photo or a noise file; Gradio refuses larger uploads before they reach the disk
CACHE_SWEEP = (600, 3600)  # every 10 minutes, Gradio deletes cached files older than an hour
QUEUE_POLL = 0.02  # seconds Gradio's queue sleeps between looks at an idle queue (its own default: 0.001)
CONCURRENCY = 2  # page answers at once, each on one thread
# Heavy jobs (Optimise, Your face, a live audit) run one at a time in the library's own line (threads.HeavyLine),
# which tells each waiting visitor their place and wait; Gradio lets this many of them in to wait there, and holds
# a thread for each while it waits (THREADS leaves room for the page's answers beside them).
LINE_SEATS = 40
HEAVY = {"concurrency_id": "heavy", "concurrency_limit": LINE_SEATS}
THREADS = 2 * LINE_SEATS
# After SIGINT or SIGTERM: the most the cleanup may take before the process ends anyway. The promise is 2 s in all;
# the cleanup takes about 0.4 s on a quiet machine, and the rest is margin for the signal to reach the main thread
# on a loaded one.
GRACE_S = 1.0
ANALYTICS = {"GRADIO_ANALYTICS_CACHE_FREQUENCY": "500", "GRADIO_ANALYTICS_MAX_EVENTS": "2000"}  # (queued)
LOG_LINE = 1000  # characters: a log line quotes at most this much of what a caller sent


def page_kwargs() -> dict[str, Any]:
    """What Gradio 6 takes at launch rather than in Blocks: the stylesheet, the page's metadata and the theme. The
    default theme loads its font at 400 and 600, and the 600 file Gradio ships is a 5 KB subset: a capital it lacks
    came from another font, as a small capital ("SUᴀ", "ᴀpply", "LoRᴀ"). Declared at 400 and 700 (the full bold file
    Gradio also ships), text asked for at 600 is drawn in the bold one."""
    import gradio as gr

    from sua_demo.ui.shared.words import CSS, HEAD

    font = gr.themes.LocalFont("Source Sans Pro", weights=(400, 700))  # 600 asked for draws 700
    theme = gr.themes.Default(font=[font, "ui-sans-serif", "system-ui", "sans-serif"])
    return {"css": CSS, "head": HEAD, "theme": theme}


def app_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """`python app.py`'s flags. A Space starts it with none (the environment sets host and port); a person who
    types `--help` learns how to serve it instead of starting a server that ignores the flag."""
    ap = argparse.ArgumentParser(
        prog="app.py",
        description="SUA Lab: serve the Gradio app on the embedded default (or a model picked in the page).",
        epilog="Without flags the host and port come from GRADIO_SERVER_NAME and PORT or GRADIO_SERVER_PORT "
        "(as on Hugging Face Spaces), else 127.0.0.1:7860. The batch interface is `sua --help`.",
    )
    ap.add_argument("--host", help="address to serve on (0.0.0.0 for every interface)")
    ap.add_argument("--port", type=int, help="port to serve on")
    return ap.parse_args(argv)


def own_uploads() -> None:
    """This server's uploads and Gradio's cache in a folder of its own (`sweep.own_upload_folder`): removed with
    the scratch folder on a stop signal, at exit, or by the next server when this one was killed."""
    from sua_demo.ui.serving.upload_sweep import own_upload_folder

    _scratch.add(own_upload_folder())


def check_world() -> None:
    """The world SUA_WORLD names, or the process ends with one line saying which names there are (no traceback)."""
    from sua_demo.core.errors import SuaError
    from sua_demo.engine import served_world

    try:
        served_world()
    except SuaError as err:
        raise SystemExit(f"app.py: error: {err}") from None


def launch_kwargs(scratch: Path, host: str | None = None, port: int | None = None) -> dict[str, Any]:
    kwargs: dict[str, Any] = {
        **page_kwargs(),
        "server_name": host or os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
        "server_port": port or int(os.environ.get("PORT", os.environ.get("GRADIO_SERVER_PORT", 7860))),
        "show_error": True,
        "max_file_size": MAX_UPLOAD,
        "max_threads": THREADS,
        "allowed_paths": [str(scratch)],
        "app_kwargs": {"middleware": [_middleware(ClosedRoutes), _middleware(PageCache)]},
    }
    _scratch.add(Path(scratch))  # removed first if a stop signal ends the server (stop_on_signals)
    sessions_keep_no_page_copy()
    if importlib.util.find_spec("mcp") is not None:  # gradio[mcp]: the typed handlers become MCP tools
        kwargs["mcp_server"] = True
        mcp_results_item_by_item()
        mcp_refusals_in_our_words()
    return kwargs


def sessions_keep_no_page_copy() -> None:
    """Gradio keeps, for every session, a second copy of every component's config (`SessionState.config_values`),
    built when the session starts and rebuilt for each output of each event, only so that a deep link can give the
    page back. This app closes deep links (`ClosedRoutes`), and that copy was the largest single cost of a class
    opening the page at once (py-spy, 30 visitors: 78 of 400 busy samples, about 50 ms of the one event-loop thread
    per session, plus 24 more in the events' outputs). Sessions here keep the state they need and no copy."""
    import copy

    from gradio.state_holder import SessionState

    if getattr(SessionState.__init__, "_sua_mended", False):
        return

    def lean(self: Any, blocks: Any) -> None:
        self.blocks_config = copy.copy(blocks.default_config)
        self.config_values = {}  # what deep links would read: never built
        self.state_data = {}
        self._state_ttl = {}
        self.is_closed = False
        self.STATE_TTL_WHEN_CLOSED = 1 if os.getenv("GRADIO_IS_E2E_TEST") else 3600

    lean._sua_mended = True  # type: ignore[attr-defined]
    lean._gradios = SessionState.__init__  # type: ignore[attr-defined]  (a test checks both set the same fields)
    SessionState.__init__ = lean
    SessionState._update_config = lambda self, key: None
    SessionState._update_value_in_config = lambda self, key, value: None


def mcp_results_item_by_item() -> None:
    """Two mends to how Gradio's MCP server waits for a queued tool without a progress token
    (`GradioMCPServer._execute_tool_without_progress`, gradio 6.31):
    - it returns a tool's several outputs as one item, so a client read `['words', '{json}']`, a Python repr;
      the outputs become one text each, words first, then the JSON;
    - it left the queued job running when the MCP request was cancelled (the client went away): the job is
      cancelled with it, so a live audit or an optimisation nobody waits for stops.
    With a progress token Gradio already returns the outputs one by one."""
    import anyio
    from gradio.mcp import GradioMCPServer

    if getattr(GradioMCPServer._execute_tool_without_progress, "_sua_mended", False):
        return

    async def each_output(self: Any, job: Any) -> list[Any]:
        try:  # the wait may be abandoned: the thread then ends with the job it waits for
            result = await anyio.to_thread.run_sync(job.result, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            job.cancel()
            raise
        return list(result) if isinstance(result, tuple) else [result]

    each_output._sua_mended = True  # type: ignore[attr-defined]
    GradioMCPServer._execute_tool_without_progress = each_output


def mcp_refusals_in_our_words() -> None:
    """Every MCP tool error leaves through the MCP server's `_make_error_result`: there it is put in the app's words
    (`gradio_parts.mcp_words`), whoever raised it (the schema check, Gradio's file handling, our handlers)."""
    from mcp.server.lowlevel.server import Server

    from sua_demo.ui.serving.gradio_parts import mcp_words

    if getattr(Server._make_error_result, "_sua_mended", False):
        return
    made = Server._make_error_result

    def ours(self: Any, error_message: str) -> Any:
        return made(self, mcp_words(error_message))

    ours._sua_mended = True  # type: ignore[attr-defined]
    Server._make_error_result = ours


class ClosedRoutes:
    """ASGI middleware in front of Gradio's routes. It answers 404 on the routes this app does not use and that
    would keep a visitor's page (`deep_link` writes a session's component values, a visitor's thumbnails among
    them, to a file anyone with its link can read, and which outlives the session and the server), and on a call
    to an API name that does not exist (Gradio answers that with a bare 500), naming the ones that do. It serves
    the files the API hands out by link (`handouts`)."""

    CLOSED = ("/gradio_api/deep_link",)
    CALLS = re.compile(r"/gradio_api/(?:call|run|api)/(?P<name>[^/]+)/?$")
    FILES = re.compile(r"/gradio_api/file=(?P<path>.+)$")

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            path = scope.get("path", "")
            if "/heartbeat/" not in path:  # an open tab's heartbeat is not a visitor asking for something
                _asked[0] = time.monotonic()
            said = None
            if path.rstrip("/").endswith(self.CLOSED):
                said = "not served here: this app keeps no copy of a page"
            elif (call := self.CALLS.search(path)) and scope.get("method") == "POST":
                names = _api_names(scope.get("app"))
                if names and call["name"] not in names | {"predict"}:  # the page's own calls go to run/predict
                    said = f"no API named {call['name'][:60]!r}; the API has {', '.join(sorted(names))}"
            elif path.endswith("/gradio_api/queue/data") and not _session_waits(scope):
                said = "no event of this session is in the queue: join it first (/gradio_api/queue/join)"
            elif (gone := self.FILES.search(path)) and _removed_upload(scope.get("app"), gone["path"]):
                said = "no such file: an uploaded file is removed once it is read, or after ten minutes"
            elif ROUTE in path and scope.get("method") in ("GET", "HEAD"):
                await _hand_over(scope, receive, send)
                return
            if said is not None:
                from starlette.responses import JSONResponse

                await JSONResponse({"error": said}, status_code=404)(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _hand_over(scope: Any, receive: Any, send: Any) -> None:
    """A file the API handed out by link (`handouts`), as a download; 404 in our words when the token is unknown or
    its file swept."""
    from starlette.responses import FileResponse, JSONResponse

    found = HANDOUTS.find(scope.get("path", ""))
    if found is None:
        said = "no such noise: a link from optimise lasts an hour, and only on the server that made it"
        await JSONResponse({"error": said}, status_code=404)(scope, receive, send)
        return
    await FileResponse(found, filename=found.name, media_type="application/octet-stream")(scope, receive, send)


def _session_waits(scope: Any) -> bool:
    """Whether the queue holds events of the session a `queue/data` request names. Gradio answers an unknown one
    by raising inside a stream it has already begun: the caller gets a 404 message, the log an 80-line traceback."""
    from urllib.parse import parse_qs

    session = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("session_hash", [""])[0]
    try:
        return session in scope["app"].get_blocks()._queue.pending_messages_per_session
    except (AttributeError, KeyError):
        return True  # cannot tell: Gradio answers


def _removed_upload(app: Any, quoted: str) -> bool:
    """Whether a file route asks for a file that is not there in this server's upload folder (an upload read and
    deleted, or swept): Gradio answers 403, as if it were forbidden, where it is gone. Paths elsewhere stay
    Gradio's to answer, so a caller learns nothing about what exists outside the folder."""
    from urllib.parse import unquote

    try:
        folder = Path(app.get_blocks().GRADIO_CACHE).resolve()
        asked = Path(unquote(quoted)).resolve()
    except (AttributeError, OSError, ValueError):
        return False
    return asked.is_relative_to(folder) and asked != folder and not asked.exists()


def _api_names(app: Any) -> set[str]:
    """The public API names of the Blocks `app` serves (empty when it cannot tell: then Gradio answers)."""
    try:
        fns = app.get_blocks().fns.values()
    except AttributeError:
        return set()
    return {f.api_name for f in fns if f.api_name and getattr(f, "api_visibility", "public") == "public"}


def _middleware(cls: type) -> Any:
    from starlette.middleware import Middleware

    return Middleware(cls)


def queued(demo: Any) -> Any:
    """The app's queue, as `python app.py` and the browser tests serve it.

    The loop that starts queued events (`Queue.start_processing`) wakes every millisecond while it waits, and
    each wake takes the GIL from the attack thread, whose Python dispatches thousands of ops a step (py-spy: the
    event loop busy 11 % of the time during an Optimise run; the app's steps/s 72-79 % of the library's on an
    AMD EPYC, 83-97 % with this). Polling every QUEUE_POLL seconds starts each queued event at most that much
    later (a click's chain of three or four events, 60-80 ms). Gradio's progress loop keeps its own 10 ms.

    After every event Gradio's queue also builds a pandas table of the last 10 000 events for its monitoring page
    (which this app does not serve): 0.5 s of a class opening the page (py-spy), and 16 ms an event once a
    server has seen 10 000 (four events a page load). Its own settings (ANALYTICS): every 500 events, over 2 000."""
    for name, value in ANALYTICS.items():  # read when the queue is made, next line
        os.environ.setdefault(name, value)
    demo = demo.queue(default_concurrency_limit=CONCURRENCY)
    queue = getattr(demo, "_queue", None)
    if queue is not None and hasattr(queue, "sleep_when_free"):
        queue.sleep_when_free = max(queue.sleep_when_free, QUEUE_POLL)
    stop_on_signals(demo)
    from gradio.utils import get_upload_folder

    from sua_demo.ui.serving.upload_sweep import UploadSweeper

    UploadSweeper(demo, get_upload_folder()).start()
    return demo


def stop_on_signals(demo: Any = None) -> None:
    """Ctrl-C (SIGINT) and SIGTERM stop the server within GRACE_S and clean up as a normal exit does.

    SIGTERM's default ends the process without running `atexit`, which would leave the scratch folder of downloads
    behind; and after Ctrl-C, Gradio's close and the interpreter's exit wait on worker threads (the warm-up loading
    a model, pool workers inside torch) for seconds (4.6 s measured on 2 busy cores). So a signal removes the
    scratch folders first (launch_kwargs names them), then closes the server and runs the exit handlers on a
    helper thread for at most GRACE_S, and ends the process whether they are done or not; a second signal ends
    it at once. Only the main thread can install signal handlers: elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    global _demo
    _demo = demo
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _on_signal)


_demo: Any = None
_scratch: set[Path] = set()  # the folders launch_kwargs serves downloads from: removed first on a stop signal
_stopping = threading.Event()


def _on_signal(signum: int, frame: Any) -> None:
    """The handler of stop_on_signals: clean up for at most GRACE_S from the signal, then end the process. The
    scratch removal is inside that bound too: a scratch grown over hours must not hold the stop up."""
    deadline = time.monotonic() + GRACE_S
    code = 128 + signum  # the shell's convention for a process ended by a signal
    if _stopping.is_set():
        os._exit(code)
    _stopping.set()
    log.info("stopping on %s", signal.Signals(signum).name)
    helper = threading.Thread(target=_close_and_exit_handlers, name="sua-stop", daemon=True)
    helper.start()
    helper.join(max(0.0, deadline - time.monotonic()))
    os._exit(code)


def _close_and_exit_handlers() -> None:
    """Remove the scratch folders, close the server, then run the exit handlers (AppState's scratch removal among
    them) as a normal exit would."""
    for folder in list(_scratch):
        shutil.rmtree(folder, ignore_errors=True)
    try:
        if _demo is not None:
            _demo.close()
    except Exception as err:  # a half-started server: the exit handlers and os._exit still follow
        log.info("closing the server on a stop signal: %s", err)
    atexit._run_exitfuncs()


class CappedLines(logging.Filter):
    """Cuts a log record's message to LOG_LINE characters: a 2 MB request must not write a 2 MB log line."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if len(text) > LOG_LINE:
            record.msg, record.args = f"{text[:LOG_LINE]}… ({len(text) - LOG_LINE} more characters)", None
        return True


def cap_log_lines() -> None:
    """Every handler of the root logger (what `logging.basicConfig` set up) caps its lines."""
    for handler in logging.getLogger().handlers:
        handler.addFilter(CappedLines())


def serve_pages_on_one_thread() -> None:
    """Page work runs on one intra-op thread from here on (new threads inherit it); heavy jobs take every core on
    a fresh thread of their own, so only one OpenMP team is ever live (sua_demo/engine/threads.py). UMAP's numba
    kernels use OpenMP too: a team left by the embedding map cut Optimise from 15 to 6.4 steps/s."""
    import os

    os.environ.setdefault("NUMBA_NUM_THREADS", "1")  # read when numba is imported, which has not happened yet
    import torch

    from sua_demo.engine.threads import SERVING_THREADS

    torch.set_num_threads(SERVING_THREADS)


def warm_up(state: Any, person: str | None, photo: int) -> None:
    """Before the server serves: the default model, its controls, its random noise and its embedding map, so the
    first result and the first click after it find everything loaded and compiled. UMAP's numba compile alone takes
    about 12 s a process; done in the background after the first verdict, it made the first click wait 15-25 s
    (issue 42); done beside a first visitor's answers, it doubled their wait. The server starts that much later.
    `person` and `photo`: the example every page opens on (`ui.defaults`), whose story and verdict are kept."""
    from sua_demo.engine.look import look
    from sua_demo.engine.model_cache import DEFAULT_MODEL
    from sua_demo.engine.request import Request

    t0 = time.monotonic()
    eng = state.engine
    sess = eng.session(DEFAULT_MODEL)
    eng.controls(sess)
    if sess.shipped_noise is not None:
        eng.random_noise(sess, sess.shipped_noise.eps)
        for _ in look(eng, Request(model=DEFAULT_MODEL, person=person, photo=photo)):  # kept (engine/memo)
            pass
    log.info("warm-up done in %.1f s: the default model, its controls, its first example and its map",
             time.monotonic() - t0)  # fmt: skip


_asked = [0.0]  # when a caller last asked the server for something (ClosedRoutes sees every request)
QUIET_S = 5.0  # the filler waits this long after the last request: a visitor's clicks come in bursts


def fill_when_idle(state: Any) -> threading.Thread:
    """The default model's verdict for every bench person (its shipped δ and controls), one person at a time while
    the server has nothing else to do: thirty visitors asking for thirty different people at once waited up to 15 s
    for verdicts computed two at a time; a class that comes after the first minutes finds them computed
    (engine/memo). Any request, page answer or heavy job pauses it until the server has been quiet for QUIET_S.
    It works only on a core that other processes leave free, at the process's priority: at the lowest (nice 19) it
    was kept off the cores by other work while it held the GIL, and the whole server waited on it (beside two busy
    loops, SIGTERM mid *Your face* took over 10 s, twice in two tries; at the process's priority, under 2 s, twice);
    and at the process's priority with no such check, it took the cores of whatever else ran (a full test run
    took 18 minutes, against 14 and 15 before, one run each)."""
    from sua_demo.engine.model_cache import DEFAULT_MODEL
    from sua_demo.engine.threads import CoreMeter, idle, serving

    def fill() -> None:
        eng = state.engine
        sess = eng.session(DEFAULT_MODEL)
        controls = eng.controls(sess)
        meter = CoreMeter()
        try:
            for person in eng.bench.people:
                while not idle() or time.monotonic() - _asked[0] < QUIET_S or meter.cores - meter.others() < 0.75:
                    time.sleep(0.5)
                with serving():  # a heavy job that starts meanwhile leaves it its core
                    eng.person_verdict(sess, person.id, sess.shipped_noise, *controls)
        except Exception as err:  # a verdict asked later is computed then; the server goes on either way
            log.warning("filling the verdicts stopped: %s", err)
            return
        log.info("every person's verdict on %s is ready", DEFAULT_MODEL)

    filler = threading.Thread(target=fill, daemon=True, name="sua-fill")
    if state.engine.session(DEFAULT_MODEL).shipped_noise is not None:
        filler.start()
    return filler
