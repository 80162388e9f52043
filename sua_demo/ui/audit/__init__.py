"""The Audit tab: the shipped audit, a live one, and the report card."""

from sua_demo.ui.audit.layout import build, wire

TITLE = "Audit"
__all__ = ["TITLE", "build", "wire"]
