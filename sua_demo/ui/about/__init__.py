"""The About tab: the story"s diagram and how every figure on the page was measured."""

from sua_demo.ui.about.layout import build

TITLE = "About"
__all__ = ["TITLE", "build"]
