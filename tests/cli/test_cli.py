"""The CLI: bad input gives one line that says what to do, never a traceback."""

import pytest

from sua_demo.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_eval_on_a_missing_folder_is_one_line(capsys, tmp_path):
    code, _, err = run(capsys, "eval", str(tmp_path / "nope"))
    assert code == 2 and err.count("\n") == 1 and "no model folder" in err and "Traceback" not in err


def test_eval_on_a_folder_without_config(capsys, tmp_path):
    code, _, err = run(capsys, "eval", str(tmp_path))
    assert code == 2 and "config.json" in err


def test_corrupt_checkpoint_is_one_line(capsys, micro_adapter, tmp_path):
    micro_adapter.model.save_pretrained(tmp_path)
    micro_adapter.processor.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"garbage")
    capsys.readouterr()
    code, _, err = run(capsys, "eval", str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and "could not load" in err


def test_unknown_checkpoint_name(capsys, tmp_path):
    code, _, err = run(capsys, "build-all", "--out", str(tmp_path), "--only", "nonsense")
    assert code == 2 and "unknown checkpoint" in err


def test_unlearn_needs_a_start_model(capsys, tmp_path):
    code, _, err = run(
        capsys,
        "unlearn",
        "--method",
        "ga",
        "--start",
        str(tmp_path / "x"),
        "--out",
        str(tmp_path / "y"),
        "--people",
        "8",
        "--forget",
        "15",
    )
    assert code == 2 and "no model folder" in err


def test_bench_build_and_sheet(capsys, tmp_path):
    code, out, _ = run(capsys, "bench", "build", "--people", "8", "--forget", "15", "--out", str(tmp_path / "b"))
    assert code == 0 and (tmp_path / "b" / "Full_Set").is_dir() and "8 people" in out
    code, out, _ = run(capsys, "bench", "sheet", "--people", "8", "--out", str(tmp_path / "s.png"))
    assert code == 0 and (tmp_path / "s.png").stat().st_size > 1000


def test_bench_from_mllmu_folder_that_is_not_one(capsys, tmp_path):
    code, _, err = run(capsys, "bench", "sheet", "--mllmu", str(tmp_path), "--out", str(tmp_path / "s.png"))
    assert code == 2 and "Full_Set" in err


def test_unknown_method_is_rejected_by_argparse(capsys):
    with pytest.raises(SystemExit):
        main(["unlearn", "--method", "magic", "--out", "x"])


def _subcommands(parser):
    """Every (sub)command path of the CLI, e.g. ('bench', 'build'), found by walking argparse's tree."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (name,)
                for rest in _subcommands(sub):
                    yield (name, *rest)


def test_help_works_on_every_subcommand(capsys):
    from sua_demo.cli import parser

    paths = list(_subcommands(parser()))
    assert ("bench", "build") in paths and ("attack-eval",) in paths
    for path in [(), *paths]:
        with pytest.raises(SystemExit) as exit_info:
            main([*path, "--help"])
        out = capsys.readouterr()
        assert exit_info.value.code == 0, (path, out.err)
        assert "usage: sua" in out.out


@pytest.mark.parametrize("extra", [["--only", "idk"], ["--people", "--attacker-fraction", "0.25"]])
def test_build_scale_refuses_what_to_attack_without_an_attack_in_one_line(capsys, extra):
    code, _, err = run(capsys, "build-scale", "--size", "M", *extra)
    assert code == 2 and err.count("\n") == 1 and "--only goes with --attack or --people" in err


def test_a_bench_too_small_is_one_line(capsys, tmp_path):
    code, _, err = run(capsys, "bench", "build", "--people", "3", "--out", str(tmp_path))
    assert code == 2 and err.count("\n") == 1 and "at least 4 people" in err


def test_flags_come_from_the_configs_and_presets():
    from sua_demo.attacks import AttackConfig
    from sua_demo.attacks.presets import PRESETS
    from sua_demo.cli import parser
    from sua_demo.cli.attack import attack_config
    from sua_demo.cli.flags import config_from
    from sua_demo.core.config import TrainConfig, UnlearnConfig

    args = parser().parse_args(["attack", "m", "--out", "x"])
    assert attack_config(args) == AttackConfig()  # no flag: the library's defaults, not copies of them
    args = parser().parse_args(["attack", "m", "--out", "x", "--preset", "reference", "--steps", "7", "--eps", "8"])
    cfg = attack_config(args)
    assert cfg == PRESETS["reference"].__class__(**{**PRESETS["reference"].__dict__, "steps": 7, "eps": 8 / 255})
    assert not cfg.eot and cfg.batch_size == 6 and not cfg.stealth_grad
    args = parser().parse_args(["attack-eval", "m", "--out", "x", "--no-eot", "--fit-tasks", "gen"])
    assert attack_config(args).eot is False and args.fit_tasks == ["gen"]
    args = parser().parse_args(["finetune", "--out", "x", "--retain-only", "--epochs", "3"])
    assert config_from(args, TrainConfig()) == TrainConfig(retain_only=True, epochs=3)
    args = parser().parse_args(["unlearn", "--method", "idk", "--out", "x", "--lora"])
    assert config_from(args, UnlearnConfig(method="idk")) == UnlearnConfig(method="idk", lora=True)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["demo", "--person", "0"], "must be at least 1"),
        (["eval", "idk", "--photos-per-person", "-2"], "must be at least 1"),
        (["attack", "m", "--out", "x", "--attacker-fraction", "1.5"], "between 0 and 1"),
        (["attack-eval", "m", "--out", "x", "--splits", "0"], "must be at least 1"),
        (["bench", "sheet", "--limit", "0"], "must be at least 1"),
    ],
)
def test_counts_and_shares_out_of_range_are_refused_by_argparse(capsys, argv, message):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--device", "cuda:7"], "device 'cuda:7'"),
        (["--device", "foo"], "unknown device 'foo'"),
        (["--steps", "0"], "--steps must be at least 1"),
        (["--alpha", "0"], "alpha is 0"),
    ],
)
def test_attack_refuses_bad_settings_in_one_line_before_any_work(capsys, saved_micro, tmp_path, flags, message):
    code, _, err = run(capsys, "attack", str(saved_micro), "--out", str(tmp_path / "d.safetensors"), *flags)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "d.safetensors").exists()


def test_attack_out_naming_a_folder_says_so(capsys, saved_micro, tmp_path):
    code, _, err = run(capsys, "attack", str(saved_micro), "--out", str(tmp_path))
    assert code == 2 and "is a folder" in err


@pytest.mark.parametrize(
    "flags, message", [(["--purifiers", "nope"], "nope"), (["--budgets", "-1"], "budgets are eps in 1/255")]
)
def test_attack_eval_checks_its_studies_before_optimising(capsys, saved_micro, tmp_path, flags, message):
    argv = ["attack-eval", str(saved_micro), "--retrain", str(saved_micro), "--out", str(tmp_path), *flags]
    code, _, err = run(capsys, *argv)
    assert code == 2 and message in err and not any(tmp_path.glob("*.safetensors"))


@pytest.mark.parametrize(
    "argv",
    [
        ["attack", "m", "--out", "x", "--seed", "-1"],
        ["attack", "m", "--out", "x", "--split-seed", "-1"],
        ["build-faithful", "--seeds", "-1"],
        ["bench", "build", "--bench-seed", "-2", "--out", "x"],
        ["eval", "m", "--bench-seed", "-1"],
        ["finetune", "--out", "x", "--seed", "-1"],
        ["unlearn", "--method", "idk", "--out", "x", "--seed", "-1"],
        ["build-worlds", "--seeds", str(2**32)],
    ],
)
def test_a_seed_out_of_range_is_one_line_before_any_work(capsys, argv):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1 and "from 0 to 4294967295" in err, err
    assert "Traceback" not in err and err.startswith("sua ")


@pytest.mark.parametrize("argv", [["--help"], ["attack", "--help"], ["demo"]])
def test_an_unknown_world_ends_every_command_in_one_line(argv):
    import os
    import subprocess
    import sys

    env = {**os.environ, "SUA_WORLD": "garbage"}
    done = subprocess.run([sys.executable, "-m", "sua_demo", *argv], env=env, capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr == "sua: error: unknown world 'garbage' (in SUA_WORLD); choose first or faithful\n", done.stderr
