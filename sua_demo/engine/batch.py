"""The engine's Batch: the recovery protocol for one given noise, with the verdict's paired test per group."""

from __future__ import annotations

from sua_demo.analysis.paired import Paired, mcnemar
from sua_demo.attacks import Noise
from sua_demo.engine.checks import check_noise
from sua_demo.engine.model_cache import LoadedModel
from sua_demo.engine.people import People
from sua_demo.eval.evaluate import markdown_table
from sua_demo.eval.metrics import exact_match
from sua_demo.eval.recovery import RETAIN_PEOPLE, protocol_groups, recovery_answers


class Batches(People):
    """Batch: clean, the noise and random noise of the same ε over the protocol's groups."""

    def batch_report(
        self, sess: LoadedModel, noise: Noise, tasks: tuple[str, ...] = ("gen",), retain_people: int = RETAIN_PEOPLE
    ) -> tuple[dict[str, dict[str, dict[str, float]]], str, dict[str, Paired]]:
        """The recovery protocol for one given noise: clean, this noise and random noise of the same ε; and per
        group, the verdict's paired test of the noise against random noise on the same questions."""
        check_noise(sess, noise)
        groups = protocol_groups(self.bench, self.split_of_noise(noise), retain_people, tasks)  # type: ignore[arg-type]
        noises = {"clean": None, "noise": noise, "random": self.random_noise(sess, noise.eps)}
        rec, said = recovery_answers(sess.adapter, sess.bank, groups, noises)

        def right(cond: str, g: str) -> list[bool]:
            return [exact_match(a, e.item.answer) for a, e in zip(said[cond][g], groups[g], strict=True)]

        tests = {g: mcnemar(right("noise", g), right("random", g)) for g in said["noise"]}
        tables = "\n".join(f"**{cond}**\n\n{markdown_table(rows)}" for cond, rows in rec.items())
        return rec, tables, tests
