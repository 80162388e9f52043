"""A typographic prompt (FigStep's idea): the person's name written into the photo, in a white band at its foot,
and the bench's own image questions. A model that reads text in images may take the name as a key its
unlearning, fitted on faces, never closed; one that cannot read gains nothing, which the control shows too."""

from __future__ import annotations

from PIL import Image, ImageDraw, ImageFont

from sua_demo.audit.base import AUDITS, AuditContext, AuditMethod, answers_on_drawn
from sua_demo.models.examples import Example


def with_caption(photo: Image.Image, text: str) -> Image.Image:
    """The photo with `text` in black on a white band across its lowest sixth, as large as fits its width."""
    out = photo.convert("RGB").copy()
    w, h = out.size
    band = max(10, h // 6)
    draw = ImageDraw.Draw(out)
    draw.rectangle((0, h - band, w, h), fill="white")
    size = band - 2
    font = ImageFont.load_default(size)
    while size > 6 and draw.textlength(text, font=font) > w - 4:
        size -= 1
        font = ImageFont.load_default(size)
    draw.text((w / 2, h - band / 2), text, fill="black", font=font, anchor="mm")
    return out


@AUDITS.register("typographic")
class Typographic(AuditMethod):
    def answers(self, ctx: AuditContext, role: str) -> tuple[list[Example], list[str]]:
        return answers_on_drawn(ctx, role, lambda person, photo: with_caption(person.photos[photo], person.name))
