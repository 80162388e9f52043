"""A class using the served app at once: `python app.py` started as a user starts it (default world), N visitors
open the page together, then each asks for a different person while K of them run Your face and M run Optimise.

    .venv/bin/python benchmarks/classroom.py [--visitors 30] [--face 2] [--optimise 1] [--steps 100] [--busy]
        [--settle 0] [--during 0]

A visitor is what a browser tab sends, without a browser: a fresh session and its heartbeat, the page's load event
and every event the browser chains after it (`trigger_after` in /config, each sent the values the tab holds then,
streamed diffs applied), timed from the page's fetch (its HTML, with the config built for each request, and the
script and style it names) to the message that puts the verdict's headline on the page.
Then every visitor asks the public `/verdict` for a different bench person (gradio_client, a client each,
connected before the class opens the page: a browser never builds one); at the
same moment the Your face visitors click its run as the tab does (4 procedural photos through /gradio_api/upload
and the `face-files` upload event, a name and facts from `face-invent` beforehand; then `face-run`'s unqueued check
and its run) and the Optimise visitors call `/optimise`. A heavy job waits from the click to its first streamed
status that is not "in line" (one waiting for the one heavy slot gets Gradio's queue estimates, or a status that
says it is in line); it runs from then to its end. At the end each session closes as a closed tab's does (its
heartbeat connection goes: Gradio then runs the page's unload), RSS is read again, and the server gets SIGTERM.
Errors: failed requests, events that ended with success false, and the page's message box raised. `--busy`: all
of it beside a Python busy loop pinned to core 0.
"""

from __future__ import annotations

import argparse
import http.client
import io
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
from gradio_client import Client

from sua_demo.core.machine import describe

ROOT = Path(__file__).resolve().parents[1]
HEADLINE = "class='headline'"  # the verdict's headline: the first verdict is on the page
ALERT = "role='alert'"  # the page's message box: a handler's error, shown instead of raised
PHOTO = 5  # a held-out photo; the verdict reads all seven
UNLOAD_WAIT_S = 20.0  # a closed heartbeat unloads at once; gradio_client's leaves at its next line (every 15 s)
BUSY = "import os\nos.sched_setaffinity(0, {0})\nwhile True:\n    pass\n"
Shown = Callable[[dict[int, Any], str], None]  # (component id -> value this message put there, message kind)


@dataclass
class Tally:
    """What the visitors' threads report (appends from threads: the GIL keeps each whole)."""

    pid: int
    first: list[float] = field(default_factory=list)
    later: list[float] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    rss: dict[str, float] = field(default_factory=dict)
    cpu: str = ""

    def job(self, kind: str, click: float, running: float | None, end: float, last: str) -> None:
        """A heavy job's line, and the server's RSS after the first job of its kind."""
        said = " ".join(last.split())[:160]
        ran = (
            f"wait {running - click:.1f} s, run {end - running:.1f} s"
            if running
            else f"ended unrun in {end - click:.1f} s"
        )
        self.jobs.append(f"{kind}: {ran}; last status: {said!r}")
        self.rss.setdefault(f"after the first {kind}", rss_mb(self.pid))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str, proc: subprocess.Popen, log: Path, limit_s: float = 600) -> None:
    """Until the page answers; a server that ends or never answers ends the run with its log's last lines."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
    raise SystemExit(f"python app.py did not answer (exit code {proc.poll()}); its log ends:\n{tail}")


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its children (Linux /proc), in MB."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            todo += [int(c) for t in Path(f"/proc/{p}/task").iterdir() for c in (t / "children").read_text().split()]
        except OSError:  # it ended meanwhile
            continue
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
    return total / 1024


def files_under(folder: Path) -> int:
    return sum(1 for p in folder.rglob("*") if p.is_file())


def spread(values: list[float]) -> str:
    """p50, p95 (nearest rank) and max, in seconds."""
    if not values:
        return "none answered"
    v = sorted(values)
    rank = lambda q: v[max(0, math.ceil(q * len(v)) - 1)]  # noqa: E731
    return f"p50 {rank(0.5):.1f} s, p95 {rank(0.95):.1f} s, max {v[-1]:.1f} s"


def patched(value: Any, edits: list) -> Any:
    """A value after Gradio's streamed diff (`gradio.utils.diff`: replace, append, add, delete at a path)."""
    for op, path, new in edits:
        if not path:
            value = value + new if op == "append" else new
            continue
        parent = value
        for key in path[:-1]:
            parent = parent[key]
        if op == "delete":
            del parent[path[-1]]
        elif op == "add" and isinstance(parent, list):
            parent.insert(path[-1], new)
        else:
            parent[path[-1]] = parent[path[-1]] + new if op == "append" else new
    return value


