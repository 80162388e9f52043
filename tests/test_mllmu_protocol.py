"""MLLMU-Bench's released parquet layout (Test_Set with several photos and its own questions per person)
and the reference protocol as one CLI command."""

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from sua_demo.bench.mllmu import load_mllmu, load_mllmu_test, write_mllmu
from sua_demo.cli import main
from sua_demo.errors import SuaError


def _png(color):
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), color).save(buf, format="PNG")
    return {"bytes": buf.getvalue(), "path": f"{color}.png"}


def _tasks(pid, word):
    mc = {"Question": f"Q{pid}?", "Options": {"A": "x", "B": "y", "C": "z", "D": "w"}, "Correct_Answer": "B"}
    return {
        "Classification_Task": {"Image_Textual_Questions": [mc], "Pure_Text_Questions": []},
        "Generation_Task": [{"Type": "Image_Textual", "Question": "Who?", "Ground_Truth": f"P{pid}"}],
        "Mask_Task": [
            {"Type": "Image_Textual", "Question": f"This person likes [Blank] {word}.", "Ground_Truth": word},
            {"Type": "Pure_Text", "Question": "It is [Blank].", "Ground_Truth": "blue"},
        ],
    }


def _write_release(root, n=4):
    """The released schema: string IDs, Full_Set with one photo and extra columns, Test_Set with a photo list."""
    full = [
        {"image": _png("red"), "ID": str(i), "Directory": f"d/{i}", "biography": f"bio {i}", "question": "q",
         "answer": "a", **_tasks(i, "tea")}
        for i in range(1, n + 1)
    ]  # fmt: skip
    test = [{"ID": str(i), "images": [_png("green"), _png("blue")], **_tasks(i, "jazz")} for i in range(1, n + 1)]
    for name, rows in (("Full_Set", full), ("Test_Set", test), ("forget_5", full[:1]), ("retain_95", full[1:])):
        (root / name).mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist(rows), root / name / "train-00000-of-00001.parquet")


def test_released_layout_reads_test_set_photos_and_questions(tmp_path):
    _write_release(tmp_path)
    test = load_mllmu_test(tmp_path, "forget_5")
    assert [p.id for p in test.people] == [1, 2, 3, 4] and test.forget_ids == [1]
    person = test.person(2)
    assert len(person.photos) == 2 and person.photo_indices("heldout") == [0, 1]
    assert person.record["biography"] == "bio 2"
    cloze = test.items([2], tasks=("cloze",), modalities=("image",))
    assert [q.answer for q in cloze] == ["jazz"] and "[Blank]" in cloze[0].question
    full = load_mllmu(tmp_path, "forget_5")  # Full_Set questions; Test_Set photos held out
    assert len(full.person(2).photos) == 3 and full.person(2).n_train_photos == 1
    with pytest.raises(SuaError, match="Test_Set"):
        load_mllmu_test(tmp_path / "Full_Set")


def test_written_bench_has_test_set_questions(micro_bench, tmp_path):
    bench, _ = micro_bench
    write_mllmu(bench, tmp_path)
    test = load_mllmu_test(tmp_path, mc_style="text")
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
    assert set(report["scores"]["delta"]) == {"attack_people", "test_people"}
    assert "cloze_em" in report["scores"]["clean"]["test_people"]
    assert (tmp_path / "r" / "noise.safetensors").exists() and "## delta" in capsys.readouterr().out
    assert main([*argv[:6], "--attack-ids", "200", "300"]) == 2  # no such people: one clear line
