"""The recipe study's table (studies/attack_recipes.py, `make recipes-table`): every variant of every run file,
ranked by the rule fixed before the runs, so the shipped recipes.md is what its run files give."""

from __future__ import annotations

import json
from pathlib import Path

from sua_demo.eval.validation import VAL_GROUPS


def recipe_table(paths: list[str]) -> str:
    """Every variant of every run file as one table: gain on each validation group, mean ± sd over splits."""
    lines = [
        "# Choosing the attack recipe on the attacker's side only",
        "",
        "delta fitted on the first 3 train photos of 6 of the 8 attacker people; scored (generation exact match, "
        "gain in points over clean) on those photos, on the same people's other 2 train photos (stand-in for b) "
        "and on the 2 attacker people held back (stand-in for c). Groups b and c were never read. Splits 0-2, "
        "world 0, fp32. Recipe rule, fixed before the runs: the best mean of the two stand-ins over both models.",
        "",
        "| model | variant | fit | other photos (b') | held-back people (c') | mean of b', c' |",
        "|---|---|---|---|---|---|",
    ]
    score: dict[str, dict[str, float]] = {}  # variant -> model -> mean of b', c'
    for path in paths:
        run_ = json.loads(Path(path).read_text())
        model = Path(run_["model"]).name
        for name, v in run_["variants"].items():
            m, sd = v["gain_mean"], v["gain_sd"]
            cells = [f"{m[g]:+.1f} ± {sd[g]:.1f}" for g in VAL_GROUPS]
            both = (m["fit_other_photos"] + m["val_people"]) / 2
            score.setdefault(name, {})[model] = both
            lines.append(f"| {model} | {name} | " + " | ".join(cells) + f" | {both:+.1f} |")
    models = {m for s in score.values() for m in s}
    ranked = sorted(((sum(s.values()) / len(s), n) for n, s in score.items() if set(s) == models), reverse=True)
    lines += ["", f"Variants run on every model ({', '.join(sorted(models))}), by the rule:", ""]
    lines += [f"{i}. {n}: {v:+.1f}" for i, (v, n) in enumerate(ranked, 1)]
    return "\n".join(lines) + "\n"
