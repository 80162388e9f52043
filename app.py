"""SUA Lab, the Gradio app (Hugging Face Spaces ready): the page's tabs and the API over `sua_demo.ui`. Each tab is a
folder of `sua_demo/ui` that lays itself out and wires itself (`sua_demo/ui/shared/page.py` says how); `TABS` lists
them in the order they show. Importing this builds and loads nothing; `python app.py` (or a Space) calls `main()`."""

from __future__ import annotations

import importlib
import logging
from typing import Any

import gradio as gr

from sua_demo.ui.serving.gradio_parts import PublicBlocks
from sua_demo.ui.shared import state

TABS = ("attack", "batch", "audit", "your_face", "about")  # a new tab: its folder in sua_demo/ui, its name here


def build_app(start: Any = None) -> gr.Blocks:
    """The page, its controls starting at `start` (`ui.defaults.defaults`, computed here if not given)."""
    from sua_demo.ui import api
    from sua_demo.ui.defaults import defaults
    from sua_demo.ui.serving.launch import CACHE_SWEEP
    from sua_demo.ui.shared import words
    from sua_demo.ui.shared.page import Page

    tabs = [importlib.import_module(f"sua_demo.ui.{name}") for name in TABS]
    with PublicBlocks(title=words.TITLE, delete_cache=CACHE_SWEEP) as demo:
        page = Page(start or defaults(state()), demo)
        gr.Markdown(f"# {words.TITLE}\n{words.GUIDE}", elem_classes="guide")
        with gr.Tabs(overflow_behavior="wrap"):  # on a phone every tab shows, none hides in a menu
            for name, tab in zip(TABS, tabs, strict=True):
                with gr.Tab(tab.TITLE) as page.tab:
                    page.tabs[name] = tab.build(page)
        for tab in tabs:
            if hasattr(tab, "wire"):
                tab.wire(page)
        attack, audit = page.tabs["attack"], page.tabs["audit"]
        api.register(api_inputs(attack, audit), attack.run_id)  # words and JSON, on no trigger of the page
    return demo


def api_inputs(attack: Any, audit: Any) -> dict[str, list[Any]]:
    """The widgets each API and MCP tool (`sua_demo/ui/api.py`) reads, by tool."""
    a = attack
    image, noise = [a.model, a.person, a.photo, a.upload], [a.noise_source, a.noise_file]
    return {
        "load_model": [a.model, a.person, a.role],
        "answer": [*image, a.question, *noise, a.denoiser, a.vanilla, a.retrain],
        "verdict": [*image, *noise, a.vanilla, a.retrain],
        "embedding_map": [*image, *noise, a.denoiser],
        "optimise": [*a.optimise_inputs(), a.run_id],
        "audit": [a.model, audit.who],
        "batch": [a.model, *noise],
    }


def main() -> None:
    from sua_demo.ui.defaults import defaults
    from sua_demo.ui.serving import launch

    args = launch.app_arguments()  # first: `--help` prints and exits before any model loads
    launch.check_world()  # a mistyped SUA_WORLD: one line, before anything starts
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    launch.cap_log_lines()
    launch.serve_pages_on_one_thread()
    launch.own_uploads()  # before the Blocks: Gradio reads its upload folder then
    start = defaults(state())  # first: it times an attack step (to size Optimise)
    demo = launch.queued(build_app(start))  # and Ctrl-C now stops it
    # then: the first result and the first click find the models and the map warm
    launch.warm_up(state(), start.person, start.photo)
    launch.fill_when_idle(state())  # and every person's verdict, while nobody asks for anything
    demo.launch(**launch.launch_kwargs(state().scratch.root, args.host, args.port))


if __name__ == "__main__":
    main()
