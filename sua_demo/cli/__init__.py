"""`sua ...` / `python -m sua_demo ...`: the batch interface over the same library the app uses. One module per
command group (data, attack, measure, build, people); this one assembles the parser and runs a command, every
mistake a user can fix said in one line."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import NoReturn

from sua_demo.cli import attack, build, common, data, measure, people
from sua_demo.core.config import served_world
from sua_demo.core.errors import SuaError

log = logging.getLogger("sua")


class OneLineParser(argparse.ArgumentParser):
    """argparse's parser, whose mistakes are one line (the usage block above them buried the line that says what
    was wrong); its sub-command parsers are of the same class."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    """`sua`'s commands, one group of sub-commands per module."""
    ap = OneLineParser(prog="sua", description=__doc__.split(". ")[0])
    ap.add_argument("-v", "--verbose", action="store_true")
    sub = ap.add_subparsers(dest="command", required=True)
    for group in (data, attack, build, measure, people):
        group.add_commands(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    try:
        served_world()  # every command's defaults (and its --help) name the served world: a wrong name stops here
    except SuaError as err:
        print(f"sua: error: {err}", file=sys.stderr)
        return 2
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if not args.verbose:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # per-shard bars of tiny models are noise; ours stay
    try:
        if getattr(args, "out", None):
            common.check_out(args.out, getattr(args, "out_is_file", False))
        args.func(args)
    except SuaError as err:
        print(f"sua: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        failure = common.write_failure(err, args)
        if failure is None:
            raise
        log.info("write failed: %s", err)
        print(f"sua: error: {failure}", file=sys.stderr)
        return 2
    return 0
