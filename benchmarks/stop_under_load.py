"""How long `python app.py` takes to stop on SIGTERM after use and in the middle of work: the promise is 2 s at
any point (docs/app.md). The server is used as a busy afternoon would use it: many uploads kept in Gradio's
cache, answers, the downloads they write, then an optimisation of 300 steps under way when the signal comes.

    .venv/bin/python benchmarks/stop_under_load.py [--uploads 300] [--answers 20]

Prints the seconds from the signal to the exit, the exit code, and whether the scratch folder is gone.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import httpx
from gradio_client import Client

from sua_demo.core.machine import describe

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_up(url: str, proc: subprocess.Popen, limit_s: float = 300) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the app exited before it answered")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("the app did not answer in time")


def use(url: str, uploads: int, answers: int) -> None:
    """Uploads kept in the cache (each a 200 KB file), answers (each writes its CSV and JSON downloads)."""
    for i in range(uploads):
        httpx.post(url + "gradio_api/upload", files={"files": (f"noise_{i}.bin", os.urandom(200_000))}, timeout=30)
    client = Client(url, verbose=False)
    for i in range(answers):
        client.predict("idk", str(1 + i % 100), i % 7, api_name="/answer")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--uploads", type=int, default=300)
    ap.add_argument("--answers", type=int, default=20)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        port = free_port()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TMPDIR": str(tmp), "GRADIO_TEMP_DIR": str(tmp / "g")}
        env.pop("PORT", None)
        with (tmp / "server.log").open("w") as log:
            proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=ROOT, env=env, stdout=log,
                                    stderr=subprocess.STDOUT)  # fmt: skip
        url = f"http://127.0.0.1:{port}/"
        try:
            t0 = time.monotonic()
            wait_up(url, proc)
            use(url, args.uploads, args.answers)
            used = time.monotonic() - t0
            client = Client(url, verbose=False)
            client.submit("idk", 16, 300, "gaussian", 100, "", api_name="/optimise")
            threading.Event().wait(8)  # the run is under way
            cached = sum(1 for _ in (tmp / "g").rglob("*") if _.is_file())
            sent = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=30)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                proc.kill()
        left = list(tmp.glob("sua_lab_*"))
        print(f"stop under load on {describe()}: {used:.0f} s of use ({args.uploads} uploads, {args.answers} "
              f"answers, {cached} files in Gradio's cache), an optimisation under way; SIGTERM -> exit {code} in "
              f"{took:.2f} s; scratch {'left behind' if left else 'removed'}")  # fmt: skip


if __name__ == "__main__":
    main()
