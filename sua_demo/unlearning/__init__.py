"""Unlearning methods: one file each, registered by name in METHODS."""

from sua_demo.unlearning import ga, grad_diff, idk, kl, npo, rmu, robust, simnpo  # noqa: F401  (registration)
from sua_demo.unlearning.base import METHODS, UnlearningMethod

__all__ = ["METHODS", "UnlearningMethod"]
