import itertools

import numpy as np
import pytest

from sua_demo.core.config import BenchConfig
from sua_demo.core.errors import SuaError
from sua_demo.dataset import build_bench
from sua_demo.dataset.faces import ATTRIBUTES
from sua_demo.dataset.mllmu import load_mllmu, write_mllmu
from sua_demo.dataset.profiles import FACTS
from sua_demo.dataset.records import record_items


@pytest.fixture(scope="module")
def bench():
    return build_bench(BenchConfig())


def test_default_bench_shape(bench):
    assert len(bench.people) >= 100
    assert len(bench.forget_ids) == 15 and len(bench.retain_ids) == 85
    names = [p.name for p in bench.people]
    assert len(set(names)) == len(names)
    for p in bench.people[:5]:
        assert len(p.photos) >= 7 and p.photos[0].size == (128, 128)
        assert p.photo_indices("train") == [0, 1, 2, 3, 4] and p.photo_indices("heldout") == [5, 6]
        assert len(p.facts) >= 4 and p.facts["name"] == p.name
        assert p.name in p.record["biography"]


def test_people_differ_in_at_least_four_attributes(bench):
    assert len(ATTRIBUTES) >= 10
    for a, b in itertools.combinations(bench.people, 2):
        assert sum(a.attributes[k] != b.attributes[k] for k in ATTRIBUTES) >= 4


def test_records_use_mllmu_fields_and_all_tasks(bench):
    rec = bench.people[0].record
    assert set(rec) >= {"ID", "biography", "Classification_Task", "Generation_Task", "Mask_Task"}
    mc = rec["Classification_Task"]["Image_Textual_Questions"][0]
    assert set(mc) >= {"Question", "Options", "Correct_Answer"} and set(mc["Options"]) == {"A", "B", "C", "D"}
    assert mc["Options"][mc["Correct_Answer"]] == bench.people[0].facts[mc["Fact"]]
    assert {q["Type"] for q in rec["Generation_Task"]} == {"Image_Textual", "Pure_Text"}
    items = record_items(rec)
    assert {(q.task, q.modality) for q in items} == {(t, m) for t in ("gen", "mc", "cloze") for m in ("image", "text")}
    assert all("[Blank]" in q.question for q in items if q.task == "cloze")
    assert {q.fact for q in items if q.modality == "image"} == set(FACTS)


def test_multiple_choice_styles(bench):
    """The synthetic bench's target is the correct option's text; MLLMU-Bench's is its letter. Both keep the
    letter, and reshuffling the options (training) moves the letter but never the truth."""
    person = bench.people[0]
    rec = person.record
    text = [q for q in record_items(rec) if q.task == "mc"]
    letter = [q for q in record_items(rec, "mllmu") if q.task == "mc"]
    for t, item in zip(text, letter, strict=True):
        assert t.answer == t.options["ABCD".index(t.letter)] == person.facts[t.fact] and not t.answer_is_letter
        assert item.answer == item.letter == t.letter and item.answer_is_letter
        assert t.question.endswith("Answer with the option.") and item.question.endswith("answer directly.")
        assert "\nA: " in item.question  # MLLMU-Bench's own layout: one "A: option" line each
    rng = np.random.default_rng(0)
    for item in (text[1], letter[1]):
        moved = [item.reshuffled(rng) for _ in range(8)]
        assert {m.options["ABCD".index(m.letter)] for m in moved} == {item.options["ABCD".index(item.letter)]}
        assert len({m.letter for m in moved}) > 1 and all(m.answer_is_letter == item.answer_is_letter for m in moved)


def test_image_questions_never_leak_the_name(bench):
    for p in bench.people[:20]:
        for q in bench.items([p.id], tasks=("gen", "cloze"), modalities=("image",)):
            assert p.name.split()[0] not in q.question


def test_same_seed_same_pixels_other_seed_other_people():
    small = BenchConfig(n_people=6, photos_per_person=2, train_photos=1, forget_fraction=0.5)
    a, b = build_bench(small), build_bench(BenchConfig(**{**small.__dict__}))
    assert np.array_equal(np.asarray(a.people[3].photos[1]), np.asarray(b.people[3].photos[1]))
    c = build_bench(BenchConfig(**{**small.__dict__, "seed": 7}))
    assert [p.name for p in c.people] != [p.name for p in a.people]


@pytest.mark.parametrize("pct", [5, 10, 15])
def test_forget_splits_are_nested(pct):
    bench = build_bench(BenchConfig(forget_fraction=pct / 100))
    assert len(bench.forget_ids) == pct
    smaller = build_bench(BenchConfig(forget_fraction=0.05)).forget_ids
    assert set(smaller) <= set(bench.forget_ids)


def test_mllmu_parquet_roundtrip(micro_bench, tmp_path):
    bench, _ = micro_bench
    write_mllmu(bench, tmp_path)
    assert (tmp_path / "Full_Set").is_dir() and (tmp_path / "Test_Set").is_dir() and (tmp_path / "forget_25").is_dir()
    loaded = load_mllmu(tmp_path, "forget_25", style="synthetic")
    assert loaded.forget_ids == bench.forget_ids
    for a, b in zip(bench.people, loaded.people, strict=True):
        assert b.record["ID"] == f"{a.id:03d}"  # MLLMU-Bench's zero-padded string IDs
        assert {**a.record, "ID": 0} == {**b.record, "ID": 0}
        assert a.name == b.name and a.n_train_photos == b.n_train_photos
        assert all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(a.photos, b.photos, strict=True))
    assert bench.items(bench.forget_ids) == loaded.items(loaded.forget_ids)