class Page:
    """One browser tab: its session, what its components hold, its heartbeat; runs an event and the events the
    browser chains after it, as the browser does."""

    def __init__(self, url: str, config: dict, tally: Tally) -> None:
        self.tally, self.session = tally, uuid.uuid4().hex[:11]
        self.values = {c["id"]: c.get("props", {}).get("value") for c in config["components"]}
        self.ids = {c["props"]["elem_id"]: c["id"] for c in config["components"] if c.get("props", {}).get("elem_id")}
        self.deps = config["dependencies"]
        self.http = httpx.Client(base_url=url + "gradio_api/", timeout=900)
        self.root = url
        self.beat = http.client.HTTPConnection("127.0.0.1", httpx.URL(url).port, timeout=30)

    def open(self) -> None:
        """The heartbeat the page keeps open: Gradio unloads the session when it closes."""
        self.beat.request("GET", f"/gradio_api/heartbeat/{self.session}")
        self.beat.getresponse()

    def close(self) -> None:
        self.beat.close()
        self.http.close()

    def event(self, elem_id: str | None, trigger: str) -> dict:
        """The dependency `trigger` of the component `elem_id` starts (None: of the page itself, e.g. its load)."""
        target = self.ids.get(elem_id)
        return next(
            d for d in self.deps if any(t[1] == trigger and (elem_id is None or t[0] == target) for t in d["targets"])
        )

    def trigger(self, dep: dict, seen: Shown | None = None) -> None:
        """Run `dep`, then each dependency chained after it (`.then`, `.success`, `.failure`), as the browser does."""
        ok = self._call(dep, seen)
        for nxt in self.deps:
            skip = nxt.get("trigger_only_on_success") and not ok or nxt.get("trigger_only_on_failure") and ok
            if nxt.get("trigger_after") == dep["id"] and not skip:
                self.trigger(nxt, seen)

    def _call(self, dep: dict, seen: Shown | None) -> bool:
        if not dep["backend_fn"]:
            return True  # a step of the browser's own JavaScript
        name = f"event {dep['id']} ({dep.get('api_name')})"
        body = {"data": [self.values.get(i) for i in dep["inputs"]], "fn_index": dep["id"],
                "session_hash": self.session, "event_data": None, "trigger_id": None}  # fmt: skip
        if not dep["queue"]:  # unqueued: answered in the response
            said = self.http.post("run/predict", json=body)
            if said.status_code != 200:
                self.tally.errors.append(f"{name}: HTTP {said.status_code} {said.text[:200]}")
                return False
            self._show(dep, said.json()["data"], "process_completed", seen)
            return True
        event = self.http.post("queue/join", json=body).raise_for_status().json()["event_id"]
        slots: list | None = None
        with self.http.stream("GET", "queue/data", params={"session_hash": self.session}) as stream:
            for line in stream.iter_lines():
                msg = json.loads(line[5:]) if line.startswith("data:") else {}
                kind = msg.get("msg")
                said = kind in ("process_generating", "process_completed") and msg.get("event_id") == event
                if kind == "unexpected_error" or said and not msg["success"]:
                    self.tally.errors.append(f"{name}: {json.dumps(msg.get('output') or msg.get('message'))[:200]}")
                    return False
                if said:
                    data = msg["output"]["data"]
                    streamed = kind == "process_generating" and slots is not None
                    slots = [patched(s, d) for s, d in zip(slots, data, strict=True)] if streamed else data
                    self._show(dep, slots, kind, seen)
                    if kind == "process_completed":
                        return True
        self.tally.errors.append(f"{name}: its stream ended before it completed")
        return False

    def _show(self, dep: dict, slots: list, kind: str, seen: Shown | None) -> None:
        """Put a message's outputs on the page (an update without a value leaves a component as it is); at the end,
        an error the page shows in its message box counts as one."""
        shown = {}
        for cid, value in zip(dep["outputs"], slots, strict=True):
            if isinstance(value, dict) and value.get("__type__") == "update":
                if "value" not in value:
                    continue
                value = value["value"]
            self.values[cid] = shown[cid] = value
        if seen is not None:
            seen(shown, kind)
        alerts = [v for v in shown.values() if isinstance(v, str) and ALERT in v]
        if kind == "process_completed" and alerts:
            self.tally.errors.append(f"event {dep['id']} said: {alerts[0][:200]}")


