"""A method in one recipe: each shipped unlearned model's build settings, faithful rule, gates and attack splits are
declared once, beside its method (`unlearning/<method>.py`, `unlearning/recipe.py`), and everything else reads them."""

from __future__ import annotations

import re
from pathlib import Path

from sua_demo.core import shipped
from sua_demo.unlearning import METHODS
from sua_demo.unlearning.recipe import RECIPES, gates, shipped_recipes

PACKAGE = Path(__file__).resolve().parents[2] / "sua_demo"


def test_every_shipped_unlearned_model_has_one_recipe_with_a_registered_method_and_gates():
    assert set(RECIPES) == {*shipped.UNLEARNED, *shipped.ROBUST}
    for r in shipped_recipes():
        assert r.unlearn is not None and r.unlearn.method in METHODS.names(), r.name
        assert r.gates and {g.model for g in r.gates} == {r.name}, r.name
        assert r.table in ("world", "lora", "robust") and r.noise_splits


def test_the_gate_tables_are_the_recipes_gates():
    assert len(gates("world")) == 17  # docs/world.md's table: the controls', IDK's 5 and GradDiff's 3
    assert {g.model for g in gates("lora")} == {r.name for r in shipped_recipes() if r.table == "lora"}
    assert {g.model for g in gates("robust")} == set(shipped.ROBUST)


def test_a_non_demo_models_name_is_spelled_in_the_shipped_list_and_its_methods_file_only():
    """Where a new shipped method goes (docs/architecture.md): its file under unlearning/ (method and recipe), its
    import line in unlearning/__init__.py, and its name and label in core/shipped.py; no other module names it."""
    sources = {p: p.read_text() for p in PACKAGE.rglob("*.py")}
    for name in (n for n in (*shipped.UNLEARNED, *shipped.ROBUST) if n not in shipped.DEMO):
        found = {str(p.relative_to(PACKAGE)) for p, text in sources.items() if re.search(rf"[\"']{name}[\"']", text)}
        method = RECIPES[name].unlearn.method
        home = METHODS.get(method).__module__.rsplit(".", 1)[1]
        assert "core/shipped.py" in found and found <= {"core/shipped.py", f"unlearning/{home}.py"}, (name, found)
