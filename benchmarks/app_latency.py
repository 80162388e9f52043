"""How long a person waits in the app: start to ready, one "apply noise and answer", one UMAP refresh.

Launches `python app.py` as a user would (embedded default, CPU), then drives it with gradio_client.

    .venv/bin/python benchmarks/app_latency.py [--port 7870] [--world first]

The app's default world is the faithful one (docs/world.md); `--world first` serves the first (64 px).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SETTLE = 20.0  # at least this long after the first page load, and until its background work is done:
QUIET = 0.1  # the server is settled once it uses under this share of one core ...
QUIET_FOR = 3.0  # ... for this many seconds in a row (a fixed wait was too short on a slower CPU)


def wait_until_up(url: str, proc: subprocess.Popen, timeout: float = 300) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"the app exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"{url} did not answer within {timeout:.0f} s")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc; NaN where there is none)."""
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return float("nan")
    fields = stat.read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_quiet(pid: int, least: float, timeout: float = 300) -> float:
    """Sleep `least` seconds, then until the process is idle (its page-load work done); the seconds waited."""
    t0 = time.perf_counter()
    time.sleep(least)
    quiet_since, last, then = time.perf_counter(), cpu_seconds(pid), time.perf_counter()
    if math.isnan(last):
        return least  # no /proc here: the fixed wait is all there is
    while time.perf_counter() - t0 < timeout:
        time.sleep(0.5)
        now, used = time.perf_counter(), cpu_seconds(pid)
        if (used - last) / (now - then) > QUIET:
            quiet_since = now
        elif now - quiet_since >= QUIET_FOR:
            break
        last, then = used, now
    else:
        print(f"  (the server was still busy after {timeout:.0f} s; the waits below share its cores)")
    return time.perf_counter() - t0


def timed(fn, *args, **kwargs) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def first_example_seconds(url: str, timeout: float = 120) -> dict[str, float]:
    """A browser's waits (headless chromium): page request -> the first example's verdict on screen, then the
    first click after it, at once (another person's thumbnail in the gallery: a new person's answers and
    verdict), click -> its verdict on screen: the click start-up must have warmed (issue 42: <= 3 s)."""
    import shutil

    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        return {"first_example": float("nan"), "first_click": float("nan")}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        t0 = time.perf_counter()
        page.goto(url)
        headline = page.locator("#verdict .headline")
        headline.filter(has_text="δ brings back").wait_for(timeout=timeout * 1000)
        first = time.perf_counter() - t0
        before = headline.inner_text()
        t1 = time.perf_counter()
        page.locator("#people button.thumbnail-item").nth(2).click()
        changed = """(before) => { const h = document.querySelector('#verdict .headline');
          return h && h.innerText.includes(' answers across ') && h.innerText !== before; }"""
        page.wait_for_function(changed, arg=before, timeout=timeout * 1000)
        click = time.perf_counter() - t1
        browser.close()
    return {"first_example": first, "first_click": click}


def app_default_steps(url: str) -> int:
    """The steps the page's Optimise starts at, as the app sized them on its own start (read from its config:
    sizing it again here would time a step in this process, under other threads)."""
    import json

    with urllib.request.urlopen(url + "config", timeout=10) as r:
        config = json.load(r)
    (value,) = [c["props"]["value"] for c in config["components"] if c.get("props", {}).get("elem_id") == "opt-steps"]
    return int(value)


def up_front_seconds(url: str) -> float:
    """The seconds the page's Optimise status promises before a run (its start-up figure)."""
    import json
    import re

    with urllib.request.urlopen(url + "config", timeout=10) as r:
        config = json.load(r)
    (value,) = [c["props"]["value"] for c in config["components"] if c.get("props", {}).get("elem_id") == "opt-status"]
    return float(re.match(r"about (\d+) s", value).group(1))


def watch(job: Any, click: float, status: int = 1) -> list[tuple[float, str]]:
    """(seconds since the click, status line) of every streamed update of a job, as they arrive."""
    seen, timeline = 0, []
    while not job.done():
        outputs = job.outputs()
        for out in outputs[seen:]:
            timeline.append((time.perf_counter() - click, str(out[status])))
        seen = len(outputs)
        time.sleep(0.05)
    return timeline


def estimate_error(timeline: list[tuple[float, str]], total: float) -> str:
    """How far the live 'about N s left' put the end from where it came: the worst and the median error of
    (elapsed + N) against the actual total, over every estimate shown."""
    import re

    errors = [
        (t + float(m.group(1))) / total - 1 for t, text in timeline if (m := re.search(r"about (\d+) s left", text))
    ]
    if not errors:
        return "no live estimate shown"
    worst = max(errors, key=abs)
    return (
        f"{len(errors)} estimates, first at {next(t for t, x in timeline if 's left' in x):.1f} s: median "
        f"{sorted(errors)[len(errors) // 2]:+.0%}, worst {worst:+.0%} of the actual time"
    )


def cli_steps_per_second(steps: int, world: str) -> float:
    """The library's own loop on the same model, batch and settings as the app's Optimise, in this process."""
    from sua_demo.core.config import shipped_world
    from sua_demo.engine import Engine

    eng = Engine(shipped_world(world))
    sess = eng.session("idk")
    eng.optimise(sess, steps=2)  # warm-up
    t0 = time.perf_counter()
    eng.optimise(sess, steps=steps)
    return steps / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=7870)
    ap.add_argument("--world", choices=["first", "faithful"], default="faithful", help="the world to serve")
    args = ap.parse_args()
    from sua_demo.core.config import WORLD_ENV, shipped_world
    from sua_demo.dataset import build_bench

    # forget people, the same four on the first world as before this option: #5, #14, #51, #72
    people = [str(build_bench(shipped_world(args.world).bench).forget_ids[i]) for i in (1, 3, 8, 11)]
    url = f"http://127.0.0.1:{args.port}/"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_SERVER_PORT": str(args.port), WORLD_ENV: args.world}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    try:
        wait_until_up(url, proc)
        m = {"up": time.perf_counter() - t0, **first_example_seconds(url)}
        m |= page_waits(url, proc, people)
        m |= heavy_jobs(url, proc, people[2])
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    report(m, args.world)


