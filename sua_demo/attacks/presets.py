"""Named attack settings: `sua attack --preset NAME` (and attack-eval) starts from one of these.

"reference" is the public SUA code's configuration (llava_vlm_attack.py and its attacker), so a user of that
code can set its figures beside ours: eps 12/255, sign steps of 1/255, batch 6, 1000 iterations, no EOT,
cross-entropy on x + delta plus on D(x + delta), the embedding-alignment term at weight 0.7 computed without
gradient (as released, where it cannot move delta), and DnCNN as the denoiser.
"""

from __future__ import annotations

from dataclasses import replace

from sua_demo.attacks.base import AttackConfig
from sua_demo.core.errors import UnknownNameError

PRESETS: dict[str, AttackConfig] = {
    "default": AttackConfig(),
    "reference": replace(
        AttackConfig(),
        eps=12 / 255,
        alpha=1 / 255,
        alpha_schedule="constant",
        batch_size=6,
        steps=1000,
        eot=False,
        beta=1.0,
        stealth_weight=0.7,
        stealth_grad=False,
        denoiser="dncnn",
    ),
}


def preset(name: str) -> AttackConfig:
    if name not in PRESETS:
        raise UnknownNameError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}")
    return PRESETS[name]