def open_page(page: Page, tally: Tally) -> None:
    """The page fetched as a browser fetches it (its HTML, which carries the page's config built for this request,
    and the script and style it names), then its load and the chain after it, timed from the fetch until the
    verdict's headline arrives."""
    t0, verdict, marks = time.monotonic(), page.ids["verdict"], []
    html = page.http.get(page.root).raise_for_status().text
    for asset in sorted(set(re.findall(r'(?:src|href)="\./(assets/[^"]+)"', html))):
        page.http.get(page.root + asset).raise_for_status()
    page.open()

    def seen(shown: dict[int, Any], kind: str) -> None:
        if not marks and HEADLINE in str(shown.get(verdict, "")):
            marks.append(time.monotonic() - t0)

    page.trigger(page.event(None, "load"), seen)
    if marks:
        tally.first.append(marks[0])
    else:
        tally.errors.append("a page's load ended without a verdict")


def prepare_face(page: Page, seed: int) -> None:
    """Four procedural photos uploaded and read into the session, a name and facts invented: ready to click."""
    from sua_demo.core.config import BenchConfig
    from sua_demo.your_face.visitor import procedural_photos

    files = []
    for k, photo in enumerate(procedural_photos(seed, BenchConfig(), 4)):
        buf = io.BytesIO()
        photo.save(buf, format="PNG")
        files.append(("files", (f"me{k}.png", buf.getvalue(), "image/png")))
    paths = page.http.post("upload", files=files).raise_for_status().json()
    file_data = [{"path": p, "meta": {"_type": "gradio.FileData"}, "orig_name": p.rsplit("/", 1)[-1]} for p in paths]
    page.values[page.ids["face-files"]] = file_data
    page.trigger(page.event("face-files", "upload"))
    page.trigger(page.event("face-invent", "click"))


def waiting(status: str) -> bool:
    """A status that says the job waits its turn rather than runs."""
    return status.startswith("In line") or "in line" in status


def run_face(page: Page, tally: Tally) -> None:
    """The `face-run` click (its unqueued check, then the run), the run's status followed as the page shows it."""
    status, click, running, last = page.ids["face-status"], time.monotonic(), None, ""

    def seen(shown: dict[int, Any], kind: str) -> None:
        nonlocal running, last
        if isinstance(shown.get(status), str):
            last = shown[status]
            if running is None and kind == "process_generating" and not waiting(last):
                running = time.monotonic()

    page.trigger(page.event("face-run", "click"), seen)
    tally.job("Your face", click, running, time.monotonic(), last)


def run_optimise(client: Client, model: str, steps: int, tally: Tally) -> None:
    """`/optimise` with the page's own ε, denoiser and stealth weight; its updates watched as they arrive."""
    click, running, last, read = time.monotonic(), None, "", 0
    job = client.submit(model=model, steps=steps, api_name="/optimise")
    while True:
        done = job.done()  # before the read: a job done here has every update in the read
        for out in job.outputs()[read:]:
            read, last = read + 1, str(out[0])
            if running is None and not waiting(last):
                running = time.monotonic()
        if done:
            break
        time.sleep(0.05)
    if job.exception() is not None:
        tally.errors.append(f"/optimise: {str(job.exception())[:200]}")
    tally.job("Optimise", click, running, time.monotonic(), last)


