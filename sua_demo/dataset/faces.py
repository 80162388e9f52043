"""Procedurally drawn, fictitious cartoon portraits for the synthetic benchmark.

Every "person" is a dict of named attributes (hair, skin, clothes, background, ...);
``render_face`` turns it into a deterministic RGB "photo".  Identities are meant to be
told apart by a tiny vision model working at 64x64 px, so every attribute is drawn
with large, high-contrast shapes and colours, while ``PhotoJitter`` only changes the
framing (shift/scale/tilt), a fake head turn and the lighting, so held-out photo
variants of the same person stay recognisable.

Only numpy and PIL are used; nothing here depends on real people or real photos.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

__all__ = [
    "ATTRIBUTES",
    "IDENTITY_ATTRIBUTES",
    "JITTER_RANGES",
    "PHOTO_ATTRIBUTES",
    "VARIED_RANGES",
    "PhotoJitter",
    "contact_sheet",
    "render_face",
    "sample_attributes",
    "sample_jitters",
    "vary_photo",
]

Colour = tuple[int, int, int]

# Attribute vocabulary.  Order of names and values is part of the sampling
# contract (same seed -> same people), so only append, never reorder.
ATTRIBUTES: dict[str, tuple[str, ...]] = {
    "skin_tone": ("pale", "light", "tan", "brown", "dark"),
    "face_shape": ("oval", "round", "long", "square"),
    "hair_style": ("short", "long", "bald", "bun", "mohawk", "curly", "spiky"),
    "hair_colour": ("black", "brown", "blonde", "red", "grey", "white", "blue", "pink"),
    "eye_colour": ("brown", "blue", "green", "grey"),
    "glasses": ("none", "round", "square", "sunglasses"),
    "beard": ("none", "stubble", "moustache", "goatee", "full"),
    "mouth": ("smile", "neutral", "open", "frown"),
    "clothing": ("tshirt", "suit", "hoodie", "stripes", "turtleneck", "dots"),
    "clothing_colour": ("red", "orange", "yellow", "green", "teal", "blue", "purple", "black"),
    "background": ("sky", "mint", "peach", "lavender", "grey", "stripes", "dots", "checker"),
    "hat": ("none", "cap", "beanie", "top_hat", "crown"),
    "earrings": ("none", "studs", "hoops"),
}

# Ranges used by ``sample_jitters`` (min, max); exposed so callers/tests can reason about them.
JITTER_RANGES: dict[str, tuple[float, float]] = {
    "dx": (-0.08, 0.08),
    "dy": (-0.08, 0.08),
    "scale": (0.88, 1.12),
    "rotation": (-10.0, 10.0),
    "yaw": (-1.0, 1.0),
    "brightness": (0.8, 1.2),
    "contrast": (0.85, 1.15),
}
# The faithful world's photos (docs/world.md): a wider pose, and a directional light of some colour, as a person's
# test photos in MLLMU-Bench differ in pose and lighting. The first world's photos keep JITTER_RANGES.
VARIED_RANGES: dict[str, tuple[float, float]] = {
    **JITTER_RANGES,
    "rotation": (-14.0, 14.0),
    "light_angle": (-math.pi, math.pi),
    "light_strength": (0.0, 0.35),
    "warmth": (-1.0, 1.0),
}
# What changes from one photo of a person to the next in the faithful world: the photo's background, the
# expression and the hat (on or off, and which). The rest of ATTRIBUTES is the person.
PHOTO_ATTRIBUTES = ("background", "mouth", "hat")
IDENTITY_ATTRIBUTES = tuple(a for a in ATTRIBUTES if a not in PHOTO_ATTRIBUTES)

_SKIN: dict[str, Colour] = {
    "pale": (255, 226, 208),
    "light": (238, 194, 158),
    "tan": (208, 156, 108),
    "brown": (150, 98, 62),
    "dark": (90, 56, 36),
}
_HAIR: dict[str, Colour] = {
    "black": (28, 24, 24),
    "brown": (110, 64, 30),
    "blonde": (242, 206, 100),
    "red": (205, 62, 24),
    "grey": (140, 140, 146),
    "white": (246, 246, 240),
    "blue": (40, 90, 228),
    "pink": (246, 104, 186),
}
_EYE: dict[str, Colour] = {
    "brown": (115, 62, 22),
    "blue": (40, 115, 230),
    "green": (40, 165, 70),
    "grey": (125, 135, 145),
}
_CLOTH: dict[str, Colour] = {
    "red": (212, 38, 44),
    "orange": (246, 136, 28),
    "yellow": (246, 216, 40),
    "green": (48, 160, 60),
    "teal": (18, 150, 150),
    "blue": (38, 78, 204),
    "purple": (132, 58, 184),
    "black": (34, 34, 40),
}
# (base colour, pattern colour or None)
_BACKGROUND: dict[str, tuple[Colour, Colour | None]] = {
    "sky": ((145, 200, 246), None),
    "mint": ((164, 232, 194), None),
    "peach": ((252, 198, 158), None),
    "lavender": ((206, 186, 246), None),
    "grey": ((184, 184, 190), None),
    "stripes": ((250, 222, 100), (255, 250, 228)),
    "dots": ((232, 110, 124), (255, 232, 232)),
    "checker": ((76, 140, 84), (204, 236, 204)),
}

# Non-uniform sampling: hats hide the hair style, so most people go bare-headed.
_SAMPLING_WEIGHTS: dict[str, dict[str, float]] = {"hat": {"none": 0.5}}

_SUPERSAMPLE = 2  # draw at 2x, downsample with LANCZOS for antialiasing
_MARGIN = 0.5  # extra canvas (fraction of the visible size) on each side, so jitter never reveals holes

# Body (shoulders) geometry in unit coordinates (visible image = [0, 1] x [0, 1]).
_BODY_X0, _BODY_X1, _BODY_TOP, _BODY_R = 0.11, 0.89, 0.76, 0.17
_HEAD_CX, _HEAD_CY = 0.5, 0.45
_FACE_SIZE: dict[str, tuple[float, float]] = {  # half-width, half-height
    "oval": (0.175, 0.235),
    "round": (0.205, 0.205),
    "long": (0.152, 0.258),
    "square": (0.195, 0.215),
}


@dataclass(frozen=True)
class PhotoJitter:
    """One photo variant of a person: framing, fake head turn and lighting.

    Kept separate from the identity attributes so the benchmark can hold out
    variants of the same person for testing recognition.
    """

    dx: float = 0.0  # horizontal shift, fraction of image size (+ = right)
    dy: float = 0.0  # vertical shift, fraction of image size (+ = down)
    scale: float = 1.0  # zoom around the image centre
    rotation: float = 0.0  # degrees, counter-clockwise head/camera tilt
    yaw: float = 0.0  # -1..1, fake head turn: features slide sideways (+ = to the right)
    brightness: float = 1.0  # multiplicative lighting
    contrast: float = 1.0  # contrast around mid-grey
    light_angle: float = 0.0  # radians: where a directional light comes from (0 = from the right)
    light_strength: float = 0.0  # brightness gained on the lit side and lost on the other, 0 = none
    warmth: float = 0.0  # -1..1, the light's colour: + warmer (redder), - cooler (bluer)

    def __post_init__(self) -> None:
        """Reject values that would produce garbage rather than a plausible photo."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"PhotoJitter.{f.name} must be a finite number, got {value!r}")
        if self.scale <= 0:
            raise ValueError(f"PhotoJitter.scale must be > 0, got {self.scale!r}")
        if not -1.0 <= self.yaw <= 1.0:
            raise ValueError(f"PhotoJitter.yaw must be within [-1, 1], got {self.yaw!r}")
        if self.brightness < 0 or self.contrast < 0:
            raise ValueError("PhotoJitter.brightness and PhotoJitter.contrast must be >= 0")
        if not 0.0 <= self.light_strength <= 1.0 or not -1.0 <= self.warmth <= 1.0:
            raise ValueError("PhotoJitter.light_strength must be within [0, 1] and warmth within [-1, 1]")


