"""Attacks: universal SUA (with and without stealth; L-inf, L2, block-coarse or on a border frame), a random-noise
baseline and per-image PGD."""

from sua_demo.attacks import random_noise, sua, sua_frame, sua_l2, sua_lowfreq  # noqa: F401  (registration)
from sua_demo.attacks.base import ATTACKS, AttackConfig, UniversalAttack
from sua_demo.attacks.noise import Noise, load_noise, save_noise

__all__ = ["ATTACKS", "AttackConfig", "Noise", "UniversalAttack", "load_noise", "save_noise"]