class Class:
    """The room: the served page, the flags, and the two moments every visitor waits for together."""

    def __init__(self, url: str, args: argparse.Namespace, tally: Tally) -> None:
        self.url, self.args, self.tally = url, args, tally
        self.config = httpx.get(url + "config", timeout=60).raise_for_status().json()
        self.opened = threading.Barrier(args.visitors, action=lambda: self.mark("opening"))
        self.asked = threading.Barrier(args.visitors, action=lambda: self.mark("asking"))
        self.marks: list[tuple[str, float, float, float]] = []
        shown = {c.get("props", {}).get("elem_id"): c.get("props", {}).get("value") for c in self.config["components"]}
        self.first = int(shown["person"])  # the page's own person: the visitors ask for the people after
        self.left: list = []  # every page and client, closed at the end as their tabs close

    def mark(self, moment: str) -> None:
        """The CPU seconds the server and this client (the visitors, which a class runs on its own machines) had
        used when every visitor reached `moment`: what the first verdicts cost each side."""
        server = psutil.Process(self.tally.pid).cpu_times()
        mine = psutil.Process().cpu_times()
        self.marks.append((moment, time.monotonic(), server.user + server.system, mine.user + mine.system))
        if len(self.marks) == 2:
            (_, t0, s0, c0), (_, t1, s1, c1) = self.marks
            self.tally.cpu = (
                f"the first verdicts took {t1 - t0:.1f} s: server CPU {s1 - s0:.1f} s, visitors' {c1 - c0:.1f} s"
            )

    def guarded(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A visitor's step: a failure is counted, and its visitor still reaches the moments the others wait for."""
        try:
            return fn(*args, **kwargs)
        except Exception as err:
            self.tally.errors.append(f"{what}: {type(err).__name__}: {str(err)[:200]}")
            return None

    def visitor(self, i: int) -> None:
        """Open the page with everyone, then ask for a person with everyone, with a heavy job beside if chosen."""
        page, a = Page(self.url, self.config, self.tally), self.args
        # the API client connects first: building one costs the server about as much as a page load (its config
        # and API description), which a class's browsers never ask for, so it stays out of the page's timing
        client = self.guarded("client", Client, self.url, verbose=False, download_files=False, analytics_enabled=False)
        self.left += [page, client] if client else [page]
        self.opened.wait()
        self.guarded("page", open_page, page, self.tally)
        if i < a.face:
            self.guarded("Your face photos", prepare_face, page, 700 + i)
        self.asked.wait()
        model, person = page.values[page.ids["model"]], str(1 + (self.first + i) % 100)
        heavy = threading.Thread(target=self.heavy, args=(i, page, client, model))
        heavy.start()
        t0 = time.monotonic()
        if self.guarded(f"/verdict #{person}", lambda: client.predict(model, person, PHOTO, api_name="/verdict")):
            self.tally.later.append(time.monotonic() - t0)
        heavy.join()

    def heavy(self, i: int, page: Page, client: Client, model: str) -> None:
        """Visitor i's heavy job, if it has one: the first `--face` visitors run Your face, the next `--optimise`
        run Optimise."""
        if i < self.args.face:
            self.guarded("Your face", run_face, page, self.tally)
        elif i < self.args.face + self.args.optimise:
            self.guarded("Optimise", run_optimise, client, model, self.args.steps, self.tally)


def heavy_before(url: str, steps: int, tally: Tally) -> threading.Thread | None:
    """With `steps`, an Optimise that a visitor started before the class came, running while the class opens
    the page (it is under way once this returns)."""
    if not steps:
        return None
    from sua_demo.engine.model_cache import DEFAULT_MODEL

    client = Client(url, verbose=False, download_files=False, analytics_enabled=False)
    job = threading.Thread(target=run_optimise, args=(client, DEFAULT_MODEL, steps, tally))
    job.start()
    time.sleep(3.0)  # its probe and first steps: under way when the visitors arrive
    return job


def lesson(url: str, args: argparse.Namespace, tally: Tally) -> list:
    """The visitors, all at once; returns their pages and clients, still open."""
    room = Class(url, args, tally)
    threads = [threading.Thread(target=room.visitor, args=(i,)) for i in range(args.visitors)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return room.left


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--visitors", type=int, default=30)
    ap.add_argument("--face", type=int, default=2, help="visitors who also run Your face")
    ap.add_argument("--optimise", type=int, default=1, help="visitors who also run Optimise")
    ap.add_argument("--steps", type=int, default=100, help="Optimise's steps")
    ap.add_argument("--busy", action="store_true", help="beside a core-bound process on core 0")
    ap.add_argument("--port", type=int, help="the server's port (a free one if not given)")
    ap.add_argument("--settle", type=float, default=0.0, help="seconds between the server up and the class coming")
    ap.add_argument("--during", type=int, default=0, help="an Optimise of this many steps runs as the class comes")
    args = ap.parse_args()
    if args.face + args.optimise > args.visitors:
        ap.error("--face and --optimise are visitors: together at most --visitors")
    print(describe(), flush=True)
    busy = subprocess.Popen([sys.executable, "-c", BUSY]) if args.busy else None
    with tempfile.TemporaryDirectory(prefix="classroom_") as scratch:
        tmp = Path(scratch) / "server"  # the server's TMPDIR: Gradio's uploads and cache, the app's scratch
        tmp.mkdir()
        port = args.port or free_port()
        url = f"http://127.0.0.1:{port}/"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TMPDIR": str(tmp)}
        for name in ("SUA_WORLD", "PORT", "GRADIO_TEMP_DIR"):  # the default world, --port, Gradio's cache in TMPDIR
            env.pop(name, None)
        log = Path(scratch) / "server.log"
        with log.open("w") as out:
            proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=env, stdout=out,
                                    stderr=subprocess.STDOUT)  # fmt: skip
        tally = Tally(proc.pid)
        try:
            t0 = time.monotonic()
            wait_up(url, proc, log)
            print(f"python app.py up in {time.monotonic() - t0:.0f} s; {args.visitors} visitors, {args.face} "
                  f"Your face, {args.optimise} Optimise of {args.steps} steps"
                  f"{', beside a busy loop on core 0' if busy else ''}"
                  f"{f', coming {args.settle:.0f} s after it was up' if args.settle else ''}"
                  f"{f', an Optimise of {args.during} steps under way as they come' if args.during else ''}",
                  flush=True)  # fmt: skip
            time.sleep(args.settle)  # a class that comes a while after the teacher started the server
            tally.rss["before visitors"] = rss_mb(proc.pid)
            running = heavy_before(url, args.during, tally)
            t0 = time.monotonic()
            left = lesson(url, args, tally)
            if running is not None:
                running.join()
            lasted = time.monotonic() - t0
            tally.rss["after the class"] = rss_mb(proc.pid)
            for tab in left:
                tab.close()
            time.sleep(UNLOAD_WAIT_S)
            tally.rss[f"{UNLOAD_WAIT_S:.0f} s after every session closed"] = rss_mb(proc.pid)
            files = files_under(tmp)
            sent = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=60)
            took = time.monotonic() - sent
        finally:
            for p in (proc, busy):
                if p is not None and p.poll() is None:
                    p.kill()
        report(args, tally, lasted, files, files_under(tmp), code, took)


def report(
    args: argparse.Namespace, tally: Tally, lasted: float, files: int, after: int, code: int, took: float
) -> None:
    print(f"class over in {lasted:.0f} s")
    print(f"first verdict ({len(tally.first)} of {args.visitors} visitors): {spread(tally.first)}")
    print(f"  ({tally.cpu}, on the same cores)")
    print(f"later answers ({len(tally.later)} /verdict, different people): {spread(tally.later)}")
    for line in tally.jobs:
        print(line)
    print("RSS: " + "; ".join(f"{label} {mb:.0f} MB" for label, mb in tally.rss.items()))
    print(f"files under the server's TMPDIR: {files} before SIGTERM, {after} after")
    print(f"SIGTERM: exit {code} in {took:.2f} s")
    print(f"errors: {len(tally.errors)}" + "".join(f"\n  {e}" for e in tally.errors[:5]))


if __name__ == "__main__":
    main()