def test_mllmu_loader_reads_released_style_rows_without_our_extras(tmp_path):
    """The released data has one photo per person in Full_Set and no `Fact` tags; the loader copes."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (40, 30), "red").save(buf, format="PNG")
    row = {
        "image": {"bytes": buf.getvalue(), "path": "1.png"},
        "ID": "1",
        "biography": "b",
        "Classification_Task": {
            "Image_Textual_Questions": [
                {"Question": "Q?", "Options": {"A": "x", "B": "y", "C": "z", "D": "w"}, "Correct_Answer": "B"}
            ],
            "Pure_Text_Questions": [],
        },
        "Generation_Task": [{"Type": "Image_Textual", "Question": "Who?", "Ground_Truth": "Someone"}],
        "Mask_Task": [{"Type": "Pure_Text", "Question": "It is [Blank].", "Ground_Truth": "blue"}],
    }
    for name in ("Full_Set", "forget_5"):
        (tmp_path / name).mkdir()
        pq.write_table(pa.Table.from_pylist([row]), tmp_path / name / "train.parquet")
    bench = load_mllmu(tmp_path, "forget_5")
    assert bench.forget_ids == [1] and bench.people[0].name == "Person 1"
    (mc,) = bench.items([1], tasks=("mc",))
    assert mc.answer == "B" and mc.answer_is_letter  # MLLMU-Bench data keeps its own (letter) style
    tasks = sorted((q.task, q.modality) for q in bench.items([1]))
    assert tasks == [("cloze", "text"), ("gen", "image"), ("mc", "image")]


def test_loader_errors_say_what_to_do(tmp_path):
    with pytest.raises(SuaError, match="Full_Set"):
        load_mllmu(tmp_path)
    (tmp_path / "Full_Set").mkdir()
    with pytest.raises(SuaError, match="forget_10"):
        load_mllmu(tmp_path)


def test_bad_bench_configs():
    with pytest.raises(ValueError):
        build_bench(BenchConfig(n_people=3))
    with pytest.raises(ValueError):
        build_bench(BenchConfig(photos_per_person=3, train_photos=3))


def test_validation_photos_leave_the_bench_as_it_was_and_are_read_only_by_the_stopping_rule():
    """One more photo per person, from a seed stream of its own: the bench's photos and splits are unchanged, the
    'validation' split is the new photo only, and the stopping rule's validation probe reads nothing else."""
    from sua_demo.core.config import UnlearnConfig
    from sua_demo.core.errors import BadValueError
    from sua_demo.dataset.synthetic import with_validation_photos
    from sua_demo.unlearning.runner import _check_counts, check_groups, criterion, on_target

    cfg = BenchConfig(n_people=8, image_size=48, photos="varied", holdout_people=2, forget_fraction=0.25)
    bench = build_bench(cfg)
    watched = with_validation_photos(bench, cfg)
    again = with_validation_photos(bench, cfg)
    everyone = zip(
        bench.people + bench.holdout, watched.people + watched.holdout, again.people + again.holdout, strict=True
    )
    for old, new, same in everyone:
        assert len(new.photos) == len(old.photos) + 1
        assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(old.photos, new.photos, strict=False))
        assert new.photo_indices("train") == old.photo_indices("train")
        assert new.photo_indices("heldout") == old.photo_indices("heldout")
        assert new.photo_indices("validation") == [len(old.photos)]
        extra = np.asarray(new.photos[-1])
        assert not any(np.array_equal(extra, np.asarray(p)) for p in old.photos)  # a new view, not a copy
        assert np.array_equal(extra, np.asarray(same.photos[-1]))  # and the same one every time
    assert watched.forget_ids == bench.forget_ids and watched.retain_ids == bench.retain_ids
    groups = check_groups(watched, "validation")
    assert {e.photo for g in groups.values() for e in g} == {len(bench.people[0].photos)}
    assert {e.person_id for e in groups["forget"]} == set(bench.forget_ids)
    both = check_groups(watched, "validation_and_train")
    assert both["forget"] == groups["forget"] and both["retain"] == groups["retain"]
    assert both["forget_train"] == check_groups(bench, "train")["forget"]  # what unlearning trains on, all of it
    cfg = UnlearnConfig(forget_target=0.2)
    assert on_target({"forget_em": 0.1}, cfg) and on_target({"forget_em": 0.1, "forget_train_em": 0.2}, cfg)
    assert not on_target({"forget_em": 0.1, "forget_train_em": 0.25}, cfg)
    assert not criterion({"forget_em": 0.1, "forget_train_em": 0.25, "retain_em": 1.0, "forget_refusal": 1.0}, cfg, 0)
    with pytest.raises(BadValueError, match="watch must be one of"):
        _check_counts(UnlearnConfig(watch="held-out"))
    with pytest.raises(BadValueError, match="varied"):
        with_validation_photos(build_bench(BenchConfig(n_people=8, image_size=48)), BenchConfig(n_people=8))
