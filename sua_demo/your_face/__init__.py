"""*Your face*: a visitor's own person made a bench person (`visitor`), their photos checked (`photos`), taught to a
model's language model with LoRA, the tower and projector untouched (`teach`), then unlearned and attacked
(`lifecycle`, which sits above the others: it runs the unlearning runner, the attack and eval)."""

from sua_demo.your_face.photos import usable_photos
from sua_demo.your_face.teach import TeachConfig, teach
from sua_demo.your_face.visitor import Visitor, invent_visitor, visitor_bench

__all__ = ["TeachConfig", "Visitor", "invent_visitor", "teach", "usable_photos", "visitor_bench"]
