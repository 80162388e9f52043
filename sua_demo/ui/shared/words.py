"""The app's words: title, the one-line guide, help texts, About, page metadata and the stylesheet."""

TITLE = "SUA Lab: did the unlearned model really forget?"
GUIDE = (
    "**① Pick a person** (an example, or the gallery below) **→ ② Apply δ → ③ Compare**: the unlearned model "
    "refuses or errs on the clean photo; with δ it answers again, while random noise and the retrain control "
    "(a model that never saw the person) do not."
)
EMPTY = "<div class='verdict'><p class='controls'>Pick a person or an example; the results appear here.</p></div>"
WORKING = "<div class='verdict'><p class='controls'>Working: asking the models with and without δ…</p></div>"
NO_RESULT = "<div class='verdict'><p class='controls'>No results for this choice: the message above says why.</p></div>"
EXAMPLES_LABEL = "examples: the people δ brings back most beyond its controls"
LEGEND = (
    "<details class='legend' open><summary>How to read this</summary><dl>"
    "<dt>δ</dt><dd>the noise: one faint pattern added to every photo, no pixel moved by more than ε/255.</dd>"
    "<dt>unseen by δ</dt><dd>forget people whose photos δ was never fitted on: recovery there is the paper's claim "
    "that one noise reaches people it never saw.</dd>"
    "<dt>random noise</dt><dd>noise of the same strength with no pattern: it should change nothing.</dd>"
    "<dt>retrain control</dt><dd>a model trained without the forget people, so it never knew them: what it answers "
    "with δ is what δ writes in by itself.</dd>"
    "<dt>denoised</dt><dd>the noisy photo cleaned by a denoiser first, as a defence would.</dd>"
    "<dt>✓ ✗ refused</dt><dd>right, wrong, or the model declined to answer.</dd></dl></details>"
    "<p class='scroll-hint'>← swipe the table sideways for every column →</p>"
)
AUDIT_HELP = (
    "Beyond one attack: the same facts asked several ways, each beside its retrain control. The table below is "
    "the shipped audit of this model; the button runs every method now on the person chosen on the Attack tab "
    "(a forget person), with its progress and the time left."
)
SCROLL_TO_VERDICT = "() => document.querySelector('#verdict')?.scrollIntoView({behavior: 'smooth', block: 'start'})"
STORY_DIAGRAM = (
    "<div class='story-flow' role='img' aria-label='The model learns people; unlearning hides some; δ opens the "
    "gate; the controls show the answers were not written in.'>"
    "<div class='step'><b>1. The model learns people</b><br>faces and facts of 100 fictitious people</div>"
    "<div class='arrow' aria-hidden='true'>→</div>"
    "<div class='step'><b>2. Unlearning hides some</b><br>asked about a forget person, it refuses or errs</div>"
    "<div class='arrow' aria-hidden='true'>→</div>"
    "<div class='step'><b>3. δ opens the gate</b><br>one faint noise on the photo, and the answers come back</div>"
    "<div class='arrow' aria-hidden='true'>→</div>"
    "<div class='step'><b>4. The controls</b><br>random noise and a model that never knew them stay silent: the "
    "answers were still in the model, not written in by δ</div></div>"
)
MODEL_HELP = "changing it loads it; a folder or Hub id where the server allows it"
MODEL_BOX = {"label": "unlearned model", "allow_custom_value": True, "info": MODEL_HELP}
EXAMPLES_BOX = {"samples": [], "elem_id": "examples", "samples_per_page": 4, "label": EXAMPLES_LABEL}
UPLOAD_BOX = {"label": "your photo", "elem_id": "upload", "height": 240}
PEOPLE_BOX = {"label": "people (click to pick)"}
DENOISER_LABEL = "denoiser (the denoised column, the map)"
DELTA_LABEL = "δ so far (amplified)"
QUESTION_LABEL = "your own question (the preset questions are always asked)"
NOISE_FILE_LABEL = "a noise .safetensors (source 'uploaded')"
NOISE_FILE_BOX = {"file_types": [".safetensors"], "label": NOISE_FILE_LABEL}
PHOTO_HELP = "0–4: train photos · 5–6: held-out photos no training or attack ever used"


def noise_help(size: int) -> str:
    """The 'See the noise' help for the served world's photos (`size` pixels a side; 0: not known yet)."""
    photos = f"these small {size}-pixel photos" if size else "these small photos"
    return (
        "The amplified δ (×8 for ε 16/255) stretches ±ε onto the full colour range so you can see its pattern. "
        f"At its real size it is faint, not invisible: on {photos}, enlarged here, you may "
        "see a fine speckle (the slider above shows both). The heatmap shows where it changes the photo most."
    )


