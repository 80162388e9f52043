"""docs/scale.md's reading of the size study, fixed before any attack at a new size: δ's gain beyond its best
control per world x split, and the slope against log10(tower parameters) over world means, with a t interval and a
lack-of-fit test (docs/scale.md, Changes, 2026-12-07)."""

from __future__ import annotations

import dataclasses

import numpy as np

from sua_demo.analysis.scale_trend import lack_of_fit, people_trend, points, table, trend

PARAMS = {"S": 1.5e5, "M": 9.0e5, "L": 6.5e6}


def _split(sua: float, random: float, same: float, clean: float = 0.1) -> dict:
    def cond(em: float) -> dict:
        return {"c_unseen_heldout": {"gen_em": em}, "a_attacker_images": {"gen_em": em}}

    return {
        "unlearned": {"clean": cond(clean), "sua": cond(clean + sua), "random": cond(clean + random)},
        "retrain": {"clean": cond(0.0), "sua": cond(same)},
    }


def _reports(beyond_of_size, jitter: float = 0.0) -> dict:
    rng = np.random.default_rng(1)
    out = {}
    for size in PARAMS:
        out[size] = {}
        for world in ("seed0", "seed1"):
            splits = []
            for _ in range(3):
                b = beyond_of_size(size) + jitter * rng.standard_normal()
                splits.append(_split(sua=0.03 + b, random=0.01, same=0.03))  # best control +3 points
            out[size][world] = {"splits": splits}
    return out


def test_each_point_is_deltas_gain_less_its_best_control_on_the_same_group():
    found = points({"M": {"seed0": {"splits": [_split(sua=0.10, random=0.02, same=0.04)]}}})
    (p,) = found
    assert (p.size, p.world, p.split) == ("M", "seed0", 0)
    assert np.isclose(p.gain, 10.0) and np.isclose(p.controls["random noise"], 2.0)
    assert np.isclose(p.controls["same δ on retrain"], 4.0) and np.isclose(p.beyond, 6.0)


def test_a_gain_that_grows_with_log_parameters_reads_as_a_slope_whose_interval_excludes_zero():
    slope = 0.05  # 5 points per tenfold parameters
    found = points(_reports(lambda s: slope * np.log10(PARAMS[s]), jitter=0.005))
    t = trend(found, PARAMS)
    assert t.n_points == 18 and 4.0 < t.slope < 6.0 and t.low > 0 and t.low <= t.slope <= t.high
    assert "grows with the tower's size" in t.sentence("unseen people")


def test_a_gain_that_dips_at_the_middle_size_reads_as_no_line_whatever_its_slope():
    dip = {"S": 0.17, "M": 0.07, "L": 0.14}  # the shape the faithful IDK measured: no line passes near all three
    t = trend(points(_reports(lambda s: dip[s], jitter=0.005)), PARAMS)
    assert t.n_worlds == 6 and t.lack_of_fit_p < 0.05
    assert "no line describes the tower's size" in t.sentence("unseen people") and "shrinks" not in t.sentence("x")


def test_the_lack_of_fit_test_matches_the_textbook_f_and_cannot_be_read_on_two_sizes():
    x, y = np.array([0.0, 0.0, 1.0, 1.0, 2.0, 2.0]), np.array([0.0, 2.0, 5.0, 7.0, 2.0, 4.0])
    # size means 1, 6, 3; the line through all six points: slope 1, intercept 7/3, so the means miss it by
    # -4/3, +8/3, -4/3: lack = 2 * (16 + 64 + 16) / 9 = 21.33 on 1 df; pure error: each pair ±1, 6 on 3 df;
    # F = 21.33 / 2 = 10.67 on (1, 3) df: p = 0.0469
    assert np.isclose(lack_of_fit(x, y), 0.0469, atol=5e-4)
    assert np.isnan(lack_of_fit(np.array([0.0, 0.0, 1.0, 1.0]), np.array([0.0, 1.0, 2.0, 3.0])))
    s_and_m = trend(points(_reports(lambda s: 0.05, jitter=0.01)), {k: PARAMS[k] for k in ("S", "M")})
    assert "a line's fit cannot be tested" in s_and_m.sentence("unseen people")


