"""LOSS (Yeom et al. 2018): a member's answer is more likely, so the score is its mean token log-probability."""

from sua_demo.eval.mia.base import MIAS, MembershipAttack, TokenStats


@MIAS.register("loss")
class Loss(MembershipAttack):
    def score(self, stats: TokenStats) -> float:
        return float(stats.logp.mean())
