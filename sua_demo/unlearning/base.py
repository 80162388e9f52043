"""An unlearning method is one `compute_loss` over a forget batch and a retain batch."""

from __future__ import annotations

from abc import ABC, abstractmethod

import torch

from sua_demo.core.config import UnlearnConfig
from sua_demo.core.registry import Registry
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank


class UnlearningMethod(ABC):
    needs_reference = False  # KL and NPO compare against a frozen copy of the starting model

    def __init__(self, cfg: UnlearnConfig, reference: VisionLanguageAdapter | None = None) -> None:
        if self.needs_reference and reference is None:
            raise ValueError(f"{type(self).__name__} needs a frozen reference model")
        self.cfg = cfg
        self.reference = reference

    @abstractmethod
    def compute_loss(
        self, adapter: VisionLanguageAdapter, bank: ImageBank, forget: list[Example], retain: list[Example]
    ) -> torch.Tensor:
        """Scalar loss to minimise for one step."""


METHODS: Registry[UnlearningMethod] = Registry("unlearning method")
