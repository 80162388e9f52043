"""Min-K%++ (Zhang et al. 2024): each token's log-probability standardised by the mean and spread of log p over the
vocabulary at its position (a member's token sits at a local maximum of the distribution), then Min-K% over them."""

import numpy as np

from sua_demo.eval.mia.base import MIAS, MembershipAttack, TokenStats, lowest


@MIAS.register("mink++")
class MinKPlusPlus(MembershipAttack):
    k: float = 0.4

    def score(self, stats: TokenStats) -> float:
        z = (stats.logp - stats.mu) / np.maximum(stats.sigma, 1e-6)
        return float(lowest(z, self.k).mean())
