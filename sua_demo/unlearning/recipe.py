"""A shipped model in one place: how it is built (the first world's recipe), the rule the faithful world builds it
under, the gates it must pass, and how many attack splits its noise gets. Each unlearning method's file declares
the models it ships (`ships(Recipe(...))`); the builds (`worlds/`), the gate tables and the tests read them here.
A new shipped method is its file (method and recipe), its import line in `unlearning/__init__.py`, and its name
and label in `core/shipped.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sua_demo.core import shipped
from sua_demo.core.config import UnlearnConfig
from sua_demo.core.errors import UnknownNameError
from sua_demo.eval.gates import CONTROL_GATES, Gate, each_photo

LORA_SPLITS = (0, 1, 2)  # the splits the audit and the report card average over (sua audit --splits 3)


@dataclass(frozen=True)
class Recipe:
    """One shipped model. `unlearn` None: a fine-tune (the vanilla model, or the retrain control)."""

    name: str
    unlearn: UnlearnConfig | None = None
    retain_only: bool = False
    needs: tuple[str, ...] = field(default=("vanilla",))
    # the faithful world's stopping rule over `unlearn` (docs/world.md); None: built as `unlearn` says, or, for a
    # LoRA method, only by `sua build-faithful --validation` under `validation`
    faithful: dict[str, Any] | None = None
    validation: dict[str, Any] | None = None
    gates: tuple[Gate, ...] = ()  # read from its eval.json
    table: str = "world"  # which gate table it joins: the world's 17 ("world"), "lora", or "robust"
    noise_splits: tuple[int, ...] = LORA_SPLITS  # the splits its shipped noise is attacked on

    @property
    def when_named(self) -> bool:
        """Built and attacked only when named: robust unlearning (docs/robust.md), whose gates have their own table."""
        return self.table == "robust"


RECIPES: dict[str, Recipe] = {}


def ships(recipe: Recipe) -> Recipe:
    """Register a shipped model's recipe (each method's file calls this once per model it ships)."""
    if recipe.name in RECIPES:
        raise ValueError(f"recipe {recipe.name!r} registered twice")
    RECIPES[recipe.name] = recipe
    return recipe


def recipe(name: str) -> Recipe:
    if name not in RECIPES:
        raise UnknownNameError(f"no recipe for {name!r}; choose from {sorted(RECIPES)}")
    return RECIPES[name]


def ascent_gates(name: str) -> tuple[Gate, ...]:
    """GradDiff's bounds, for a method that forgets by ascent with no refusal target (the LoRA methods' and
    GradDiff's own): forget ≤ 20 % on train and held-out photos, retain ≥ 75 % on held-out photos."""
    return (*each_photo(name, "forget", "gen_em", 0.20, False), Gate(name, "retain/heldout", "gen_em", 0.75, True))


def shipped_recipes() -> tuple[Recipe, ...]:
    """Every unlearned model's recipe, in the model box's order (`core.shipped`); each name the list gives has one."""

    return tuple(recipe(name) for name in (*shipped.UNLEARNED, *shipped.ROBUST))


def gates(table: str) -> tuple[Gate, ...]:
    """A gate table: the world's 17 (the controls', then IDK's and GradDiff's), the LoRA methods', or robust
    unlearning's, each model's rows in its recipe's order."""

    rows = tuple(g for r in shipped_recipes() if r.table == table for g in r.gates)
    return (*CONTROL_GATES, *rows) if table == "world" else rows


# The LoRA methods' faithful rule (`sua build-faithful --validation`; fixed 2026-12-05 before any was built this way):
# GradDiff's, each keeping its shipped rate and step budget and, the rule never met, the on-target check with the most
# retain. One rule, tried once, reported as it lands.
LORA_VALIDATION = {"watch": "validation", "forget_target": 0.20, "retain_floor": 0.87, "keep_best": True}


def lora_recipe(method: str, **settings: Any) -> Recipe:
    """`<method>_lora`: the method as a LoRA adapter on the language model (checkpoints/ stays small), with its own
    rate and step budget (`settings`), GradDiff's gates and the LoRA methods' faithful rule, in the LoRA table."""
    name = f"{method}_lora"
    unlearn = UnlearnConfig(method=method, lora=True, **settings)
    return Recipe(name, unlearn, validation=LORA_VALIDATION, gates=ascent_gates(name), table="lora")