def test_a_flat_gain_reads_as_no_trend_and_one_size_as_no_slope_yet():
    found = points(_reports(lambda s: 0.02, jitter=0.02))
    t = trend(found, PARAMS)
    assert t.low <= 0 <= t.high and "no trend" in t.sentence("unseen people")
    only_m = [p for p in found if p.size == "M"]
    assert "no slope yet" in trend(only_m, {"M": PARAMS["M"]}).sentence("unseen people")
    lines = table(found, PARAMS).splitlines()
    assert len(lines) == 2 + 3 and lines[3].startswith("| M | 0.90 M | 6 |")


def test_the_shipped_trend_is_what_the_shipped_attack_reports_say(tmp_path):
    """checkpoints/faithful/scale/trend.md is rebuilt from the reports it reads (size M: the shipped faithful
    worlds 0 and 1), so it cannot drift from them; every size's tower is counted as pretraining builds it."""
    from sua_demo.worlds.scale import SCALE_REPORTS, SIZES, tower_parameters, write_trend

    found = write_trend(tmp_path)
    assert (tmp_path / "trend.md").read_text() == (SCALE_REPORTS / "trend.md").read_text()
    assert [tower_parameters(s) for s in SIZES] == sorted(tower_parameters(s) for s in SIZES)
    m_points = [p for p in found["models"]["idk"]["c_unseen_heldout"]["points"] if p["size"] == "M"]
    assert len(m_points) == 6 and {p["world"] for p in m_points} == {"world 0", "world 1"}


def test_about_draws_the_trend_against_tower_parameters_and_says_what_is_measured_so_far():
    import json

    from sua_demo.ui.about.words import scale_words
    from sua_demo.ui.shared.plots import scale_figure
    from sua_demo.worlds.scale import SCALE_REPORTS, tower_parameters

    found = json.loads((SCALE_REPORTS / "trend.json").read_text())
    fig = scale_figure(found)
    unseen = next(t for t in fig.data if t.name == "IDK, δ: unseen people, held-out photos")
    measured = {p["size"] for p in found["models"]["idk"]["c_unseen_heldout"]["points"]}
    sizes = [s for s in found["parameters"] if s in measured]  # in the study's order of size
    assert list(unseen.x) == [tower_parameters(s) for s in sizes] and fig.layout.xaxis.type == "log"
    assert [t.split(":")[0] for t in fig.layout.xaxis.ticktext] == ["S", "M", "L"]  # every size in view, built or not
    gains = [p["gain"] for p in found["models"]["idk"]["c_unseen_heldout"]["points"] if p["size"] == "M"]
    assert np.isclose(unseen.y[sizes.index("M")], np.mean(gains))
    assert any(t.name.startswith("IDK ceiling, any image tokens") for t in fig.data)
    said = scale_words(found)
    listed = said.split("Tower sizes attacked so far: ")[1].split(". ")[0]
    assert [part.split(" (")[0] for part in listed.split("), ")] == sizes and "world" in listed


def test_a_world_whose_vanilla_misses_its_gates_is_reported_and_not_attacked(tmp_path):
    """docs/scale.md's gate: a world whose vanilla misses a gate is not attacked (IDK's and GradDiff's misses do
    not stop it); the refusal names the miss, before any model loads."""
    import dataclasses
    import json

    import pytest

    from sua_demo.core.errors import BadValueError
    from sua_demo.worlds.scale import STUDY, attack_size, vanilla_misses

    world = tmp_path / "runs" / "S" / "world1"
    world.mkdir(parents=True)
    row = {"model": "vanilla", "group": "forget/heldout", "metric": "gen_em", "gate": "≥ 80 %", "value": 0.76}
    rows = [{**row, "met": False}, {**row, "model": "idk", "met": False}, {**row, "group": "forget/train", "met": True}]
    (world / "gates.json").write_text(json.dumps({"all_met": False, "gates": rows}))
    assert vanilla_misses(world) == ["forget/heldout gen_em 76.0 % (gate ≥ 80 %)"]
    plan = dataclasses.replace(STUDY, runs=tmp_path / "runs", reports=tmp_path / "reports")
    with pytest.raises(BadValueError, match="world 1: its vanilla misses forget/heldout gen_em 76.0 %"):
        attack_size("S", 1, plan)
    (world / "gates.json").write_text(json.dumps({"all_met": False, "gates": rows[1:]}))
    assert vanilla_misses(world) == []


