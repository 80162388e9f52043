"""The stealth view: the embedding map with the chosen photo on it, and the map of the shipped stealthy δ beside
the map of a δ trained without the stealth term, each with a caption that reads on its own.

A detector for this attack compares a photo with its denoised copy; its score in the shipped report is an AUROC,
a number a class cannot read, so every caption says it in words. Plot titles stay short (a plot can be 400 px
wide); the long text lives in the captions.
"""

from __future__ import annotations

from typing import Any

from sua_demo.core.errors import SuaError
from sua_demo.core.shipped import label, public_name
from sua_demo.engine import Engine, embedding_map
from sua_demo.engine.look import UPLOAD_WHO, Look
from sua_demo.engine.memo import Memo, digest

TITLE_CHARS = 40  # about what fits on one line of a 400 px wide plot
SAME_READING = 0.02  # two AUROCs closer than this are "about the same"
NO_PLAIN = "This model ships no δ trained without the stealth term, so there is no second map to compare."

MAP_KEY = (
    "How to read the map: each dot is one bench photo as the model sees it (its image embedding), laid out in 2-D "
    "so that nearby dots are similar; the axes have no units, only distances matter. Blue: the clean photo. "
    "Red: with δ. Orange: with δ, then denoised. Circles: forget people; squares: retain people."
)
STEALTH_IDEA = (
    "A stealthy δ keeps each red dot on its orange twin, so a detector that compares a photo with its denoised "
    "copy sees little change; the pair may still move away from the blue dot, and that move is what brings the "
    "hidden answers back."
)


def auroc_in_words(auroc: float | None) -> str:
    """A detector's AUROC as a sentence a class can read: the chance that, shown one attacked and one clean photo
    picked at random, the detector gives the attacked one the higher score (ties count half)."""
    if auroc is None:
        return "the shipped report has no detector reading for this δ."
    pct = round(100 * auroc)
    return (
        "given one attacked photo and one clean photo picked at random, a detector that compares each photo with "
        f"its denoised copy picks out the attacked one (the one that changes more when denoised) {pct} % of the "
        f"time — {_verdict(auroc)} (AUROC {auroc:.2f}; 0.5 is chance, 1 is a perfect detector)."
    )


def _verdict(auroc: float) -> str:
    """What an AUROC means for the attacker, in a few words, so the percentage has a meaning attached."""
    if auroc >= 0.99:
        return "it catches δ every time"
    if auroc >= 0.9:
        return "it catches δ almost every time"
    if auroc >= 0.7:
        return "it often notices δ, but far from always"
    if auroc > 0.55:
        return "a little better than tossing a coin"
    if auroc >= 0.45:
        return "no better than tossing a coin: δ is hidden from it"
    return "worse than chance: to it the attacked photos look even more ordinary than clean ones"


def compare_readings(stealthy: float | None, plain: float | None) -> str:
    """One sentence on what the stealth term changed for the detector, the right way round whichever way it went."""
    if stealthy is None or plain is None:
        return "There is no pair of readings to compare."
    s, p = round(100 * stealthy), round(100 * plain)
    if abs(plain - stealthy) < SAME_READING:
        return f"The stealth term makes almost no difference to the detector here ({s} % with it, {p} % without)."
    if plain > stealthy:
        return (
            f"So the stealth term makes δ harder to catch: the detector's success drops from {p} % without it to "
            f"{s} % with it (50 % would mean it cannot tell at all)."
        )
    return (
        f"Here the stealth term did not help: the detector catches the stealthy δ more often ({s} %) than this one "
        f"({p} %)."
    )


def detector_readings(sess: Any) -> dict[str, float]:
    """The shipped report's detector AUROC per noise ('sua' stealthy, 'sua_plain' without the stealth term), from
    split 0, the split whose δ ships with the model."""
    stealth = ((sess.report or {}).get("splits") or [{}])[0].get("stealth", {})
    return {k: float(v["detector_auroc"]) for k, v in stealth.items() if isinstance(v, dict) and "detector_auroc" in v}


def _measured_with(sess: Any, denoiser: str) -> str:
    """Where the reading comes from, and a warning when the map uses another denoiser than the detector did."""
    used = (((sess.report or {}).get("config") or {}).get("attack") or {}).get("denoiser")
    where = "Measured on held-out photos of people δ never saw"
    if used and used != denoiser:
        return f"{where}, with the {used} denoiser (this map uses {denoiser})."
    return f"{where}, with the {used or denoiser} denoiser."


