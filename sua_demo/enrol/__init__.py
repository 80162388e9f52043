"""A visitor's own person: their photos and facts made a bench person (`visitor`), checked (`photos`), and taught
to a model's language model with LoRA, the tower and projector untouched (`teach`). The lifecycle that unlearns
and attacks them is one floor up (`sua_demo/lifecycle.py`)."""

from sua_demo.enrol.photos import usable_photos
from sua_demo.enrol.teach import TeachConfig, teach
from sua_demo.enrol.visitor import Visitor, invent_visitor, visitor_bench

__all__ = ["TeachConfig", "Visitor", "invent_visitor", "teach", "usable_photos", "visitor_bench"]