def page_waits(url: str, proc: subprocess.Popen, people: list[str]) -> dict:
    """A visitor's waits once the page has settled: answers, verdicts, maps (the first person warms them up)."""
    from gradio_client import Client

    client = Client(url, verbose=False)
    base = {"model": "idk", "person": people[0], "photo": 5, "upload": None, "noise_source": "shipped",
            "noise_file": None}  # fmt: skip
    answer = {**base, "question": "", "denoiser": "gaussian", "vanilla": "", "retrain": ""}
    verdict = {**base, "vanilla": "", "retrain": ""}
    # A first verdict lets the warm-up fit its map (the browser's did, unless there is no chromium); then
    # wait for that and the page's other background work: the waits below are a cached app's.
    client.predict(**verdict, api_name="/verdict")
    m = {"settled": wait_until_quiet(proc.pid, SETTLE)}
    umap_args = {**base, "denoiser": "gaussian"}
    timed(client.predict, **answer, api_name="/answer")
    others = people[1:]
    m["answers"] = [timed(client.predict, **{**answer, "person": p}, api_name="/answer") for p in others]
    bare = Client(url, verbose=False, download_files=False)  # the server's share: no image downloads
    m["served"] = [timed(bare.predict, **{**answer, "person": p}, api_name="/answer") for p in others]
    m["verdicts"] = [timed(client.predict, **{**verdict, "person": p}, api_name="/verdict") for p in others]
    m["maps"] = [timed(client.predict, **{**umap_args, "person": p}, api_name="/embedding_map") for p in others[:2]]
    m["refit"] = timed(client.predict, **{**umap_args, "denoiser": "median"}, api_name="/embedding_map")
    return m


def heavy_jobs(url: str, proc: subprocess.Popen, person: str) -> dict:
    """Optimise at the app's own default steps, then a live audit: each one's estimates against its time."""
    from gradio_client import Client

    client = Client(url, verbose=False)
    steps = app_default_steps(url)
    server_cpu, client_cpu = cpu_seconds(proc.pid), time.process_time()
    upfront = up_front_seconds(url)
    job = client.submit("idk", 16, steps, "gaussian", 100.0, api_name="/optimise")
    click = time.perf_counter()
    timeline = watch(job, click)
    done = time.perf_counter() - click
    m = {"steps": steps, "upfront": upfront, "timeline": timeline, "done": done, "final": job.outputs()[-1][1]}
    m |= {"server_cpu": cpu_seconds(proc.pid) - server_cpu, "client_cpu": time.process_time() - client_cpu}
    audit_job = client.submit("idk", person, api_name="/audit")
    audit_click = time.perf_counter()
    m["audit_timeline"] = watch(audit_job, audit_click, status=0)
    m["audit_done"] = time.perf_counter() - audit_click
    return m


def report(m: dict, world: str) -> None:
    from sua_demo.core.machine import describe
    from sua_demo.engine.threads import usable_cores

    steps, done, answers = m["steps"], m["done"], m["answers"]
    first_point = m["timeline"][0][0] if m["timeline"] else None  # the first streamed update carries the first loss
    app_sps, cli_sps = steps / done, cli_steps_per_second(steps, world)
    print(f"app latency ({world} world, IDK model); {describe()}")
    print(f"  start -> server up                           {m['up']:6.1f} s")
    print(f"  page load -> first example's verdict shown   {m['first_example']:6.1f} s  (headless chromium)")
    print(f"  the first click after it (a gallery thumbnail) -> its verdict {m['first_click']:6.1f} s")
    print(f"  page load's background work (settle wait)    {m['settled']:6.1f} s  (waited until the server idled)")
    mean = {k: sum(m[k]) / len(m[k]) for k in ("answers", "served", "verdicts", "maps")}
    print(
        f"  apply δ and answer, five-column story        {mean['answers']:6.2f} s  (mean of 3, max {max(answers):.2f})"
    )
    print(f"    the same without the client's image downloads {mean['served']:6.2f} s  (mean of 3)")
    print(f"  verdict over the person's 7 photos           {mean['verdicts']:6.2f} s  (mean of 3)")
    print(f"  embedding map, ~200 points + your image      {mean['maps']:6.2f} s  (cached map, mean of 2)")
    print(f"  embedding map refit for a new denoiser       {m['refit']:6.2f} s")
    print(f"  Optimise click -> first loss point           {first_point or float('nan'):6.2f} s")
    print(f"  Optimise, default {steps} steps (as the app sized them), click -> done {done:6.1f} s  ({m['final']})")
    upfront, live = m["upfront"], estimate_error(m["timeline"], done)
    print(f"    up-front estimate {upfront:.0f} s ({upfront / done - 1:+.0%}); live: {live}")
    print(f"  live audit of one person (quick), click -> done {m['audit_done']:6.1f} s")
    print(f"    live: {estimate_error(m['audit_timeline'], m['audit_done'])}")
    print(f"  steps/s: app {app_sps:.2f}, library loop in one process {cli_sps:.2f} ({app_sps / cli_sps:.0%})")
    cores = usable_cores()
    print(
        f"  CPU during that run: server {m['server_cpu']:.1f} s, this client {m['client_cpu']:.1f} s "
        f"(of {cores * done:.0f} core-seconds on {cores} cores; a browser elsewhere would not share them)"
    )


if __name__ == "__main__":
    main()
