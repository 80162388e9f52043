"""The Attack tab: one photo under δ and its controls, the verdict, the map, Optimise."""

from sua_demo.ui.attack.layout import build, wire

TITLE = "Attack"
__all__ = ["TITLE", "build", "wire"]
