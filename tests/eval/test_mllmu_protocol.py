"""MLLMU-Bench's released parquet layout (Test_Set with several photos and its own questions per person)
and the reference protocol as one CLI command."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from sua_demo.cli import main
from sua_demo.core.errors import SuaError
from sua_demo.dataset.mllmu import load_mllmu, load_mllmu_test, write_mllmu


def _png(color):
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), color).save(buf, format="PNG")
    return {"bytes": buf.getvalue(), "path": f"{color}.png"}


def _tasks(pid, word):
    """One person's questions as MLLMU-Bench releases them: no `Fact` tags, cloze blanks written `__`."""
    mc = {"Question": f"Q{pid}?", "Options": {"A": "x", "B": "y", "C": "z", "D": "w"}, "Correct_Answer": "B"}
    return {
        "Classification_Task": {"Image_Textual_Questions": [mc], "Pure_Text_Questions": []},
        "Generation_Task": [
            {"Type": "Image_Textual", "Question": "What is the name of the person in the image?",
             "Ground_Truth": f"Ann Lee{pid}"},
            {"Type": "Image_Textual", "Question": "Where does this person work?", "Ground_Truth": "Dover"},
        ],
        "Mask_Task": [
            {"Type": "Image_Textual", "Question": f"This person likes __ {word}.", "Ground_Truth": word},
            {"Type": "Pure_Text", "Question": "Her favourite colour is __.", "Ground_Truth": "blue"},
        ],
    }  # fmt: skip


def _write_release(root, n=4):
    """The released schema: zero-padded string IDs, Full_Set with one photo and extra columns, Test_Set with a
    photo list in two shards, a Retain_Set of celebrities and ft_Data with JSON question lists."""
    rid = [f"{i:03d}" for i in range(1, n + 1)]
    full = [
        {"image": _png("red"), "ID": r, "Directory": f"d/{r}", "biography": f"bio {r}", "question": "q",
         "answer": "a", **_tasks(i + 1, "tea")}
        for i, r in enumerate(rid)
    ]  # fmt: skip
    test = [{"ID": r, "images": [_png("green"), _png("blue")], **_tasks(i + 1, "jazz")} for i, r in enumerate(rid)]
    celeb = [{"image": _png("white"), "biography": "Famous Person is famous.", **_tasks(99, "rock")}]
    ft = [{"ID": rid[0], "image": _png("red"), "metadata": json.dumps([{"Question": "Job?", "Answer": "baker"}])}]
    shards = {"Full_Set": [full], "Test_Set": [test[:2], test[2:]], "forget_5": [full[:1]], "retain_95": [full[1:]],
              "Retain_Set": [celeb], "ft_Data": [ft]}  # fmt: skip
    for name, parts in shards.items():
        (root / name).mkdir(parents=True)
        for k, rows in enumerate(parts):
            pq.write_table(pa.Table.from_pylist(rows), root / name / f"train-{k:05d}-of-{len(parts):05d}.parquet")


def test_released_layout_reads_test_set_photos_and_questions(tmp_path):
    _write_release(tmp_path)
    test = load_mllmu_test(tmp_path, "forget_5")
    assert [p.id for p in test.people] == [1, 2, 3, 4] and test.forget_ids == [1]
    person = test.person(2)
    assert len(person.photos) == 2 and person.photo_indices("heldout") == [0, 1]
    assert person.record["biography"] == "bio 002" and person.name == "Ann Lee2"  # no Fact tag: asked for
    cloze = test.items([2], tasks=("cloze",), modalities=("image",))
    assert [q.answer for q in cloze] == ["jazz"] and "__" not in cloze[0].question
    assert cloze[0].question.endswith("replace the [Blank].") and "likes [Blank] jazz" in cloze[0].question
    full = load_mllmu(tmp_path, "forget_5")  # Full_Set questions on train photos; Test_Set's own on its photos
    assert len(full.person(2).photos) == 3 and full.person(2).n_train_photos == 1
    held = full.items([2], tasks=("cloze",), modalities=("image",), photos="heldout")
    train = full.items([2], tasks=("cloze",), modalities=("image",), photos="train")
    assert [q.answer for q in held] == ["jazz"] and [q.answer for q in train] == ["tea"]
    assert full.utility_ids == [5] and full.person(5).name == "Ann Lee99" and full.split_of(5) == "utility"
    assert 5 not in full.retain_ids and [q.answer for q in full.ft_items[1]] == ["baker"]
    with pytest.raises(SuaError, match="Test_Set"):
        load_mllmu_test(tmp_path / "Full_Set")