_NEUTRAL = PhotoJitter()


# --------------------------------------------------------------------------- sampling


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    return int(value)


def _sampling_probs(name: str) -> np.ndarray:
    values = ATTRIBUTES[name]
    fixed = _SAMPLING_WEIGHTS.get(name, {})
    rest = (1.0 - sum(fixed.values())) / (len(values) - len(fixed))
    return np.array([fixed.get(v, rest) for v in values])


def sample_attributes(
    n: int, rng: np.random.Generator, min_differences: int = 4, over: tuple[str, ...] | None = None
) -> list[dict[str, str]]:
    """Sample ``n`` people whose attribute dicts pairwise differ in >= ``min_differences`` attributes.

    The minimum distance keeps identities visually separable (one differing
    attribute, e.g. eye colour, is too subtle at 64 px).  Values are drawn
    uniformly except ``hat`` (half the people wear none, since hats hide the
    hair style).  Uses rejection sampling; raises ValueError when the
    constraint cannot be met.  Deterministic for a given ``rng`` state.  ``over`` counts the differences in
    those attributes only (the faithful world's identity, where the photo attributes change between photos).
    """
    n = _check_count("n", n)
    min_differences = _check_count("min_differences", min_differences)
    names = list(ATTRIBUTES)
    counted = np.array([a in (over or names) for a in names])
    if min_differences > int(counted.sum()):
        raise ValueError(
            f"min_differences={min_differences} is impossible: there are only {int(counted.sum())} attributes"
        )
    probs = [_sampling_probs(a) for a in names]
    accepted = np.empty((n, len(names)), dtype=np.int64)
    k = 0
    max_consecutive_rejections = 20_000
    rejections = 0
    while k < n:
        batch = np.stack([rng.choice(len(pr), size=256, p=pr) for pr in probs], axis=1)
        for cand in batch:
            if k == 0 or int(((accepted[:k] != cand)[:, counted].sum(axis=1)).min()) >= min_differences:
                accepted[k] = cand
                k += 1
                rejections = 0
                if k == n:
                    break
            else:
                rejections += 1
                if rejections >= max_consecutive_rejections:
                    raise ValueError(
                        f"could not sample {n} people differing in >= {min_differences} attributes: "
                        f"stuck at {k} after {max_consecutive_rejections} consecutive rejections; "
                        "lower n or min_differences"
                    )
    return [{a: ATTRIBUTES[a][int(i)] for a, i in zip(names, row, strict=True)} for row in accepted]


def sample_jitters(
    n: int, rng: np.random.Generator, ranges: dict[str, tuple[float, float]] = JITTER_RANGES
) -> list[PhotoJitter]:
    """``n`` photo variants: the first is the neutral pose, the rest uniform in ``ranges``.

    The neutral first variant gives every person one canonical "passport" photo.
    """
    n = _check_count("n", n)
    out: list[PhotoJitter] = []
    for i in range(n):
        if i == 0:
            out.append(PhotoJitter())
            continue
        values = {k: float(rng.uniform(lo, hi)) for k, (lo, hi) in ranges.items()}
        out.append(PhotoJitter(**values))
    return out


