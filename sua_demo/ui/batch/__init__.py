"""The Batch tab: the recovery protocol for one model and noise, over every group."""

from sua_demo.ui.batch.layout import build, wire

TITLE = "Batch"
__all__ = ["TITLE", "build", "wire"]
