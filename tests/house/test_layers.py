"""The house's layers only point down: the import-linter contract in pyproject.toml holds, and it can fail.

`lint-imports` runs in a child process from the folder it checks, so the second test can point it at a copy of
the package with one upward import added (inside a function: import-linter sees those too).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """The contract of root/pyproject.toml on root/sua_demo (the child imports the package from `root`)."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"], cwd=root, capture_output=True, text=True, timeout=60
    )


def test_every_layer_only_imports_the_layers_below_it():
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "4 kept, 0 broken" in run.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    errors = copy_of_the_package(tmp_path) / "sua_demo" / "core" / "errors.py"
    errors.write_text(
        errors.read_text() + "\n\ndef _upward() -> None:\n    import sua_demo.ui.attack.views  # noqa: F401\n"
    )
    run = lint_imports(tmp_path)
    assert run.returncode != 0
    assert "BROKEN" in run.stdout and "sua_demo.core.errors -> sua_demo.ui.attack.views" in run.stdout, run.stdout


def copy_of_the_package(tmp_path: Path) -> Path:
    """The package, its contracts and the allow-list contract type, copied where a test may break them."""
    shutil.copytree(ROOT / "sua_demo", tmp_path / "sua_demo", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "import_contracts.py"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_the_page_importing_analysis_breaks_the_allow_list(tmp_path):
    """ui may import the engine, the errors and the shipped list only: a direct import of analysis (the layers
    allow it, analysis is below ui) is what the allow-list refuses, and so is any package it does not name."""
    root = copy_of_the_package(tmp_path)
    page = root / "sua_demo" / "ui" / "attack" / "views.py"
    page.write_text(
        page.read_text() + "\n\ndef _around() -> None:\n    import sua_demo.analysis.paired  # noqa: F401\n"
    )
    run = lint_imports(root)
    assert run.returncode != 0
    assert "the page reaches the library through the engine only BROKEN" in run.stdout, run.stdout
    assert "sua_demo.ui.attack.views -> sua_demo.analysis.paired" in run.stdout, run.stdout
    assert "layers only point down KEPT" in run.stdout, run.stdout  # the layers alone would let it through


def test_the_allow_list_refuses_a_leaf_it_does_not_name(tmp_path):
    root = copy_of_the_package(tmp_path)
    page = root / "sua_demo" / "ui" / "attack" / "views.py"
    page.write_text(page.read_text() + "\n\ndef _around() -> None:\n    import sua_demo.core.io  # noqa: F401\n")
    run = lint_imports(root)
    assert "sua_demo.ui.attack.views -> sua_demo.core.io" in run.stdout and "1 broken" in run.stdout, run.stdout


def test_an_uploads_way_to_the_answers_table_is_at_most_12_calls(tmp_path):
    """Issue 40: the room-to-room calls (benchmarks/upload_path.py's count) from the page's handler to the answers
    table; the page enters the engine API for the work, and nothing climbs back from below."""
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from upload_path import hands

    from sua_demo.engine.request import Request
    from sua_demo.ui.attack import handlers
    from sua_demo.ui.shared import state

    photo = tmp_path / "face.png"
    state().engine.photo(1, 0).save(photo)
    chain = hands(lambda: next(iter(handlers.show_page(Request(model="idk", upload=str(photo))))))
    assert chain[-1].endswith("ui/shared/story_table.py:story_html"), chain
    assert 1 + len(chain) <= 12, chain  # and the Attack tab's own call of show_page
    assert not any(c.startswith("engine API") for c in chain), chain  # no bounce back up from the engine