def name_photo(points: list[dict[str, Any]], who: str) -> list[dict[str, Any]]:
    """The points with the visitor's photo named `who`, so the figure's label and the text say which photo it is."""
    return [{**p, "who": who} if p["group"] == embedding_map.VISITOR_GROUP else p for p in points]


def short_title(text: str, limit: int = TITLE_CHARS) -> str:
    """A plot title cut to one line of a narrow plot; whatever is cut is said in the caption."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def map_view(look: Look) -> tuple[Any, str]:
    """The embedding map for the look's noise with its photo (a bench person's or an upload) on it, and a caption
    that names the photo, says where it lands and, for the shipped δ, what a detector makes of it."""
    assert look.points is not None, "map_view needs the look's map stage"
    who = look.name if look.pid is None else f"{look.name}, photo {look.photo}"

    def drawn() -> tuple[Any, str]:
        points = name_photo(look.points, who)
        model = label(public_name(look.sess.name))
        fig = embedding_map.figure(points, title=short_title(f"{model}: where the photo lands"))
        reading = _map_reading(look.sess, look.request.noise_source, look.request.denoiser)
        return fig, map_caption(points, who, look.role, reading)

    if look.pid is None:  # an upload: its own map
        return drawn()
    req = look.request  # a bench photo's map is the same for every visitor: drawn once (a class opens one example)
    return _MAPS.get((look.sess.name, digest(look.noise.delta), req.denoiser, req.noise_source, who, look.role), drawn)


_MAPS: Memo[tuple[Any, str]] = Memo(32)  # a drawn map figure (Plotly: about 60 ms each)


def _map_reading(sess: Any, noise_source: str, denoiser: str) -> str:
    """The detector sentence under the map: the report measured only the shipped δ, so only it gets one."""
    if noise_source != "shipped":
        return "No detector reading: the shipped report measured only the shipped δ."
    auroc = detector_readings(sess).get("sua")
    reading = "Detector reading for this δ: " + auroc_in_words(auroc)
    return reading + (" " + _measured_with(sess, denoiser) if auroc is not None else "")


def map_caption(points: list[dict[str, Any]], who: str, role: str, reading: str) -> str:
    """The map's caption: the photo's name first, then where it lands (the text alternative), the detector, the key."""
    named = "Your photo" if who == UPLOAD_WHO else who
    head = f"**On the map: {named}**" + (f" ({role})" if role else "")
    head += " — the big stars, with arrows going clean → with δ → denoised, and its name written beside them."
    return "\n\n".join([head, embedding_map.describe(points), reading, MAP_KEY + " " + STEALTH_IDEA])


def _budget(noise: Any) -> str:
    """A noise's budget as the app writes it everywhere, in steps of 1/255."""
    return f"ε {noise.eps * 255:.0f}/255"


def stealth_comparison(
    engine: Engine, model: str, denoiser: str = "gaussian", above: bool = False
) -> tuple[Any, Any, str, str]:
    """The shipped stealthy δ beside the same-budget δ trained without the stealth term, each on its own map;
    (stealthy figure or None, plain figure or None, caption for the first, caption for the second). The first
    caption carries the explanation, since it sits beside the plot a reader sees first. `above`: the page's own map
    already shows the shipped δ (its noise source is 'shipped'), so the stealthy map is not drawn a second time and
    its caption points there."""
    sess = engine.session(model)
    if sess.shipped_noise is None:
        raise SuaError(f"{label(public_name(sess.name))} has no shipped noise to compare")
    readings = detector_readings(sess)
    stealthy = engine.embedding_map(sess, sess.shipped_noise, denoiser)
    left = None if above else embedding_map.figure(stealthy, title="with the stealth term")
    where = "the map above" if above else "the shipped δ"
    left_caption = "\n\n".join(
        [
            f"**With the stealth term** ({where}, {_budget(sess.shipped_noise)}): "
            + auroc_in_words(readings.get("sua")),
            _measured_with(sess, denoiser),
            MAP_KEY + " " + STEALTH_IDEA,
            embedding_map.describe(stealthy),
        ]
    )
    if sess.plain_noise is None:
        return left, None, left_caption, NO_PLAIN
    plain = engine.embedding_map(sess, sess.plain_noise, denoiser)
    right = embedding_map.figure(plain, title="without the stealth term")
    right_caption = "\n\n".join(
        [
            f"**Without the stealth term** (same budget, {_budget(sess.plain_noise)}, made only to bring answers "
            "back): " + auroc_in_words(readings.get("sua_plain")),
            compare_readings(readings.get("sua"), readings.get("sua_plain")),
            embedding_map.describe(plain),
        ]
    )
    return left, right, left_caption, right_caption
