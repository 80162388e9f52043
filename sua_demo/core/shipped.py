"""The one list of what ships: the unlearned models, their controls, the pair attacked with every study, the
default, and the words people read for each. The CLI, the page, the builds, the Makefile
(`python -m sua_demo.core.shipped unlearned`) and the tests derive from it; nothing else spells these names out."""

from __future__ import annotations

import sys
from pathlib import Path

# every unlearned model a world may ship, in the model box's order (full fine-tunes first, then the LoRA ones)
UNLEARNED = ("idk", "grad_diff", "ga_lora", "kl_lora", "npo_lora", "rmu_lora", "simnpo_lora")
CONTROLS = ("vanilla", "retrain")  # before unlearning, and the exact-unlearning control that never saw the forget set
# the two full fine-tunes: the most attack splits, every study, the faithful world's re-attacks and Your face's
# ways of forgetting (a LoRA run on one visitor would not say more than these two)
DEMO = ("idk", "grad_diff")
# robust unlearning (docs/robust.md): each demo method trained against a universal δ; the faithful world's only
ROBUST = ("idk_robust", "grad_diff_robust")
MODELS = (*UNLEARNED, *ROBUST, *CONTROLS)  # the model box lists those a world has
DEFAULT = "idk"  # refusal-style unlearning: where the hidden knowledge shows most clearly (docs/findings.md)

# what a person reads; the technical name stays in a tooltip, the CLI and the files
LABELS = {
    "idk": "IDK (taught to refuse)",
    "grad_diff": "GradDiff (gradient difference)",
    "ga_lora": "Gradient ascent (LoRA)",
    "kl_lora": "KL-regularised ascent (LoRA)",
    "npo_lora": "NPO (LoRA)",
    "rmu_lora": "RMU (LoRA)",
    "simnpo_lora": "SimNPO (LoRA)",
    "idk_robust": "IDK against δ (trained against a universal noise)",
    "grad_diff_robust": "GradDiff against δ (trained against a universal noise)",
    "vanilla": "Before unlearning",
    "retrain": "Retrain control (never saw them)",
}


def label(name: str) -> str:
    """A model's readable name; a model of the user's own keeps the name it was given."""
    return LABELS.get(name, name)


def short_label(name: str) -> str:
    """A model's readable name without its gloss ('IDK', not 'IDK (taught to refuse)'), for use inside a sentence."""
    return label(name).split(" (")[0]


def public_name(model: str) -> str:
    """A model's name as it may leave the server: a shipped name or Hub id as is, a folder by its last part."""
    return Path(model).name if model not in MODELS and Path(model).is_absolute() else model


LISTS = {"unlearned": UNLEARNED, "controls": CONTROLS, "models": MODELS, "demo": DEMO, "robust": ROBUST}

if __name__ == "__main__":  # the Makefile's lists: `python -m sua_demo.core.shipped unlearned`
    print(" ".join(LISTS[sys.argv[1]]))
