"""No function in sua_demo/, app.py or benchmarks/ runs over 60 lines (from its `def` to the end of its body): a long
core gets split into parts whose names say what they do (issue 27)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "sua_demo"
LIMIT = 60


def long_functions(root: Path = PACKAGE, limit: int = LIMIT) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = node.end_lineno - node.lineno + 1
                if length > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_in_the_library_the_app_or_the_benchmarks_is_over_60_lines():
    found = [f for root in (PACKAGE, ROOT / "app.py", ROOT / "benchmarks") for f in long_functions(root)]
    assert not found, found


def test_the_count_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "m.py").write_text(f"def long():\n{body}\n\n\ndef short():\n    return 1\n")
    assert long_functions(tmp_path) == [f"{tmp_path.name}/m.py:1 long ({LIMIT + 1} lines)"]
