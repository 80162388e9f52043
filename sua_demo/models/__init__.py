"""Model adapters: the only code that touches transformers model classes."""

from sua_demo.models import gemma3 as _gemma3  # noqa: F401
from sua_demo.models import idefics2 as _idefics2  # noqa: F401  (each import registers its adapter)
from sua_demo.models import idefics3 as _idefics3  # noqa: F401
from sua_demo.models import llava as _llava  # noqa: F401
from sua_demo.models import llava_next as _llava_next  # noqa: F401
from sua_demo.models import qwen2_vl as _qwen2_vl  # noqa: F401
from sua_demo.models.base import ADAPTERS, VisionLanguageAdapter
from sua_demo.models.loading import load_adapter

__all__ = ["ADAPTERS", "VisionLanguageAdapter", "load_adapter"]