def test_what_the_project_writes_the_public_string_filter_selects(micro_bench, tmp_path):
    """MLLMU-Bench's code selects rows by zero-padded string IDs; the project's parquet answers to them."""
    bench, _ = micro_bench
    write_mllmu(bench, tmp_path)
    rows = pq.read_table(tmp_path / "Full_Set").to_pylist()
    wanted = [f"{i:03d}" for i in bench.forget_ids]
    picked = {r["ID"] for r in rows if r["ID"] in wanted}
    assert picked == set(wanted) and all(isinstance(r["ID"], str) for r in rows)
    assert {r["ID"] for r in pq.read_table(tmp_path / "forget_25").to_pylist()} == set(wanted)


def test_written_bench_has_test_set_questions(micro_bench, tmp_path):
    bench, _ = micro_bench
    write_mllmu(bench, tmp_path)
    test = load_mllmu_test(tmp_path, style="synthetic")
    p = bench.people[0]
    assert len(test.person(p.id).photos) == len(p.photo_indices("heldout"))
    assert test.items([p.id]) == bench.items([p.id])


def test_mllmu_protocol_is_one_command(micro_adapter, micro_bench, tmp_path, capsys):
    bench, _ = micro_bench
    write_mllmu(bench, tmp_path / "data")
    micro_adapter.model.save_pretrained(tmp_path / "model")
    micro_adapter.processor.save_pretrained(tmp_path / "model")
    argv = ["mllmu-protocol", str(tmp_path / "model"), "--mllmu", str(tmp_path / "data"), "--out", str(tmp_path / "r")]
    argv += ["--attack-ids", "5", "8", "--test-ids", "1", "4", "--steps", "2", "--batch-size", "4", "--dtype", "auto"]
    assert main(argv) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert set(report["scores"]) == {"clean", "delta", "random"}
    assert set(report["scores"]["delta"]) == {f"{w}/{k}" for w in ("attack_people", "test_people")
                                              for k in ("Image_Textual", "Pure_Text")}  # fmt: skip
    assert "cloze_em" in report["scores"]["clean"]["test_people/Image_Textual"]
    assert (tmp_path / "r" / "noise.safetensors").exists() and "## delta" in capsys.readouterr().out
    assert main([*argv[:6], "--attack-ids", "200", "300"]) == 2  # no such people: one clear line


def test_the_protocol_on_the_released_schema_attacks_what_the_public_code_attacks(micro_adapter, tmp_path, capsys):
    """Image and Pure_Text Mask_Task items of the attack people, each asked with each Test_Set photo, scored the
    MLLMU-Bench way (the truth inside a 50-token answer)."""
    _write_release(tmp_path / "data", n=4)
    micro_adapter.model.save_pretrained(tmp_path / "model")
    micro_adapter.processor.save_pretrained(tmp_path / "model")
    argv = ["mllmu-protocol", str(tmp_path / "model"), "--mllmu", str(tmp_path / "data"), "--out", str(tmp_path / "r")]
    argv += ["--attack-ids", "3", "4", "--test-ids", "1", "2", "--steps", "1", "--batch-size", "4"]
    assert main(argv) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["attacked_examples"] == 2 * 2 * 2  # 2 people x 2 photos x (1 image + 1 text cloze)
    clean = report["scores"]["clean"]
    assert "cloze_acc" in clean["test_people/Pure_Text"] and "cloze_acc" in clean["attack_people/Image_Textual"]
    assert report["style"].startswith("mllmu")