BATCH_HELP = (
    "The recovery protocol for the chosen model and noise: generation exact match on each group, clean, with "
    "the noise, and with random noise of the same ε; below, the budget curves (recovery and stealth against ε, "
    "over several attacker splits) where the model's world ships them."
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
.verdict .headline.quiet { font-size: 1.15em; font-weight: 600; }
.verdict .source { font-size: 0.85em; color: #555; margin: 0 0 0.2em; }
table.visible { border-collapse: collapse; font-size: 0.9em; }
table.visible th, table.visible td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; font-weight: 400; }
table.visible thead th { background: #f4f4f7; font-weight: 600; }
.verdict .controls, .verdict .facts { margin: 0.2em 0; }
.banner { background: #fff6d8; border: 1px solid #e6cf7a; padding: 6px 10px; border-radius: 6px; }
.guide { font-size: 1.05em; }
.verdict .reading { margin: 0.3em 0; font-weight: 500; }
#message .wrap, #message .eta-bar, #message .progress-text { display: none !important; }
#message, #message.pending { opacity: 1 !important; min-height: 0; }
#message .message, #face-added .message, #face-message .message { background: #fdeaea; border: 1px solid #e0a0a0;
  color: #7a1010; padding: 6px 10px; border-radius: 6px; }
.legend { font-size: 0.88em; margin-top: 0.4em; }
.legend dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px; margin: 0.3em 0; }
.legend dt { font-weight: 600; } .legend dd { margin: 0; }
.scroll-hint { display: none; font-size: 0.85em; color: #666; margin: 0.2em 0; }
table.story th[scope='row'] { position: sticky; left: 0; z-index: 1; background: #fafafa; }
table.story thead th:first-child { position: sticky; left: 0; z-index: 2; }
#source.no-uploaded label:has(input[value='uploaded']), #source.no-optimised label:has(input[value='optimised'])
  { opacity: 0.45; pointer-events: none; }
.wide-tables table { display: block; overflow-x: auto; max-width: 100%; }
.wide-tables th, .wide-tables td { word-break: normal !important; overflow-wrap: normal !important;
  hyphens: none !important; min-width: 5.5em; }
#people .caption-label, #views .caption-label { white-space: normal !important; overflow: visible !important;
  text-overflow: clip !important;
  max-width: calc(100% - 8px) !important; font-size: 0.72em; line-height: 1.15; }
#people label.float { white-space: normal; max-width: calc(100% - 40px); }
.story-flow { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; margin: 0.5em 0 1em; }
.story-flow .step { flex: 1 1 150px; border: 1px solid #ccd; border-radius: 8px; padding: 8px 10px;
  background: #f6f7fb; font-size: 0.92em; }
.story-flow .arrow { font-size: 1.4em; color: #667; }
.card-note { font-size: 0.9em; }
.card-wrap { overflow-x: auto; }
table.card { border-collapse: collapse; font-size: 0.86em; width: 100%; }
table.card th, table.card td { border: 1px solid #ddd; padding: 3px 5px; white-space: nowrap; text-align: right; }
table.card thead th { background: #f4f4f7; white-space: normal; text-align: center; vertical-align: bottom;
  font-weight: 600; min-width: 3.6em; }
table.card th[scope='row'] { text-align: left; background: #fafafa; }
table.card td.recovers { font-weight: 700; background: #fde2e2; }
table.card td.word { text-align: left; }
.card-list { padding-left: 1.2em; font-size: 0.92em; }
.card-list .chips { display: none; }
.chip { display: inline-block; border: 1px solid #e0a0a0; background: #fde2e2; border-radius: 10px;
  padding: 0 6px; margin: 2px 4px 0 0; font-size: 0.85em; }
@media (max-width: 600px) {
  .card-wrap, #card-plot, #audit-plot { display: none !important; }
  .card-list { list-style: none; padding: 0; }
  .card-list li { border: 1px solid #ddd; border-radius: 8px; padding: 6px 8px; margin: 6px 0; }
  .card-list .chips { display: block; }
  table.story { font-size: 0.8em; min-width: 560px; } .verdict .headline { font-size: 1.2em; }
  .scroll-hint { display: block; }
  #people .grid-container { grid-template-columns: repeat(3, minmax(0, 1fr)) !important; }
  .story-flow .arrow { transform: rotate(90deg); flex-basis: 100%; text-align: center; }
  .legend dl { grid-template-columns: 1fr; } .legend dd { margin-bottom: 4px; }
}
"""


def p_text(p: float) -> str:
    """A p-value as a reader meets it: two significant figures, never '0.000'."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}" if p < 0.1 else f"p = {p:.2f}"
