"""Denoisers (purifiers): one file each, registered by name in DENOISERS."""

from sua_demo.denoisers import ddpm, dncnn, gaussian, jpeg, median  # noqa: F401  (registration)
from sua_demo.denoisers.base import DENOISERS, Denoiser


def build_denoiser(name: str, **kwargs: object) -> Denoiser:
    return DENOISERS.get(name)(**kwargs)


__all__ = ["DENOISERS", "Denoiser", "build_denoiser"]
