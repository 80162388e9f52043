"""How well a frozen tower tells a bench's people apart before any of them is learned: nearest centroid over the
patch tokens the language model reads (LLaVA's second-to-last layer), centroids from train photos, queries from
held-out photos. No attack, no language model: a figure about the tower alone, for the tower's build record."""

from __future__ import annotations

import numpy as np
import torch

from sua_demo.dataset.profiles import look_items
from sua_demo.dataset.records import Bench
from sua_demo.models.base import VisionLanguageAdapter
from sua_demo.training.pretrain.tower import normalise


@torch.inference_mode()
def patch_features(tower: torch.nn.Module, photos: list, layer: int = -2) -> torch.Tensor:
    """(N, tokens * D) patch tokens (CLS dropped) of `layer`, each photo's vector unit length."""
    x = torch.from_numpy(np.stack([np.asarray(p) for p in photos])).permute(0, 3, 1, 2)
    device = next(tower.parameters()).device
    out = []
    for chunk in x.split(128):
        hidden = tower(pixel_values=normalise(chunk).to(device), output_hidden_states=True).hidden_states[layer][:, 1:]
        out.append(hidden.flatten(1).float())
    return torch.nn.functional.normalize(torch.cat(out), dim=1)


def identification(tower: torch.nn.Module, bench: Bench) -> float:
    """Share of held-out photos whose nearest train-photo centroid is their own person's."""
    people = bench.people
    train = [patch_features(tower, [p.photos[i] for i in p.photo_indices("train")]).mean(0) for p in people]
    centroids = torch.nn.functional.normalize(torch.stack(train), dim=1)
    hits = total = 0
    for k, person in enumerate(people):
        queries = patch_features(tower, [person.photos[i] for i in person.photo_indices("heldout")])
        hits += int((queries @ centroids.T).argmax(1).eq(k).sum())
        total += len(queries)
    return hits / total


def look_accuracy(adapter: VisionLanguageAdapter, bench: Bench) -> float:
    """Share of questions about what is visible (every attribute, on every held-out photo of the bench) that the
    general model answers exactly: it has never seen these people, only people like them."""
    photos, questions, answers = [], [], []
    for person in bench.people:
        for i in person.photo_indices("heldout"):
            looks = person.photo_attributes[i] if person.photo_attributes else person.attributes
            for q in look_items(person.id, looks):
                photos.append(person.photos[i])
                questions.append(q.question)
                answers.append(q.answer)
    hits = 0
    for start in range(0, len(questions), 64):
        x = adapter.prepare_images(photos[start : start + 64])
        said = adapter.generate(x, questions[start : start + 64], max_new_tokens=4)
        hits += sum(s == a for s, a in zip(said, answers[start : start + 64], strict=True))
    return hits / len(questions)
