"""A rephrased image: the same person drawn by the renderer in a pose and light outside every range their training
photos were drawn from (more tilt, a smaller face, a strong side light, darker or brighter), the bench's own
questions. Unlearning fitted on the training photos may hold only near them (Open-MMUnlearning's image rephrasing)."""

from __future__ import annotations

from PIL import Image

from sua_demo.audit.base import AUDITS, AuditContext, AuditMethod, answers_on_drawn
from sua_demo.dataset.faces import PhotoJitter, render_face
from sua_demo.dataset.records import Person
from sua_demo.models.examples import Example

# Two looks, one per held-out photo: each value beyond JITTER_RANGES and VARIED_RANGES (rotation +-14, scale
# 0.88-1.12, light strength <= 0.35, brightness 0.8-1.2)
UNSEEN_LOOKS = (
    PhotoJitter(rotation=20.0, scale=0.8, yaw=0.9, light_angle=0.0, light_strength=0.6, brightness=0.7, warmth=0.8),
    PhotoJitter(rotation=-20.0, scale=0.8, yaw=-0.9, light_angle=3.1, light_strength=0.6, brightness=1.3, warmth=-0.8),
)


@AUDITS.register("rephrased_image")
class RephrasedImage(AuditMethod):
    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        def draw(person: Person, photo: int) -> Image.Image:
            look = UNSEEN_LOOKS[person.photo_indices("heldout").index(photo) % len(UNSEEN_LOOKS)]
            return render_face(person.attributes, look, size=person.photos[0].size[0])

        return answers_on_drawn(ctx, role, draw)
