"""docs/architecture.md is drawn from the code: every module it names exists, and every top-level module and
package of `sua_demo` (and every module of `sua_demo/ui`) is named in it."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "architecture.md").read_text()
PACKAGE = ROOT / "sua_demo"


def named() -> set[str]:
    """Every `name.py` and `name/` the document writes in code type, as paths it means under sua_demo/."""
    out = set()
    for token in re.findall(r"`([^`\s]+)`", DOC) + re.findall(r"(?<![\w/])([a-z_]+(?:/[a-z_]+)*(?:\.py|/))", DOC):
        token = token.removeprefix("sua_demo/")
        if token.endswith(".py") or token.endswith("/"):
            out.add(token)
    return out


def test_every_module_the_document_names_exists():
    missing = []
    for token in named():
        folders = [p.parent for p in PACKAGE.rglob("__init__.py")]  # a module may be named inside its folder's line
        candidates = [PACKAGE / token, ROOT / token, *(f / token for f in folders)]
        if "<" in token or any(c.exists() for c in candidates):  # <name>: a placeholder
            continue
        missing.append(token)
    assert not missing, f"docs/architecture.md names modules that do not exist: {sorted(missing)}"


def test_every_top_level_module_and_ui_module_is_in_the_document():
    words = named()
    top = [p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py"]
    top += [f"{p.name}/" for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()]
    ui = [str(p.relative_to(PACKAGE / "ui")) for p in (PACKAGE / "ui").rglob("*.py") if p.name != "__init__.py"]
    absent = sorted(m for m in top + ui if m not in words)
    assert not absent, f"docs/architecture.md leaves out: {absent}"


def test_the_documents_layer_table_is_the_import_contracts_order():
    """The layering table reads as the contract that lint-imports checks: the same folders, the same floors, top
    to bottom (a moved package, or a contract changed without its document, fails here)."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (layers,) = [c["layers"] for c in contracts if c.get("containers") == ["sua_demo"]]
    floors = [set(re.split(r"\s*[|:]\s*", layer)) for layer in layers if layer != "__main__"]
    table = re.findall(r"^\| \d+ \| (.+?) \| .+ \|$", DOC, flags=re.M)
    documented = [set(re.findall(r"`(\w+)/`", row)) for row in table]
    assert documented == floors, (documented, floors)