def vary_photo(attributes: dict[str, str], rng: np.random.Generator) -> dict[str, str]:
    """One photo's attributes: the person's, with a background, an expression and a hat drawn for this photo
    (``PHOTO_ATTRIBUTES``, from the same distributions as the people's)."""
    drawn = {a: ATTRIBUTES[a][int(rng.choice(len(ATTRIBUTES[a]), p=_sampling_probs(a)))] for a in PHOTO_ATTRIBUTES}
    return {**attributes, **drawn}


# --------------------------------------------------------------------------- drawing helpers


def _shade(c: Colour, f: float) -> Colour:
    return tuple(int(max(0, min(255, round(v * f)))) for v in c)  # type: ignore[return-value]


def _mix(a: Colour, b: Colour, t: float) -> Colour:
    return tuple(int(round(x + (y - x) * t)) for x, y in zip(a, b, strict=True))  # type: ignore[return-value]


def _luma(c: Colour) -> float:
    return 0.299 * c[0] + 0.587 * c[1] + 0.114 * c[2]


def _outline(c: Colour) -> Colour:
    """Darker rim for a colour (lighter for very dark ones) so shapes keep their edges at 64 px."""
    return _shade(c, 0.6) if _luma(c) > 60 else _mix(c, (255, 255, 255), 0.35)


class _Painter:
    """ImageDraw wrapper working in unit coordinates of the visible image."""

    def __init__(self, image: Image.Image, visible: int, offset: int) -> None:
        self.draw = ImageDraw.Draw(image)
        self.s = visible
        self.o = offset

    def x(self, u: float) -> float:
        return self.o + u * self.s

    def box(self, x0: float, y0: float, x1: float, y1: float) -> tuple[float, float, float, float]:
        return (self.x(x0), self.x(y0), self.x(x1), self.x(y1))

    def pts(self, points: list[tuple[float, float]]) -> list[tuple[float, float]]:
        return [(self.x(a), self.x(b)) for a, b in points]

    def w(self, u: float) -> int:
        return max(1, int(round(u * self.s)))

    def ellipse(
        self,
        cx: float,
        cy: float,
        rx: float,
        ry: float,
        fill: Colour | None = None,
        outline: Colour | None = None,
        width: float = 0.0,
    ) -> None:
        self.draw.ellipse(
            self.box(cx - rx, cy - ry, cx + rx, cy + ry),
            fill=fill,
            outline=outline,
            width=self.w(width) if outline is not None else 0,
        )

    def rect(
        self,
        x0: float,
        y0: float,
        x1: float,
        y1: float,
        fill: Colour | None = None,
        outline: Colour | None = None,
        width: float = 0.0,
        radius: float = 0.0,
    ) -> None:
        self.draw.rounded_rectangle(
            self.box(x0, y0, x1, y1),
            radius=radius * self.s,
            fill=fill,
            outline=outline,
            width=self.w(width) if outline is not None else 0,
        )

    def poly(
        self,
        points: list[tuple[float, float]],
        fill: Colour | None = None,
        outline: Colour | None = None,
        width: float = 0.0,
    ) -> None:
        self.draw.polygon(
            self.pts(points), fill=fill, outline=outline, width=self.w(width) if outline is not None else 0
        )

    def line(self, points: list[tuple[float, float]], fill: Colour, width: float) -> None:
        self.draw.line(self.pts(points), fill=fill, width=self.w(width), joint="curve")

    def arc(
        self, cx: float, cy: float, rx: float, ry: float, start: float, end: float, fill: Colour, width: float
    ) -> None:
        self.draw.arc(self.box(cx - rx, cy - ry, cx + rx, cy + ry), start, end, fill=fill, width=self.w(width))

    def chord(self, cx: float, cy: float, rx: float, ry: float, start: float, end: float, fill: Colour) -> None:
        self.draw.chord(self.box(cx - rx, cy - ry, cx + rx, cy + ry), start, end, fill=fill)


def _ellipse_points(
    cx: float, cy: float, rx: float, ry: float, a0: float, a1: float, n: int
) -> list[tuple[float, float]]:
    """Points on an ellipse arc, angles in degrees (0 = right, 90 = down, PIL convention)."""
    out = []
    for i in range(n):
        a = math.radians(a0 + (a1 - a0) * i / (n - 1))
        out.append((cx + rx * math.cos(a), cy + ry * math.sin(a)))
    return out


@lru_cache(maxsize=64)
def _background(name: str, canvas: int, visible: int) -> Image.Image:
    """Background canvas (cached: it only depends on the name and the size)."""
    base, pattern = _BACKGROUND[name]
    img = Image.new("RGB", (canvas, canvas), base)
    if pattern is None:
        # soft vertical gradient so plain backgrounds still look like a studio backdrop
        arr = np.asarray(img, dtype=np.float32).copy()
        ramp = np.linspace(1.06, 0.9, canvas, dtype=np.float32)[:, None, None]
        arr = np.clip(arr * ramp, 0, 255)
        return Image.fromarray(arr.astype(np.uint8), "RGB")
    yy, xx = np.mgrid[0:canvas, 0:canvas].astype(np.float32) / visible
    if name == "stripes":
        mask = (np.floor(xx / 0.09) % 2) == 0
    elif name == "checker":
        mask = ((np.floor(xx / 0.125) + np.floor(yy / 0.125)) % 2) == 0
    else:  # dots on a staggered grid
        period = 0.14
        row = np.floor(yy / period)
        gx = (xx / period + 0.5 * (row % 2)) % 1.0 - 0.5
        gy = (yy / period) % 1.0 - 0.5
        mask = gx * gx + gy * gy < 0.27**2
    arr = np.empty((canvas, canvas, 3), dtype=np.uint8)
    arr[...] = base
    arr[mask] = pattern
    return Image.fromarray(arr, "RGB")


