"""`sua eval`: answer accuracy per split (forget/retain) and photo set (train/held-out/text-only)."""

from __future__ import annotations

from collections import defaultdict

import torch
from tqdm.auto import tqdm

from sua_demo.core.refusal import DEFAULT as DEFAULT_REFUSALS
from sua_demo.core.refusal import Refusals
from sua_demo.dataset.records import Bench, Task
from sua_demo.eval.metrics import choice_match, exact_match, mllmu_choice, mllmu_cloze, mllmu_generation, rouge_l
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.models.examples import Example, ImageBank, batches, image_examples, text_examples

TASKS: tuple[Task, ...] = ("gen", "mc", "cloze")
Scores = dict[str, float]


def eval_groups(
    bench: Bench, photos_per_person: int | None = None, tasks: tuple[Task, ...] = TASKS
) -> dict[str, list[Example]]:
    """The standard report rows: {forget,retain} x {train photos, held-out photos, text-only}."""
    groups: dict[str, list[Example]] = {}
    for split in ("forget", "retain"):
        ids = bench.ids(split)
        groups[f"{split}/train"] = image_examples(bench, ids, "train", tasks, photos_per_person)
        groups[f"{split}/heldout"] = image_examples(bench, ids, "heldout", tasks, photos_per_person)
        groups[f"{split}/text"] = text_examples(bench, ids, tasks)
    return groups


def score(examples: list[Example], answers: list[str], refusals: Refusals = DEFAULT_REFUSALS) -> Scores:
    """Accuracy and refusal rate per task; every accuracy comes with the refusal rate beside it. `refusals`: the
    model's own ways of declining (VisionLanguageAdapter.refusals)."""
    acc: dict[str, list[float]] = defaultdict(list)
    for ex, ans in zip(examples, answers, strict=True):
        t, item = ex.item.task, ex.item
        if item.style == "mllmu" and t == "mc":  # MLLMU-Bench's own scoring, under its own names
            acc["mc_acc"].append(float(mllmu_choice(ans, item.letter, item.options)))
        else:
            ok = choice_match(ans, item.answer) if item.answer_is_letter else exact_match(ans, item.answer)
            acc[f"{t}_{'acc' if t == 'mc' else 'em'}"].append(float(ok))
        if item.style == "mllmu" and t == "cloze":
            acc["cloze_acc"].append(float(mllmu_cloze(ans, item.answer)))
        if item.style == "mllmu" and t == "gen":
            for k, v in mllmu_generation(ans, item.answer).items():
                acc[f"gen_{k}"].append(v)
        acc[f"{t}_refusal"].append(float(refusals.is_refusal(ans)))
        acc[f"{t}_first_token_refusal"].append(float(refusals.first_token(ans)))
        if t == "gen":
            acc["gen_rougeL"].append(rouge_l(ans, ex.item.answer))
        acc[f"{t}_n"].append(1.0)
    return {k: (float(sum(v)) if k.endswith("_n") else sum(v) / len(v)) for k, v in sorted(acc.items())}


@torch.inference_mode()
def answer(
    adapter: VisionLanguageAdapter,
    bank: ImageBank,
    examples: list[Example],
    batch_size: int = 128,
    images: torch.Tensor | None = None,
    progress: bool = False,
) -> list[str]:
    """Greedy answers in input order. `images` replaces the bank's photos (e.g. x + delta), row per example."""
    out: dict[int, str] = {}
    order = {id(e): i for i, e in enumerate(examples)}
    for chunk in tqdm(batches(examples, batch_size), desc="answering", disable=not progress, leave=False):
        idx = [order[id(e)] for e in chunk]
        x = images[idx] if images is not None and chunk[0].photo is not None else bank.get(chunk)
        tokens = max(e.item.max_new_tokens for e in chunk)
        for i, a in zip(idx, adapter.generate(x, [e.item.question for e in chunk], tokens), strict=True):
            out[i] = a
    return [out[i] for i in range(len(examples))]


def evaluate(
    adapter: VisionLanguageAdapter,
    bench: Bench,
    bank: ImageBank | None = None,
    groups: dict[str, list[Example]] | None = None,
    batch_size: int = 128,
    progress: bool = True,
) -> dict[str, Scores]:
    bank = bank or ImageBank(bench, adapter)
    groups = groups if groups is not None else eval_groups(bench)
    report = {}
    for name, examples in tqdm(groups.items(), desc="evaluating", disable=not progress):
        if examples:
            report[name] = score(examples, answer(adapter, bank, examples, batch_size), adapter.refusals)
    return report


def markdown_table(report: dict[str, Scores]) -> str:
    cols = [
        ("gen_em", "gen EM"),
        ("gen_rougeL", "ROUGE-L"),
        ("gen_refusal", "gen refusal"),
        ("mc_acc", "MC acc"),
        ("mc_refusal", "MC refusal"),
        ("cloze_em", "cloze EM"),
        ("cloze_refusal", "cloze refusal"),
    ]
    lines = ["| group | " + " | ".join(c for _, c in cols) + " | n |", "|---" * (len(cols) + 2) + "|"]
    for name, s in report.items():
        cells = [f"{100 * s[k]:.1f}" if k in s else "–" for k, _ in cols]
        n = int(sum(v for k, v in s.items() if k.endswith("_n")))
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {n} |")
    return "\n".join(lines) + "\n"
