"""A rephrased image: the same person drawn by the renderer in a pose and light outside every range their training
photos were drawn from (more tilt, a smaller face, a strong side light, darker or brighter), the bench's own
questions. Unlearning fitted on the training photos may hold only near them (Open-MMUnlearning's image rephrasing)."""

from __future__ import annotations

import torch

from sua_demo.audit.base import AUDITS, AuditContext, AuditMethod
from sua_demo.data import Example
from sua_demo.dataset.faces import PhotoJitter, render_face
from sua_demo.eval.evaluate import answer

# Two looks, one per held-out photo: each value beyond JITTER_RANGES and VARIED_RANGES (rotation +-14, scale
# 0.88-1.12, light strength <= 0.35, brightness 0.8-1.2)
UNSEEN_LOOKS = (
    PhotoJitter(rotation=20.0, scale=0.8, yaw=0.9, light_angle=0.0, light_strength=0.6, brightness=0.7, warmth=0.8),
    PhotoJitter(rotation=-20.0, scale=0.8, yaw=-0.9, light_angle=3.1, light_strength=0.6, brightness=1.3, warmth=-0.8),
)


@AUDITS.register("rephrased_image")
class RephrasedImage(AuditMethod):
    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        adapter, bank = ctx.models[role]
        examples = ctx.asked()
        drawn: dict[tuple[int, int], torch.Tensor] = {}
        for e in examples:
            if (e.person_id, e.photo) not in drawn:
                person = ctx.bench.person(e.person_id)
                look = UNSEEN_LOOKS[person.photo_indices("heldout").index(e.photo) % len(UNSEEN_LOOKS)]
                photo = render_face(person.attributes, look, size=person.photos[0].size[0])
                drawn[e.person_id, e.photo] = adapter.prepare_images([photo])[0]
        images = torch.stack([drawn[e.person_id, e.photo] for e in examples])
        return examples, answer(adapter, bank, examples, images=images)