def _body_inset(y: float) -> float:
    """Horizontal inset of the rounded shoulder outline at height y (for clipping patterns)."""
    corner_y = _BODY_TOP + _BODY_R
    if y >= corner_y:
        return 0.0
    d = corner_y - y
    if d >= _BODY_R:
        return _BODY_R
    return _BODY_R - math.sqrt(_BODY_R * _BODY_R - d * d)


def _pattern_colour(cloth: Colour) -> Colour:
    return (30, 40, 90) if _luma(cloth) > 170 else (250, 250, 250)


def _draw_body(p: _Painter, clothing: str, cloth: Colour) -> None:
    """Shoulders and the parts of the clothing that sit behind the neck."""
    if clothing == "hoodie":  # hood bunched up behind the neck
        p.ellipse(0.5, 0.735, 0.24, 0.1, fill=_shade(cloth, 0.72))
    p.rect(_BODY_X0, _BODY_TOP, _BODY_X1, 1.6, fill=cloth, outline=_outline(cloth), width=0.008, radius=_BODY_R)
    pat = _pattern_colour(cloth)
    if clothing == "stripes":
        y = _BODY_TOP + 0.035
        while y < 1.05:
            y0, y1 = y, y + 0.03
            inset = max(_body_inset(y0), _body_inset(y1)) + 0.006
            p.rect(_BODY_X0 + inset, y0, _BODY_X1 - inset, y1, fill=pat)
            y += 0.065
    elif clothing == "dots":
        r = 0.021
        for j, y in enumerate(np.arange(_BODY_TOP + 0.05, 1.05, 0.065)):
            shift = 0.0325 if j % 2 else 0.0
            for x in np.arange(_BODY_X0 + 0.04 + shift, _BODY_X1 - 0.02, 0.065):
                inset = _body_inset(y - r) + r + 0.01
                if _BODY_X0 + inset <= x <= _BODY_X1 - inset:
                    p.ellipse(float(x), float(y), r, r, fill=pat)
    elif clothing == "suit":
        # white shirt + lapels; tie is drawn in _draw_collar (over the neck)
        p.poly([(0.4, _BODY_TOP - 0.01), (0.6, _BODY_TOP - 0.01), (0.5, 0.98)], fill=(250, 250, 250))
        lapel = _shade(cloth, 0.7) if _luma(cloth) > 60 else _mix(cloth, (255, 255, 255), 0.25)
        p.poly([(0.4, _BODY_TOP - 0.01), (0.5, 0.98), (0.44, 0.98), (0.33, 0.8)], fill=lapel)
        p.poly([(0.6, _BODY_TOP - 0.01), (0.5, 0.98), (0.56, 0.98), (0.67, 0.8)], fill=lapel)
    elif clothing == "hoodie":
        p.rect(0.32, 0.9, 0.68, 1.1, outline=_shade(cloth, 0.6), width=0.01, radius=0.04)


def _draw_collar(p: _Painter, clothing: str, cloth: Colour, neck: Colour, neck_top: float) -> None:
    """Clothing parts drawn over the neck."""
    if clothing in ("tshirt", "stripes", "dots"):
        p.chord(0.5, _BODY_TOP - 0.005, 0.085, 0.06, 0, 180, fill=neck)
        p.arc(0.5, _BODY_TOP - 0.005, 0.085, 0.06, 0, 180, fill=_outline(cloth), width=0.012)
    elif clothing == "turtleneck":
        col = _shade(cloth, 0.85) if _luma(cloth) > 60 else _mix(cloth, (255, 255, 255), 0.15)
        p.rect(
            0.425, neck_top + 0.02, 0.575, _BODY_TOP + 0.03, fill=col, outline=_outline(cloth), width=0.007, radius=0.02
        )
        for y in (neck_top + 0.045, neck_top + 0.07):
            p.line([(0.435, y), (0.565, y)], fill=_outline(cloth), width=0.006)
    elif clothing == "suit":
        tie = (200, 30, 40) if cloth[0] < 150 or cloth[1] > 120 else (30, 40, 120)
        p.poly(
            [
                (0.475, _BODY_TOP - 0.01),
                (0.525, _BODY_TOP - 0.01),
                (0.515, _BODY_TOP + 0.03),
                (0.485, _BODY_TOP + 0.03),
            ],
            fill=tie,
        )
        p.poly(
            [(0.485, _BODY_TOP + 0.03), (0.515, _BODY_TOP + 0.03), (0.535, 0.93), (0.5, 0.97), (0.465, 0.93)], fill=tie
        )
    elif clothing == "hoodie":
        p.chord(0.5, _BODY_TOP - 0.005, 0.08, 0.055, 0, 180, fill=neck)
        for x in (0.46, 0.54):
            p.line([(x, _BODY_TOP + 0.03), (x - 0.004, 0.9)], fill=(245, 245, 245), width=0.01)


def _draw_back_hair(p: _Painter, style: str, hair: Colour, cx: float, cy: float, rx: float, ry: float) -> None:
    if style in ("short", "bun", "spiky"):
        p.ellipse(cx, cy - ry * 0.42, rx * 1.07, ry * 0.7, fill=hair)
    if style == "bun":
        p.ellipse(cx, cy - ry * 1.12, rx * 0.45, rx * 0.42, fill=hair, outline=_outline(hair), width=0.006)
    elif style == "long":
        p.rect(cx - rx * 1.22, cy - ry * 1.08, cx + rx * 1.22, 0.9, fill=hair, radius=rx * 0.9)
    elif style == "curly":
        for a in range(150, 391, 20):
            t = math.radians(a)
            p.ellipse(
                cx + rx * 1.02 * math.cos(t),
                cy + ry * 0.98 * math.sin(t),
                rx * 0.3,
                rx * 0.3,
                fill=hair,
                outline=_outline(hair),
                width=0.005,
            )


