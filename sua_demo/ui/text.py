"""The app's words: title, the one-line guide, help texts, About, page metadata and the stylesheet."""

TITLE = "SUA Lab: did the unlearned model really forget?"
GUIDE = (
    "**① Pick a person** (an example, or the gallery below) **→ ② Apply δ → ③ Compare**: the unlearned model "
    "refuses or errs on the clean photo; with δ it answers again, while random noise and the retrain control "
    "(a model that never saw the person) do not."
)
EMPTY = "<div class='verdict'><p class='controls'>Pick a person or an example; the results appear here.</p></div>"
MODEL_HELP = "changing it loads it; a folder or Hub id where the server allows it"
PHOTO_HELP = "0–4: train photos · 5–6: held-out photos no training or attack ever used"
NOISE_HELP = (
    "The amplified δ stretches ±ε onto the full colour range: at its real size the pattern is invisible. "
    "The heatmap shows where it changes the photo most."
)
BATCH_HELP = (
    "The recovery protocol for the chosen model and noise: generation exact match on each group, clean, with "
    "the noise, and with random noise of the same ε; below, the shipped budget curves (recovery and stealth "
    "against ε, over several attacker splits)."
)
DESCRIPTION = (
    "Audit whether an unlearned multimodal LLM really forgot: one universal noise pattern makes it reveal "
    "forgotten facts again, measured against random noise and a retrain control."
)
HEAD = (
    f'<meta name="description" content="{DESCRIPTION}">'
    f'<meta property="og:title" content="{TITLE}"><meta property="og:description" content="{DESCRIPTION}">'
)
CSS = """
.story-wrap { overflow-x: auto; }
table.story { border-collapse: collapse; width: 100%; font-size: 0.92em; }
table.story th, table.story td { border: 1px solid #ddd; padding: 4px 6px; vertical-align: top;
  overflow-wrap: normal; word-break: normal; hyphens: none; }
table.story thead th { background: #f4f4f7; font-weight: 600; }
table.story td.ok { background: #e3f6e3; }
table.story td.wrong { background: #fdeaea; }
table.story td.refused { background: #eeeeee; color: #555; }
table.story td.na { color: #999; font-style: italic; }
table.story .mark { font-weight: 700; white-space: nowrap; }
.verdict .headline { font-size: 1.5em; margin: 0.2em 0; }
.verdict .controls, .verdict .facts { margin: 0.2em 0; }
.banner { background: #fff6d8; border: 1px solid #e6cf7a; padding: 6px 10px; border-radius: 6px; }
.guide { font-size: 1.05em; }
@media (max-width: 600px) { table.story { font-size: 0.8em; } .verdict .headline { font-size: 1.2em; } }
"""