def _fraction_report(people: int, beyond: float) -> dict:
    """One model's attack report at a share of attacker people: 15 forget people, the rest unseen."""
    split = {"attacker_ids": list(range(people)), "unseen_ids": list(range(people, 15))}
    return {"splits": [{**_split(sua=0.03 + beyond, random=0.01, same=0.03), "split": split} for _ in range(3)]}


def _eval(path, value: float) -> None:
    import json

    path.mkdir(parents=True, exist_ok=True)
    (path / "eval.json").write_text(json.dumps({"model": path.name, "report": {"forget": value}}))


def test_the_second_axis_reads_each_share_and_the_record_only_where_its_models_are_the_same(tmp_path, monkeypatch):
    """docs/scale.md's second axis (4, 8, 11 attacker people): each share from its own folder; the protocol's
    share from the record of the same seed only while every model of the rebuilt world evaluates as the record's;
    read as the size axis is, a slope per attacker person with an interval over worlds."""
    import json

    from sua_demo.ui.about.words import people_words
    from sua_demo.ui.shared.plots import people_figure
    from sua_demo.worlds import scale

    record, reports = tmp_path / "record", tmp_path / "reports"
    monkeypatch.setattr(scale, "REPORTS", record)
    for seed in (0, 1):
        for name in ("vanilla", "retrain", "idk", "grad_diff"):
            _eval(record / f"world{seed}" / name, 0.5)
            _eval(reports / "M" / f"world{seed}" / name, 0.5)
        mine = reports / "M"
        shares = ((4, "noise_fraction0.25", mine), (11, "noise_fraction0.75", mine), (8, "noise", record))
        for people, folder, root in shares:
            path = root / f"world{seed}" / folder / "idk"
            path.mkdir(parents=True)
            (path / "report.json").write_text(json.dumps(_fraction_report(people, 0.01 * people + 0.002 * seed)))
    assert list(scale.people_reports("idk", "M", reports)) == ["4", "8", "11"]
    found = scale.write_people("M", reports)
    t = found["models"]["idk"]["c_unseen_heldout"]["trend"]
    assert t["n_points"] == 18 and 0.9 < t["slope"] < 1.1 and t["low"] > 0 and t["per"] == "per attacker person"
    text = (reports / "M" / "people.md").read_text()
    assert "| 4 | 11 | 6 |" in text and "| 11 | 4 | 6 |" in text and "grows with the attacker's people" in text
    assert "grad_diff" not in found["models"] and found["unseen"] == {"4": 11, "8": 7, "11": 4}
    fig = people_figure(found)  # the About's picture of the axis
    unseen = next(trace for trace in fig.data if trace.name == "IDK, δ: unseen people, held-out photos")
    assert "fitted on 4 (11 unseen), 8 (7 unseen), 11 (4 unseen)" in people_words(found)
    assert list(unseen.x) == [4, 8, 11] and list(fig.layout.xaxis.ticktext) == ["4 (11 unseen)", "8 (7 unseen)",
                                                                                "11 (4 unseen)"]  # fmt: skip
    _eval(reports / "M" / "world1" / "idk", 0.4)  # world 1 rebuilt to other models: the record is not its attack
    assert not scale.same_as_record("M", 1, reports) and scale.same_as_record("M", 0, reports)
    assert list(scale.people_reports("idk", "M", reports)["8"]) == ["world 0"]
    one = [pt for pt in scale.points(scale.people_reports("idk", "M", reports)) if pt.world == "world 0"]
    assert "over one world so far, no interval" in people_trend(one).sentence("unseen people")
    calls = []
    monkeypatch.setattr(scale, "attack_size", lambda size, seed, plan, fraction, only: calls.append((seed, fraction)))
    plan = dataclasses.replace(scale.STUDY, reports=reports)
    scale.attack_people("M", 0, plan), scale.attack_people("M", 1, plan)
    assert calls == [(0, 0.25), (0, 0.75), (1, 0.25), (1, 0.5), (1, 0.75)]


