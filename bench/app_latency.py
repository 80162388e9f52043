"""How long a person waits in the app: start to ready, one "apply noise and answer", one UMAP refresh.

Launches `python app.py` as a user would (embedded default, CPU), then drives it with gradio_client.

    .venv/bin/python bench/app_latency.py [--port 7870]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


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


def timed(fn, *args, **kwargs) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=7870)
    args = ap.parse_args()
    from gradio_client import Client

    url = f"http://127.0.0.1:{args.port}/"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_SERVER_PORT": str(args.port)}
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    try:
        wait_until_up(url, proc)
        up = time.perf_counter() - t0
        client = Client(url, verbose=False)
        base = {"model": "idk", "custom": "", "person": "2", "photo": 5, "upload": None, "noise_source": "shipped"}
        answer = {**base, "question": "", "noise_file": None, "denoiser": "gaussian"}
        umap_args = {**base, "noise_file": None, "denoiser": "gaussian"}
        first_answer = timed(client.predict, **answer, api_name="/answer")
        ready = time.perf_counter() - t0
        answers = [timed(client.predict, **{**answer, "person": str(p)}, api_name="/answer") for p in (14, 51, 72)]
        first_map = timed(client.predict, **umap_args, api_name="/embedding_map")
        maps = [timed(client.predict, **{**umap_args, "person": str(p)}, api_name="/embedding_map") for p in (14, 51)]
        refit = timed(client.predict, **{**umap_args, "denoiser": "median"}, api_name="/embedding_map")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"app latency on {os.cpu_count()} CPU cores (embedded default, IDK model)")
    print(f"  start -> server up                        {up:6.1f} s")
    print(f"  start -> first answer back (ready)        {ready:6.1f} s  (first round trip {first_answer:.2f} s)")
    print(f"  apply noise and answer, round trip        {sum(answers) / len(answers):6.2f} s  (mean of 3)")
    print(f"  UMAP refresh, ~200 points + your image    {sum(maps) / len(maps):6.2f} s  (cached map, mean of 2)")
    print(f"  UMAP first map of this process            {first_map:6.2f} s  (after the warm-up thread)")
    print(f"  UMAP refit for a new noise/denoiser       {refit:6.2f} s")


if __name__ == "__main__":
    main()
