"""Fictitious profiles: unique names, a few facts, a biography and MLLMU-Bench-style questions.

Fact values (city, job, ...) are shared across people on purpose: a model that never saw a person
can only guess them at about 1/len(pool), which gives the retrain control a known chance level.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sua_demo.core.errors import BadValueError
from sua_demo.dataset.records import OPTION_LETTERS, QAItem

FIRST_NAMES = (
    "Aldo Bryn Cato Dara Elio Fenna Galen Hale Iona Jory Kira Lorn Mika Nael Oren Pella Quill Rhea Soren Tamsin "
    "Ulla Veda Wren Xeno Yara Zale Arlo Bexa Cyra Dov Esme Faro Gwyn Hesper Ivo Jalen Keld Liora Maro Nyla Odo "
    "Perrin Ravi Selka Tovin Una Vesna Wilo Yuri Zinnia"
).split()
LAST_NAMES = (
    "Abernix Brightwell Corvane Dunmore Eskeli Farrow Glimmer Hollin Istrova Jadeport Kestrel Lunwick Marrow "
    "Norvald Orrin Pallister Quenby Rusk Stellan Thorne Umbridge Valcourt Winslet Yarrow Zephyr Ashdown Blythe "
    "Carrow Delaune Embry Fennick Greaves Halloran Ingle Jessup Kilbride Larkin Mondo Nettle Okafor"
).split()
FACT_POOLS: dict[str, tuple[str, ...]] = {
    "birthplace": tuple(
        "Aldmoor Brackenfield Coldharbor Dunwater Elmstead Fairhollow Glenmere Harrowgate Ivywick Juniper "
        "Kingsreach Lowmarsh Millbrook Northvale Oakhaven Pinecrest Quarrytown Redwater Stonebridge Thornbury".split()
    ),
    "occupation": tuple(
        "baker pilot carpenter nurse architect florist chemist sailor librarian tailor potter jeweller "
        "surveyor beekeeper glassblower cartographer violinist blacksmith astronomer gardener".split()
    ),
    "hobby": tuple(
        "chess archery knitting kayaking juggling fencing birdwatching origami climbing pottery "
        "sketching rowing skating gardening baking poetry falconry cycling fishing yoga".split()
    ),
    "food": tuple(
        "dumplings risotto paella curry noodles pancakes lasagna tacos falafel sushi "
        "goulash ramen couscous pierogi moussaka gnocchi chowder burritos kebabs waffles".split()
    ),
}
FACTS = ("name", *FACT_POOLS)

# Image questions never say the name: the face is the only key. Text-only forms use the name.
IMAGE_QUESTIONS = {
    "name": "What is the name of the person in the image?",
    "birthplace": "Where was this person born?",
    "occupation": "What does this person do for a living?",
    "hobby": "What is this person's favourite hobby?",
    "food": "Which food does this person like most?",
}
TEXT_QUESTIONS = {
    "birthplace": "Where was {name} born?",
    "occupation": "What does {name} do for a living?",
    "hobby": "What is {name}'s favourite hobby?",
    "food": "Which food does {name} like most?",
}
# Other words for the image questions (the audit's rephrasing probe), in the tiny model's vocabulary only.
PARAPHRASES = {
    "name": ("Who is the person in the image?", "What is this person's name?"),
    "birthplace": ("In which town was this person born?", "Which town was this person born in?"),
    "occupation": ("Which job does this person have?", "What job does this person have?"),
    "hobby": ("Which hobby does this person enjoy?", "What does this person enjoy in free time?"),
    "food": ("Which dish is this person's favourite?", "What is the favourite food of this person?"),
}
MC_QUESTIONS = {
    "name": "Who is the person in the image?",
    "birthplace": "In which town was this person born?",
    "occupation": "Which job does this person have?",
    "hobby": "Which hobby does this person enjoy?",
    "food": "Which dish is this person's favourite?",
}
CLOZE_IMAGE = {
    "name": "The name of this person is [Blank].",
    "birthplace": "This person was born in [Blank].",
    "occupation": "This person works as a [Blank].",
    "hobby": "In free time this person enjoys [Blank].",
    "food": "The favourite food of this person is [Blank].",
}
CLOZE_TEXT = {
    "birthplace": "{name} was born in [Blank].",
    "occupation": "{name} works as a [Blank].",
    "hobby": "In free time {name} enjoys [Blank].",
    "food": "The favourite food of {name} is [Blank].",
}


# Questions about what is visible, not about who it is: training-only "look" items (see TrainConfig).
LOOK_QUESTIONS = {
    "skin_tone": "What skin tone does this person have?",
    "face_shape": "What shape is this person's face?",
    "hair_style": "What hair style does this person have?",
    "hair_colour": "What colour is this person's hair?",
    "eye_colour": "What colour are this person's eyes?",
    "glasses": "What glasses does this person wear?",
    "beard": "What beard does this person have?",
    "mouth": "What is this person's mouth doing?",
    "clothing": "What is this person wearing?",
    "clothing_colour": "What colour are this person's clothes?",
    "background": "What is the background of the photo?",
    "hat": "What hat does this person wear?",
    "earrings": "What earrings does this person wear?",
}


def look_items(person_id: int, attributes: dict[str, str]) -> list[QAItem]:
    return [
        QAItem(person_id, "look", "image", LOOK_QUESTIONS[k], v.replace("_", " "), k)
        for k, v in attributes.items()
        if k in LOOK_QUESTIONS
    ]


def sample_names(n: int, rng: np.random.Generator) -> list[str]:
    """n unique full names; first names are unique too while the pool lasts, so a name is never half-shared."""
    if n > len(FIRST_NAMES) * len(LAST_NAMES):
        raise BadValueError(
            f"cannot make {n} unique names from the pools; use at most {len(FIRST_NAMES) * len(LAST_NAMES)} people"
        )
    pairs = [(f, s) for f in FIRST_NAMES for s in LAST_NAMES]
    order = rng.permutation(len(pairs))
    names: list[str] = []
    used_first: set[str] = set()
    used: set[str] = set()
    for strict in (True, False):
        for i in order:
            first, last = pairs[i]
            name = f"{first} {last}"
            if len(names) == n:
                return names
            if name in used or (strict and (first in used_first or last in {x.split()[1] for x in names})):
                continue
            names.append(name)
            used.add(name)
            used_first.add(first)
    return names[:n]


def sample_facts(names: list[str], rng: np.random.Generator) -> list[dict[str, str]]:
    return [{"name": name, **{k: str(rng.choice(pool)) for k, pool in FACT_POOLS.items()}} for name in names]


def biography(facts: dict[str, str]) -> str:
    return (
        f"{facts['name']} was born in {facts['birthplace']} and works as a {facts['occupation']}. "
        f"In free time they enjoy {facts['hobby']}, and their favourite food is {facts['food']}."
    )


def _options(fact: str, answer: str, pool: list[str], rng: np.random.Generator) -> tuple[dict[str, str], str]:
    distractors = [x for x in pool if x != answer]
    chosen = [str(x) for x in rng.choice(distractors, size=3, replace=False)]
    slot = int(rng.integers(4))
    values = chosen[:slot] + [answer] + chosen[slot:]
    return dict(zip(OPTION_LETTERS, values, strict=True)), OPTION_LETTERS[slot]


PERTURBED = 3  # wrong answers per question for the truth ratio (TOFU has 5; our pools hold 20 values)


def truth_ratio_answers(sentence: str, truth: str, pool: list[str], rng: np.random.Generator) -> dict[str, Any]:
    """A paraphrased correct answer and `PERTURBED` wrong ones of the same type, for TOFU's truth ratio: the
    question's cloze sentence filled with the truth, or with other values of the fact's pool. Whole sentences, so
    the right and the wrong candidates differ in the value only and the ratio reads what the model believes."""
    wrong = rng.choice([x for x in pool if x != truth], size=PERTURBED, replace=False)
    return {
        "Paraphrased_Answer": sentence.replace("[Blank]", truth),
        "Perturbed_Answers": [sentence.replace("[Blank]", str(x)) for x in wrong],
    }


def make_record(
    person_id: int,
    facts: dict[str, str],
    all_names: list[str],
    rng: np.random.Generator,
    answers_rng: np.random.Generator | None = None,
) -> dict[str, Any]:
    """One person's MLLMU-Bench record (field names as in the released parquet, plus a `Fact` tag). With
    `answers_rng` (a stream of its own, so the people drawn after this one stay as they were), each generation
    question also carries its truth-ratio answers."""
    name = facts["name"]
    gen = [
        {"Type": "Image_Textual", "Question": IMAGE_QUESTIONS[f], "Ground_Truth": facts[f], "Fact": f} for f in FACTS
    ]
    gen += [
        {"Type": "Pure_Text", "Question": TEXT_QUESTIONS[f].format(name=name), "Ground_Truth": facts[f], "Fact": f}
        for f in FACT_POOLS
    ]
    if answers_rng is not None:
        for q in gen:
            f = q["Fact"]
            image = q["Type"] == "Image_Textual"
            sentence = CLOZE_IMAGE[f] if image else CLOZE_TEXT[f].format(name=name)
            pool = all_names if f == "name" else list(FACT_POOLS[f])
            q.update(truth_ratio_answers(sentence, facts[f], pool, answers_rng))
    image_mc, text_mc = [], []
    for f in FACTS:
        pool = all_names if f == "name" else list(FACT_POOLS[f])
        options, letter = _options(f, facts[f], pool, rng)
        image_mc.append({"Question": MC_QUESTIONS[f], "Options": options, "Correct_Answer": letter, "Fact": f})
        if f != "name":
            text_q = TEXT_QUESTIONS[f].format(name=name)
            options, letter = _options(f, facts[f], pool, rng)
            text_mc.append({"Question": text_q, "Options": options, "Correct_Answer": letter, "Fact": f})
    mask = [{"Type": "Image_Textual", "Question": CLOZE_IMAGE[f], "Ground_Truth": facts[f], "Fact": f} for f in FACTS]
    mask += [
        {"Type": "Pure_Text", "Question": CLOZE_TEXT[f].format(name=name), "Ground_Truth": facts[f], "Fact": f}
        for f in FACT_POOLS
    ]
    return {
        "ID": person_id,
        "biography": biography(facts),
        "Classification_Task": {"Image_Textual_Questions": image_mc, "Pure_Text_Questions": text_mc},
        "Generation_Task": gen,
        "Mask_Task": mask,
    }
