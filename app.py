"""SUA Lab, the Gradio app (Hugging Face Spaces ready): the page's tabs and the API over `sua_demo.ui`. Each tab lays
itself out and wires itself (`sua_demo/ui/*_tab.py`). Importing this builds and loads nothing; `python app.py` (or a
Space) calls `main()`."""

from __future__ import annotations

import logging
from typing import Any

import gradio as gr

from sua_demo.ui import api, tools
from sua_demo.ui.gradio_glue import PublicBlocks


def build_app() -> gr.Blocks:
    from sua_demo.ui import about_tab, attack_tab, audit_tab, batch_tab, face_tab, text
    from sua_demo.ui.app_state import defaults
    from sua_demo.ui.launch import CACHE_SWEEP

    d = defaults(tools.state())
    with PublicBlocks(title=text.TITLE, delete_cache=CACHE_SWEEP) as demo:
        gr.Markdown(f"# {text.TITLE}\n{text.GUIDE}", elem_classes="guide")
        with gr.Tabs(overflow_behavior="wrap"):  # on a phone every tab shows, none hides in a menu
            with gr.Tab("Attack"):
                attack = attack_tab.build(d)
            with gr.Tab("Batch"):
                batch = batch_tab.build()
            with gr.Tab("Audit") as tab:
                audit = audit_tab.build(d, tab)
            with gr.Tab("Your face"):
                face_tab.build(d.facts, demo)
            with gr.Tab("About"):
                about_tab.build()
        attack_tab.wire(attack, demo)
        batch_tab.wire(batch, attack)
        audit_tab.wire(audit, attack)
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
    from sua_demo.ui import launch

    args = launch.app_arguments()  # first: `--help` prints and exits before any model loads
    launch.check_world()  # a mistyped SUA_WORLD: one line, before anything starts
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    launch.cap_log_lines()
    launch.serve_pages_on_one_thread()
    launch.own_uploads()  # before the Blocks: Gradio reads its upload folder then
    demo = launch.queued(build_app())  # first: it times an attack step (to size Optimise); and Ctrl-C now stops it
    launch.warm_up(tools.state())  # then: the first result and the first click find the models and the map warm
    launch.fill_when_idle(tools.state())  # and every person's verdict, while nobody asks for anything
    demo.launch(**launch.launch_kwargs(tools.state().scratch.root, args.host, args.port))


if __name__ == "__main__":
    main()
