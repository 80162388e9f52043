"""What the tabs share: the server's state, the page's words, plots, clocks, stop flags, exports, the story table."""

from typing import Any


def state() -> Any:
    """The engine, scratch folder and stop registry of this process, built on first use (not at import)."""
    from sua_demo.ui.shared.server import shared

    return shared()
