"""What a tab gets to lay itself out and wire itself. A tab is a folder of `sua_demo/ui` whose package names its
`TITLE` and a `build(page)` (and, if it listens to other tabs, a `wire(page)`, called once every tab is built);
`app.py` lists the folders in the order the tabs show."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gradio as gr


@dataclass
class Page:
    """The page's defaults (`ui.defaults.defaults`), its Blocks, the tab being laid out, and the tabs built so
    far by folder name (the Batch and Audit tabs read the Attack tab's model and noise)."""

    defaults: Any
    blocks: gr.Blocks
    tab: gr.Tab | None = None
    tabs: dict[str, Any] = field(default_factory=dict)