def _draw_front_hair(
    p: _Painter, style: str, hair: Colour, cx: float, cy: float, rx: float, ry: float, yaw: float, skin: Colour
) -> None:
    hx = cx + yaw * rx * 0.12
    if style in ("short", "bun", "long"):
        p.chord(hx, cy - ry * 0.45, rx * 1.02, ry * 0.62, 180, 360, fill=hair)
        if style == "short":  # side parting
            p.line(
                [(hx - rx * 0.35, cy - ry * 0.98), (hx - rx * 0.45, cy - ry * 0.5)], fill=_outline(hair), width=0.008
            )
    if style == "long":
        for sgn in (-1, 1):
            p.poly(
                [
                    (cx + sgn * rx * 1.04, cy - ry * 0.6),
                    (cx + sgn * rx * 0.78, cy - ry * 0.55),
                    (cx + sgn * rx * 0.86, cy + ry * 0.35),
                    (cx + sgn * rx * 1.08, cy + ry * 0.95),
                    (cx + sgn * rx * 1.2, cy + ry * 0.5),
                ],
                fill=hair,
            )
    elif style == "bald":
        p.ellipse(cx - rx * 0.25, cy - ry * 0.72, rx * 0.22, ry * 0.1, fill=_mix(skin, (255, 255, 255), 0.35))
        for sgn in (-1, 1):  # side tufts keep the hair colour visible
            p.ellipse(cx + sgn * rx * 0.96, cy - ry * 0.22, rx * 0.16, ry * 0.24, fill=hair)
    elif style == "mohawk":
        pts = [(hx - rx * 0.26, cy - ry * 0.55)]
        for i in range(5):
            t = i / 4
            pts.append((hx - rx * 0.26 + rx * 0.52 * t - rx * 0.06, cy - ry * (1.25 + 0.25 * (1 - abs(2 * t - 1)))))
            pts.append((hx - rx * 0.26 + rx * 0.52 * t + rx * 0.06, cy - ry * 1.0))
        pts.append((hx + rx * 0.26, cy - ry * 0.55))
        p.poly(pts, fill=hair, outline=_outline(hair), width=0.005)
    elif style == "curly":
        for a in range(195, 346, 25):
            t = math.radians(a)
            p.ellipse(
                hx + rx * 0.82 * math.cos(t),
                cy + ry * 0.78 * math.sin(t),
                rx * 0.24,
                rx * 0.24,
                fill=hair,
                outline=_outline(hair),
                width=0.005,
            )
    elif style == "spiky":
        pts: list[tuple[float, float]] = []
        n = 7
        for i in range(n + 1):
            a = math.radians(195 + 150 * i / n)
            pts.append((hx + rx * 1.0 * math.cos(a), cy - ry * 0.35 + ry * 0.7 * math.sin(a)))
            if i < n:
                am = math.radians(195 + 150 * (i + 0.5) / n)
                pts.append((hx + rx * 1.3 * math.cos(am), cy - ry * 0.35 + ry * 1.0 * math.sin(am)))
        p.poly(pts, fill=hair, outline=_outline(hair), width=0.005)


def _draw_head(p: _Painter, shape: str, skin: Colour, cx: float, cy: float, rx: float, ry: float) -> None:
    rim = _shade(skin, 0.72)
    if shape == "square":
        p.rect(cx - rx, cy - ry, cx + rx, cy + ry, fill=skin, outline=rim, width=0.007, radius=rx * 0.45)
    else:
        p.ellipse(cx, cy, rx, ry, fill=skin, outline=rim, width=0.007)


def _draw_eyes(p: _Painter, attrs: dict[str, str], hair: Colour, fx: float, ey: float, rx: float, yaw: float) -> None:
    iris = _EYE[attrs["eye_colour"]]
    brow_col = hair if attrs["hair_colour"] not in ("white", "blonde") else _shade(hair, 0.7)
    for sgn in (-1, 1):
        ex = fx + sgn * rx * 0.42
        # the eye on the side the head turns towards gets narrower (foreshortening)
        squash = 1.0 - 0.35 * max(0.0, sgn * yaw)
        w = 0.042 * squash
        p.ellipse(ex, ey, w, 0.03, fill=(255, 255, 255), outline=(40, 30, 30), width=0.005)
        p.ellipse(ex + yaw * 0.01, ey, min(0.025, w * 0.8), 0.025, fill=iris)
        p.ellipse(ex + yaw * 0.012, ey, 0.009, 0.009, fill=(10, 10, 10))
        p.ellipse(ex + yaw * 0.012 - 0.006, ey - 0.007, 0.004, 0.004, fill=(255, 255, 255))
        outer, inner = (ex + sgn * w * 1.05, ey - 0.058), (ex - sgn * w * 1.05, ey - 0.05)
        p.line([outer, inner], fill=brow_col, width=0.014)


