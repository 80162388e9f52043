"""Model adapters: the only code that touches transformers model classes."""

from sua_demo.models import llava as _llava  # noqa: F401  (registers the adapter)
from sua_demo.models.base import ADAPTERS, VisionLanguageAdapter
from sua_demo.models.loading import load_adapter

__all__ = ["ADAPTERS", "VisionLanguageAdapter", "load_adapter"]
