"""Min-K% (Shi et al. 2024): the mean of the lowest k of the answer's token log-probabilities; a non-member has a
few very unlikely tokens where a member has none."""

from sua_demo.eval.mia.base import MIAS, MembershipAttack, TokenStats, lowest


@MIAS.register("mink")
class MinK(MembershipAttack):
    k: float = 0.4  # open-unlearning's MUSE default (percentile 40); an answer of 1-2 tokens keeps its lowest

    def score(self, stats: TokenStats) -> float:
        return float(lowest(stats.logp, self.k).mean())
