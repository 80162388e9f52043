"""Membership-inference attacks, one file and one registry line each (MIAS), and what is read from them."""

from sua_demo.eval.mia import loss, mink, minkpp, zlib  # noqa: F401  (each registers itself)
from sua_demo.eval.mia.base import MIAS, MembershipAttack, TokenStats, token_stats
from sua_demo.eval.mia.scores import auc, mia_report, privleak

__all__ = ["MIAS", "MembershipAttack", "TokenStats", "auc", "mia_report", "privleak", "token_stats"]
