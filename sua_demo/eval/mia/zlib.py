"""ZLib (Carlini et al. 2021): the LOSS score over the answer's zlib-compressed length, so that text that is easy
for any model (short, repetitive) does not read as remembered."""

import zlib

from sua_demo.eval.mia.base import MIAS, MembershipAttack, TokenStats


@MIAS.register("zlib")
class ZLib(MembershipAttack):
    def score(self, stats: TokenStats) -> float:
        return float(stats.logp.mean()) / len(zlib.compress(stats.text.encode("utf-8")))
