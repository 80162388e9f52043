import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# No SUA_WORLD: the in-process app, the engine and the CLI's subprocesses serve the default world, the faithful one,
# as users meet it; the first world is one name away (`first_url`, and SUA_WORLD=first where a test asks for it).
os.environ.pop("SUA_WORLD", None)
if os.environ.get("PYTEST_XDIST_WORKER"):  # `make test` runs two workers on the two cores: one thread each, and
    os.environ["OMP_NUM_THREADS"] = "1"  # the apps and CLIs they start inherit it (no oversubscribed spinning)

# a served app's tests share one xdist worker
SERVED = {"app_url": "default-app", "faithful_url": "faithful-app", "first_url": "first-app"}


def pytest_collection_modifyitems(config, items):
    """Under xdist (`make test`), every test of one served app goes to one worker, so each app starts once; the
    parametrised `world` fixture of test_browser_honest picks its app by name."""
    for item in items:
        world = "world" in item.fixturenames and getattr(item, "callspec", None) and item.callspec.params.get("world")
        wanted = [f for f in SERVED if f in item.fixturenames]
        wanted += [f"{world}_url"] if world in ("first", "faithful") else []
        if wanted:
            item.add_marker(pytest.mark.xdist_group(SERVED[wanted[0]]))


@pytest.fixture(scope="session")
def micro_bench():
    """A few people and photos: enough for every code path, small enough for seconds."""
    from sua_demo.core.config import BenchConfig
    from sua_demo.dataset import build_bench

    cfg = BenchConfig(n_people=8, photos_per_person=3, train_photos=2, forget_fraction=0.25, seed=1)
    return build_bench(cfg), cfg


@pytest.fixture(scope="session")
def micro_model_cfg():
    from sua_demo.core.config import TinyModelConfig

    return TinyModelConfig(
        vision_hidden=32,
        vision_layers=1,
        vision_heads=2,
        text_hidden=64,
        text_layers=2,
        text_heads=2,
        text_intermediate=128,
    )


@pytest.fixture(scope="session")
def micro_adapter(micro_bench, micro_model_cfg):
    from sua_demo.training.finetune import build_tiny

    return build_tiny(micro_bench[0], micro_model_cfg)


@pytest.fixture(scope="session")
def app_url():
    """The real app, launched on localhost for the whole session (the same build `python app.py` serves)."""
    import socket

    import app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from sua_demo.ui.serving.launch import launch_kwargs, queued
    from sua_demo.ui.shared import state

    kwargs = {**launch_kwargs(state().scratch.root), "server_name": "127.0.0.1", "server_port": port}
    demo = queued(app.build_app())
    demo.launch(**kwargs, prevent_thread_lock=True, quiet=True)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


@pytest.fixture(scope="session")
def faithful_url(tmp_path_factory):
    """`python app.py` with no SUA_WORLD, as a user starts it: the default world, the faithful one, served by its own
    process (signals, its own folders), beside the in-process `app_url`."""
    yield from served_app(tmp_path_factory, None)


@pytest.fixture(scope="session")
def first_url(tmp_path_factory):
    """`SUA_WORLD=first python app.py`: the first world, one name away (the tests that look at both worlds)."""
    yield from served_app(tmp_path_factory, "first")


def served_app(tmp_path_factory, world):  # type: ignore[no-untyped-def]
    """A `python app.py` process serving `world` (None: the default one) until the session ends; its URL."""
    import subprocess
    import sys
    import time
    import urllib.request
    from pathlib import Path

    from sua_demo.core.config import WORLD_ENV

    port = free_port()
    folder = tmp_path_factory.mktemp(f"{world or 'faithful'}_app")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TMPDIR": str(folder)}
    env.pop("PORT", None)
    env.pop(WORLD_ENV, None)
    if world is not None:
        env[WORLD_ENV] = world
    log = (folder / "server.log").open("w")
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.Popen([sys.executable, "app.py", "--port", str(port)], cwd=root, env=env, stdout=log,
                            stderr=subprocess.STDOUT)  # fmt: skip
    url, deadline = f"http://127.0.0.1:{port}/", time.monotonic() + 300
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, (folder / "server.log").read_text()[-3000:]
            time.sleep(0.5)
    yield url
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def saved_micro(micro_adapter, tmp_path_factory):
    """The micro model saved as a folder, as the CLI and the protocol load models (read-only for every test)."""
    out = tmp_path_factory.mktemp("micro") / "m"
    micro_adapter.model.save_pretrained(out)
    micro_adapter.processor.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def engine():
    """The app's facade over the shipped models (tests of the engine and of the UI layer)."""
    from sua_demo.engine import Engine

    return Engine()


@pytest.fixture(scope="module")
def idk(engine):
    return engine.session("idk")