def _draw_beard(
    p: _Painter,
    beard: str,
    hair: Colour,
    skin: Colour,
    cx: float,
    cy: float,
    rx: float,
    ry: float,
    fx: float,
    my: float,
) -> None:
    if beard == "none":
        return
    if beard == "stubble":
        col = _mix(skin, hair, 0.3) if _luma(hair) < _luma(skin) else _mix(skin, (60, 45, 40), 0.3)
        outer = _ellipse_points(cx, cy, rx * 0.97, ry * 0.97, 5, 175, 24)
        inner = _ellipse_points(fx, my - 0.005, rx * 0.5, ry * 0.2, 175, 5, 12)
        p.poly(outer + inner, fill=col)
        dot = _mix(col, (40, 30, 30), 0.35)
        for x, y in _ellipse_points(cx, cy + ry * 0.05, rx * 0.8, ry * 0.75, 30, 150, 9):
            p.ellipse(x, y, 0.006, 0.006, fill=dot)
        return
    bcol = hair
    rim = _outline(hair)
    if beard == "full":
        outer = _ellipse_points(cx, cy, rx * 1.04, ry * 1.1, 0, 180, 32)
        inner = [(fx - rx * 0.45, cy + 0.055), (fx, cy + 0.095), (fx + rx * 0.45, cy + 0.055)]
        p.poly(outer + inner[::-1], fill=bcol, outline=rim, width=0.005)
    if beard in ("moustache", "full", "goatee"):
        mw = 0.07 if beard != "goatee" else 0.05
        p.poly(
            [
                (fx - mw, my - 0.005),
                (fx - mw * 0.5, my - 0.035),
                (fx, my - 0.025),
                (fx + mw * 0.5, my - 0.035),
                (fx + mw, my - 0.005),
                (fx, my - 0.012),
            ],
            fill=bcol,
            outline=rim,
            width=0.004,
        )
    if beard == "goatee":
        p.poly(
            [
                (fx - 0.04, my + 0.028),
                (fx + 0.04, my + 0.028),
                (fx + 0.02, cy + ry * 1.06),
                (fx - 0.02, cy + ry * 1.06),
            ],
            fill=bcol,
            outline=rim,
            width=0.004,
        )


def _draw_mouth(p: _Painter, mouth: str, fx: float, my: float) -> None:
    lip = (150, 30, 40)
    if mouth == "smile":
        p.arc(fx, my - 0.03, 0.06, 0.045, 25, 155, fill=lip, width=0.014)
    elif mouth == "neutral":
        p.line([(fx - 0.045, my), (fx + 0.045, my)], fill=lip, width=0.013)
    elif mouth == "open":
        p.chord(fx, my - 0.01, 0.055, 0.045, 0, 180, fill=(110, 20, 30))
        p.rect(fx - 0.04, my - 0.01, fx + 0.04, my + 0.005, fill=(255, 255, 255))
    elif mouth == "frown":
        p.arc(fx, my + 0.035, 0.055, 0.035, 205, 335, fill=lip, width=0.014)


def _draw_glasses(p: _Painter, glasses: str, fx: float, ey: float, rx: float, cx: float) -> None:
    if glasses == "none":
        return
    frame = (25, 25, 30)
    dx = rx * 0.42
    for sgn in (-1, 1):
        ex = fx + sgn * dx
        if glasses == "round":
            p.ellipse(ex, ey, 0.052, 0.052, outline=frame, width=0.011)
        elif glasses == "square":
            p.rect(ex - 0.058, ey - 0.042, ex + 0.058, ey + 0.042, outline=frame, width=0.012, radius=0.008)
        else:
            p.rect(
                ex - 0.06,
                ey - 0.038,
                ex + 0.06,
                ey + 0.045,
                fill=(15, 15, 25),
                outline=frame,
                width=0.008,
                radius=0.022,
            )
            p.line([(ex - 0.03, ey - 0.015), (ex - 0.012, ey - 0.028)], fill=(150, 150, 170), width=0.008)
        # temple arm towards the ear
        half = 0.052 if glasses == "round" else 0.058
        p.line([(ex + sgn * half, ey - 0.01), (cx + sgn * rx * 0.99, ey - 0.015)], fill=frame, width=0.009)
    bridge_half = dx - (0.052 if glasses == "round" else 0.058)
    p.line([(fx - bridge_half, ey - 0.01), (fx + bridge_half, ey - 0.01)], fill=frame, width=0.01)


def _draw_hat(p: _Painter, hat: str, cx: float, cy: float, rx: float, ry: float, yaw: float) -> None:
    top = cy - ry
    if hat == "cap":
        col = (30, 60, 150)
        p.chord(cx, cy - ry * 0.45, rx * 1.1, ry * 0.78, 180, 360, fill=col)
        brim_dir = 1 if yaw >= 0 else -1
        p.ellipse(cx + brim_dir * rx * 0.75, cy - ry * 0.47, rx * 0.85, 0.03, fill=_shade(col, 0.7))
        p.ellipse(cx, top - ry * 0.2, 0.015, 0.012, fill=(245, 245, 245))
    elif hat == "beanie":
        col = (205, 40, 60)
        p.chord(cx, cy - ry * 0.4, rx * 1.1, ry * 0.9, 180, 360, fill=col)
        p.rect(
            cx - rx * 1.12,
            cy - ry * 0.55,
            cx + rx * 1.12,
            cy - ry * 0.3,
            fill=_mix(col, (255, 255, 255), 0.3),
            radius=0.02,
        )
        p.ellipse(cx, cy - ry * 1.33, 0.05, 0.05, fill=(250, 250, 250), outline=(200, 200, 200), width=0.005)
    elif hat == "top_hat":
        col = (22, 22, 26)
        brim_y = cy - ry * 0.72
        p.rect(
            cx - rx * 0.78,
            brim_y - 0.25,
            cx + rx * 0.78,
            brim_y,
            fill=col,
            outline=(90, 90, 100),
            width=0.006,
            radius=0.01,
        )
        p.rect(cx - rx * 0.78, brim_y - 0.06, cx + rx * 0.78, brim_y - 0.025, fill=(200, 30, 40))
        p.ellipse(cx, brim_y, rx * 1.35, 0.028, fill=col, outline=(90, 90, 100), width=0.006)
    elif hat == "crown":
        gold = (250, 200, 30)
        base = cy - ry * 0.72
        w = rx * 0.9
        pts = [
            (cx - w, base),
            (cx - w, base - 0.12),
            (cx - w * 0.5, base - 0.06),
            (cx, base - 0.14),
            (cx + w * 0.5, base - 0.06),
            (cx + w, base - 0.12),
            (cx + w, base),
        ]
        p.poly(pts, fill=gold, outline=(170, 120, 10), width=0.007)
        for x, c in ((cx - w * 0.5, (220, 30, 50)), (cx, (40, 90, 230)), (cx + w * 0.5, (30, 170, 80))):
            p.ellipse(x, base - 0.03, 0.017, 0.017, fill=c)


