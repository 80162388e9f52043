"""A tab is a folder of `sua_demo/ui` and one line in app.py: a throwaway tab, added that way to a copy of the app,
shows on the page, after the shipped tabs, with what it laid out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
THROWAWAY = '''"""A throwaway tab: laid out by its folder alone."""

import gradio as gr

TITLE = "Throwaway"


def build(page):
    return gr.Markdown("a throwaway tab's own words", elem_id="throwaway")
'''
LIST_TABS = """
import json, app
demo = app.build_app()
tabs = [b["props"]["label"] for b in demo.config["components"] if b["type"] == "tabitem"]
words = [b["props"].get("value") for b in demo.config["components"] if b["props"].get("elem_id") == "throwaway"]
print(json.dumps({"tabs": tabs, "words": words}))
"""


@pytest.mark.slow
def test_a_new_tab_is_a_folder_and_one_line_of_app_py(tmp_path):
    shutil.copytree(ROOT / "sua_demo", tmp_path / "sua_demo", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "checkpoints").symlink_to(ROOT / "checkpoints")
    (tmp_path / "sua_demo" / "ui" / "throwaway").mkdir()
    (tmp_path / "sua_demo" / "ui" / "throwaway" / "__init__.py").write_text(THROWAWAY)
    lines = (ROOT / "app.py").read_text().split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith("TABS = ("))
    changed = lines.copy()
    changed[at] = changed[at].replace('"about")', '"about", "throwaway")')
    assert sum(a != b for a, b in zip(lines, changed, strict=True)) == 1  # one line of app.py, nothing else
    (tmp_path / "app.py").write_text("\n".join(changed))
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-c", LIST_TABS], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout.strip().splitlines()[-1])
    assert found["tabs"] == ["Attack", "Batch", "Audit", "Your face", "About", "Throwaway"], found
    assert found["words"] == ["a throwaway tab's own words"], found
