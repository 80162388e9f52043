"""The Batch tab's handler: the recovery protocol for the model and noise. Importing this loads no model: the process's
state is built on the first call (`shared.server`)."""

from __future__ import annotations

from sua_demo.ui.batch.view import batch_view
from sua_demo.ui.serving.gradio_parts import handler
from sua_demo.ui.shared import state


@handler
def batch(model: str, noise_source: str = "shipped", noise_file: str | None = None, optimised: str | None = None):  # type: ignore[no-untyped-def]
    """The recovery protocol for the model and noise: tables, bars, the shipped budget curves and a CSV.

    Args:
        model: the unlearned model.
        noise_source: shipped, uploaded (noise_file) or optimised.
        noise_file: a noise .safetensors file, for noise_source 'uploaded' (over MCP: a base64 data URI, or the
            URL of a noise file this server serves, such as the one `optimise` returns).
        optimised: the page's optimised noise (not for API callers).
    """
    st = state()
    return batch_view(st.engine, st.scratch, model, noise_source, noise_file, optimised)