def _validate(attributes: dict[str, str]) -> None:
    if not isinstance(attributes, dict):
        raise ValueError(f"attributes must be a dict, got {type(attributes).__name__}")
    for name, value in attributes.items():
        if name not in ATTRIBUTES:
            raise ValueError(f"unknown attribute {name!r}; known: {', '.join(ATTRIBUTES)}")
        if value not in ATTRIBUTES[name]:
            raise ValueError(f"unknown value {value!r} for attribute {name!r}; allowed: {', '.join(ATTRIBUTES[name])}")
    missing = [a for a in ATTRIBUTES if a not in attributes]
    if missing:
        raise ValueError(f"missing attribute(s): {', '.join(missing)}")


def _draw_person(img: Image.Image, attrs: dict[str, str], visible: int, offset: int, yaw: float) -> None:
    p = _Painter(img, visible, offset)
    skin = _SKIN[attrs["skin_tone"]]
    hair = _HAIR[attrs["hair_colour"]]
    cloth = _CLOTH[attrs["clothing_colour"]]
    style = attrs["hair_style"]
    clothing = attrs["clothing"]
    rx, ry = _FACE_SIZE[attrs["face_shape"]]
    cx, cy = _HEAD_CX, _HEAD_CY
    fx = cx + yaw * rx * 0.3  # facial features slide sideways with the head turn
    ey = cy - 0.01
    my = cy + ry * 0.58
    neck = _shade(skin, 0.86)
    neck_top = cy + ry * 0.55

    _draw_body(p, clothing, cloth)
    _draw_back_hair(p, style, hair, cx, cy, rx, ry)
    p.rect(cx - 0.058, neck_top, cx + 0.058, _BODY_TOP + 0.04, fill=neck)
    _draw_collar(p, clothing, cloth, neck, neck_top)
    # ears: the one on the side the head turns towards shrinks away
    for sgn in (-1, 1):
        vis = 1.0 - 0.8 * max(0.0, sgn * yaw)
        ex = cx + sgn * rx * (0.97 - 0.06 * yaw * sgn)
        p.ellipse(ex, cy + 0.015, 0.036 * vis + 0.004, 0.052, fill=skin, outline=_shade(skin, 0.72), width=0.006)
    _draw_head(p, attrs["face_shape"], skin, cx, cy, rx, ry)
    _draw_front_hair(p, style, hair, cx, cy, rx, ry, yaw, skin)
    _draw_eyes(p, attrs, hair, fx, ey, rx, yaw)
    _draw_beard(p, attrs["beard"], hair, skin, cx, cy, rx, ry, fx, my)
    nx = fx + yaw * rx * 0.12
    nose = _shade(skin, 0.72)
    p.line([(nx, ey + 0.03), (nx - 0.012 + 0.01 * yaw, cy + 0.075), (nx + 0.012, cy + 0.078)], fill=nose, width=0.009)
    _draw_mouth(p, attrs["mouth"], fx, my)
    if attrs["mouth"] in ("smile", "open"):  # rosy cheeks make expressions readable at low res
        for sgn in (-1, 1):
            p.ellipse(fx + sgn * rx * 0.58, cy + 0.06, 0.03, 0.018, fill=_mix(skin, (240, 90, 100), 0.35))
    _draw_glasses(p, attrs["glasses"], fx, ey, rx, cx)
    if attrs["earrings"] != "none" and not (style == "long" and attrs["earrings"] == "studs"):
        gold = (252, 204, 40)
        for sgn in (-1, 1):
            vis = 1.0 - 0.8 * max(0.0, sgn * yaw)
            if vis < 0.35:
                continue
            ex = cx + sgn * rx * (0.97 - 0.06 * yaw * sgn)
            if attrs["earrings"] == "studs":
                p.ellipse(ex, cy + 0.065, 0.019, 0.019, fill=gold, outline=(160, 110, 10), width=0.004)
            else:
                p.ellipse(ex, cy + 0.09, 0.026, 0.03, outline=gold, width=0.01)
    _draw_hat(p, attrs["hat"], cx, cy, rx, ry, yaw)


def _apply_lighting(img: Image.Image, brightness: float, contrast: float) -> Image.Image:
    """Contrast around mid-grey, then brightness, via a lookup table (fast, exact per channel)."""
    v = np.arange(256, dtype=np.float64)
    lut = np.clip(((v - 128.0) * contrast + 128.0) * brightness + 0.5, 0, 255).astype(np.uint8)
    return img.point(lut.tolist() * 3)


