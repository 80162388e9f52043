"""The reference SUA protocol on MLLMU-Bench's Test_Set, as one call (`sua mllmu-protocol`).

The public reference optimises delta on the Test_Set photos of people 51-100 with their Mask_Task
(cloze, "[Blank]") questions and true answers, then scores people 1-50, whom delta never saw. We
report both groups clean, with delta, and with random noise of the same eps (the control that shows
delta does more than add noise).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from sua_demo.attacks import ATTACKS, AttackConfig
from sua_demo.core.errors import SuaError
from sua_demo.core.io import atomic_write_text, write_json
from sua_demo.dataset.records import Bench, Task
from sua_demo.eval.evaluate import markdown_table
from sua_demo.eval.recovery import recovery
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank

log = logging.getLogger(__name__)


@dataclass
class MllmuProtocolConfig:
    attack: AttackConfig = field(default_factory=AttackConfig)
    attack_ids: tuple[int, int] = (51, 100)  # inclusive ID range delta is optimised on (the reference's)
    test_ids: tuple[int, int] = (1, 50)  # inclusive ID range it is scored on, never seen by the attack
    tasks: tuple[Task, ...] = ("cloze",)  # the reference uses Mask_Task only
    attack_name: str = "sua"


def asked_with_photo(bench: Bench, ids: list[int], tasks: tuple[Task, ...], modality: str) -> list[Example]:
    """Every question of these people asked with each of their Test_Set photos: the public code attacks and
    scores the Pure_Text Mask_Task items with the person's photo too, so those are part of the protocol."""
    return [
        Example(q, ph)
        for pid in ids
        for ph in bench.person(pid).photo_indices("heldout")
        for q in bench.items([pid], tasks=tasks, modalities=(modality,), photos="heldout")  # type: ignore[arg-type]
    ]


def _people(bench: Bench, span: tuple[int, int], what: str) -> list[int]:
    ids = [p.id for p in bench.people if span[0] <= p.id <= span[1]]
    if not ids:
        raise SuaError(f"no Test_Set people with IDs {span[0]}-{span[1]} ({what}); the bench has {len(bench.people)}")
    return ids


def run_mllmu_protocol(
    adapter: VisionLanguageAdapter, bench: Bench, cfg: MllmuProtocolConfig, out: str | Path
) -> dict[str, Any]:
    """Optimise delta on the attack people, score both groups clean / delta / random; write report.json + .md."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    attack_people = _people(bench, cfg.attack_ids, "attack")
    test_people = _people(bench, cfg.test_ids, "test")
    groups = {
        f"{who}/{kind}": asked_with_photo(bench, ids, cfg.tasks, modality)
        for who, ids in (("attack_people", attack_people), ("test_people", test_people))
        for kind, modality in (("Image_Textual", "image"), ("Pure_Text", "text"))
    }
    attacked = groups["attack_people/Image_Textual"] + groups["attack_people/Pure_Text"]
    if not attacked:
        raise SuaError(f"the attack people have no questions of task(s) {', '.join(cfg.tasks)}")
    bank = ImageBank(bench, adapter)
    meta = {"protocol": "mllmu", "attack_ids": list(cfg.attack_ids), "test_ids": list(cfg.test_ids)}
    noise = ATTACKS.get(cfg.attack_name)(adapter, cfg.attack).run(
        bank, attacked, checkpoint=out / "noise.safetensors", meta=meta
    )
    random = ATTACKS.get("random")(adapter, cfg.attack).run(bank, attacked, progress=False)
    scores = recovery(
        adapter, bank, {g: ex for g, ex in groups.items() if ex}, {"clean": None, "delta": noise, "random": random}
    )
    report = {
        "model": adapter.source,
        "bench": bench.source,
        "style": f"{bench.style} (MLLMU-Bench's prompts and scoring)" if bench.style == "mllmu" else bench.style,
        "attacked_examples": len(attacked),
        "config": asdict(cfg),
        "scores": scores,
    }
    write_json(out / "report.json", report)
    md = f"Scored in the {report['style']} style; {len(attacked)} attacked examples.\n\n"
    md += "".join(f"## {cond}\n\n{markdown_table(rows)}\n" for cond, rows in scores.items())
    atomic_write_text(out / "report.md", f"# MLLMU-Bench SUA protocol: {adapter.source}\n\n{md}")
    log.info("wrote %s", out / "report.md")
    return report
