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
from sua_demo.bench.records import Bench, Task
from sua_demo.data import ImageBank, image_examples
from sua_demo.errors import SuaError
from sua_demo.eval.evaluate import markdown_table
from sua_demo.eval.recovery import recovery
from sua_demo.io import atomic_write_text, write_json
from sua_demo.models.base import VisionLanguageAdapter

log = logging.getLogger(__name__)


@dataclass
class MllmuProtocolConfig:
    attack: AttackConfig = field(default_factory=AttackConfig)
    attack_ids: tuple[int, int] = (51, 100)  # inclusive ID range delta is optimised on (the reference's)
    test_ids: tuple[int, int] = (1, 50)  # inclusive ID range it is scored on, never seen by the attack
    tasks: tuple[Task, ...] = ("cloze",)  # the reference uses Mask_Task only
    attack_name: str = "sua"


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
    groups = {
        "attack_people": image_examples(bench, _people(bench, cfg.attack_ids, "attack"), "heldout", cfg.tasks),
        "test_people": image_examples(bench, _people(bench, cfg.test_ids, "test"), "heldout", cfg.tasks),
    }
    if not groups["attack_people"]:
        raise SuaError(f"the attack people have no image questions of task(s) {', '.join(cfg.tasks)}")
    bank = ImageBank(bench, adapter)
    meta = {"protocol": "mllmu", "attack_ids": list(cfg.attack_ids), "test_ids": list(cfg.test_ids)}
    noise = ATTACKS.get(cfg.attack_name)(adapter, cfg.attack).run(
        bank, groups["attack_people"], checkpoint=out / "noise.safetensors", meta=meta
    )
    random = ATTACKS.get("random")(adapter, cfg.attack).run(bank, groups["attack_people"], progress=False)
    scores = recovery(adapter, bank, groups, {"clean": None, "delta": noise, "random": random})
    report = {"model": adapter.source, "bench": bench.source, "config": asdict(cfg), "scores": scores}
    write_json(out / "report.json", report)
    md = "".join(f"## {cond}\n\n{markdown_table(rows)}\n" for cond, rows in scores.items())
    atomic_write_text(out / "report.md", f"# MLLMU-Bench SUA protocol: {adapter.source}\n\n{md}")
    log.info("wrote %s", out / "report.md")
    return report