def _apply_directional_light(img: Image.Image, jitter: PhotoJitter) -> Image.Image:
    """A light from ``light_angle``: brightness rises linearly towards the lit side by up to ``light_strength``
    and falls as much on the other; ``warmth`` tints it (red up and blue down, or the reverse) on the lit side."""
    size = img.size[0]
    u = (np.arange(size, dtype=np.float64) + 0.5) / size * 2 - 1
    ramp = np.cos(jitter.light_angle) * u[None, :] + np.sin(jitter.light_angle) * u[:, None]  # -1.4..1.4
    gain = 1 + jitter.light_strength * ramp / math.sqrt(2)
    tint = 0.08 * jitter.warmth * (1 + ramp / math.sqrt(2)) / 2
    rgb = np.asarray(img, dtype=np.float64) * gain[..., None]
    rgb *= np.array([1.0, 1.0, 1.0])[None, None, :] + tint[..., None] * np.array([1.0, 0.0, -1.0])[None, None, :]
    return Image.fromarray(np.clip(rgb + 0.5, 0, 255).astype(np.uint8))


def render_face(attributes: dict[str, str], jitter: PhotoJitter = _NEUTRAL, size: int = 128) -> Image.Image:
    """Render one person as an RGB ``size`` x ``size`` "photo", deterministically.

    Draws background, shoulders/clothing, head, hair, eyes, brows, nose, mouth,
    beard, glasses, earrings and hat at 2x on an oversized canvas, applies the
    jitter (affine framing + lighting) and downsamples with LANCZOS.  Same
    inputs always give identical pixels.  ``attributes`` must name every key
    of ``ATTRIBUTES`` with an allowed value.
    """
    _validate(attributes)
    if not isinstance(jitter, PhotoJitter):
        raise ValueError(f"jitter must be a PhotoJitter, got {type(jitter).__name__}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 16:
        raise ValueError(f"size must be an int >= 16, got {size!r}")
    size = int(size)
    visible = size * _SUPERSAMPLE
    offset = int(round(visible * _MARGIN))
    canvas = visible + 2 * offset
    img = _background(attributes["background"], canvas, visible).copy()
    _draw_person(img, attributes, visible, offset, float(jitter.yaw))

    if jitter.dx == 0 and jitter.dy == 0 and jitter.scale == 1 and jitter.rotation == 0:
        img = img.crop((offset, offset, offset + visible, offset + visible))
    else:
        # inverse map: output pixel -> canvas pixel (rotation about the image centre)
        th = math.radians(jitter.rotation)
        cos, sin = math.cos(th) / jitter.scale, math.sin(th) / jitter.scale
        ox = visible / 2 + jitter.dx * visible
        oy = visible / 2 + jitter.dy * visible
        cin = offset + visible / 2
        a, b, d, e = cos, -sin, sin, cos
        c = cin - a * ox - b * oy
        f = cin - d * ox - e * oy
        base = _BACKGROUND[attributes["background"]][0]
        img = img.transform(
            (visible, visible),
            Image.Transform.AFFINE,
            (a, b, c, d, e, f),
            resample=Image.Resampling.BILINEAR,
            fillcolor=base,
        )
    img = img.resize((size, size), Image.Resampling.LANCZOS)
    if jitter.brightness != 1 or jitter.contrast != 1:
        img = _apply_lighting(img, float(jitter.brightness), float(jitter.contrast))
    if jitter.light_strength != 0 or jitter.warmth != 0:
        img = _apply_directional_light(img, jitter)
    return img


# --------------------------------------------------------------------------- contact sheet

_PAD = 4


def contact_sheet(
    images: list[Image.Image], labels: list[str] | None = None, columns: int = 10, cell: int = 96
) -> Image.Image:
    """Grid of ``cell`` px thumbnails (optional labels underneath) for eyeballing a benchmark.

    Layout: ``min(columns, len(images))`` columns, ``ceil(len/columns)`` rows,
    4 px padding around every cell, plus a 14 px label strip per row when
    labels are given.  Labels too wide for a cell are truncated with "...".
    """
    if not images:
        raise ValueError("contact_sheet needs at least one image")
    if labels is not None and len(labels) != len(images):
        raise ValueError(f"got {len(labels)} labels for {len(images)} images")
    if isinstance(columns, bool) or not isinstance(columns, int) or columns < 1:
        raise ValueError(f"columns must be an int >= 1, got {columns!r}")
    if isinstance(cell, bool) or not isinstance(cell, int) or cell < 8:
        raise ValueError(f"cell must be an int >= 8, got {cell!r}")
    cols = min(columns, len(images))
    rows = -(-len(images) // cols)
    label_h = 14 if labels is not None else 0
    width = cols * (cell + _PAD) + _PAD
    height = rows * (cell + label_h + _PAD) + _PAD
    sheet = Image.new("RGB", (width, height), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default()
    for i, im in enumerate(images):
        r, c = divmod(i, cols)
        x0 = _PAD + c * (cell + _PAD)
        y0 = _PAD + r * (cell + label_h + _PAD)
        thumb = im.convert("RGB")
        thumb.thumbnail((cell, cell), Image.Resampling.LANCZOS)
        sheet.paste(thumb, (x0 + (cell - thumb.width) // 2, y0 + (cell - thumb.height) // 2))
        if labels is not None:
            text = str(labels[i])
            if draw.textlength(text, font=font) > cell:
                while text and draw.textlength(text + "...", font=font) > cell:
                    text = text[:-1]
                text += "..."
            draw.text((x0, y0 + cell + 1), text, fill=(0, 0, 0), font=font)
    return sheet