def test_a_share_of_attacker_people_other_than_the_protocols_has_its_own_folder():
    from pathlib import Path

    from sua_demo.worlds.faithful import noise_dir

    assert noise_dir(Path("w")) == Path("w/noise") and noise_dir(Path("w"), 0.5) == Path("w/noise")
    assert noise_dir(Path("w"), 0.25) == Path("w/noise_fraction0.25")


def test_a_world_built_again_keeps_its_records_attack_only_while_it_evaluates_as_the_record(tmp_path, monkeypatch):
    """docs/scale.md, Changes, tenth session: a size's world built again after its runs/ were lost is not attacked
    twice where it is the record's models, and where it is not, it replaces the record whole, never in part."""
    import json

    from sua_demo.worlds import scale

    plan = dataclasses.replace(scale.STUDY, runs=tmp_path / "runs", reports=tmp_path / "reports")
    for seed in (0, 1):
        for root in (plan.runs, plan.reports):
            for name in scale.STUDIED:
                _eval(root / "L" / f"world{seed}" / name, 0.5)
        (plan.reports / "L" / f"world{seed}" / "noise" / "idk").mkdir(parents=True)
        (plan.reports / "L" / f"world{seed}" / "noise" / "idk" / "report.json").write_text('{"of": "the record"}')
    _eval(plan.runs / "L" / "world1" / "idk", 0.4)  # world 1's IDK came out otherwise this time
    calls = []

    def attack_world(seed, splits, names, folder, *rest):
        calls.append((seed, names))
        for name in names:
            (folder / "noise" / name).mkdir(parents=True, exist_ok=True)
            (folder / "noise" / name / "report.json").write_text(json.dumps({"of": f"world {seed} again"}))
        return folder / "noise"

    monkeypatch.setattr(scale, "attack_world", attack_world)
    monkeypatch.setattr(scale, "write_trend", lambda *a: None)
    monkeypatch.setattr(scale, "write_people", lambda *a: None)
    record = plan.reports / "L"
    assert not scale.rebuilt_apart(plan.runs / "L" / "world0", record / "world0")
    assert scale.rebuilt_apart(plan.runs / "L" / "world1", record / "world1")
    scale.attack_size("L", 0, plan)  # the same models: only GradDiff, which the record lacks, is attacked
    assert calls == [(0, ["grad_diff"])]
    assert json.loads((record / "world0" / "noise" / "idk" / "report.json").read_text()) == {"of": "the record"}
    assert (record / "world0" / "noise" / "grad_diff" / "report.json").is_file()
    scale.attack_size("L", 1, plan, only=["grad_diff"])  # other models, attacked in part: the record stays whole
    assert calls[-1] == (1, ["grad_diff"]) and not (record / "world1" / "noise" / "grad_diff").exists()
    assert json.loads((record / "world1" / "idk" / "eval.json").read_text())["report"] == {"forget": 0.5}
    scale.attack_size("L", 1, plan)  # then whole: it replaces the record, evaluations and attack together
    assert calls[-1] == (1, ["idk", "grad_diff"])
    assert json.loads((record / "world1" / "idk" / "eval.json").read_text())["report"] == {"forget": 0.4}
    assert json.loads((record / "world1" / "noise" / "idk" / "report.json").read_text()) == {"of": "world 1 again"}
