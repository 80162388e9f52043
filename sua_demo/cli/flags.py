"""CLI flags made from the config dataclasses, so a default lives in one place (its config, beside its reason).

Every flag defaults to "not given"; `config_from` starts from a base config (the dataclass's defaults, or a
preset) and replaces only what was given on the command line. Budgets in pixel units are given in 1/255.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, TypeVar

C = TypeVar("C")
PER_255 = ("eps", "alpha", "adam_lr")  # pixel-unit settings, given on the CLI in 1/255 units
SECTION = "flags_"  # each config's flags are remembered on the namespace under flags_<ConfigName>


def _shown(name: str, value: Any) -> str:
    return f"{value * 255:g}" if name in PER_255 else str(value)


def _number(text: str, cast: type, ok: Any, needs: str) -> Any:
    """`text` as a number of type `cast` for which `ok(value)` holds, else argparse's one-line error."""
    try:
        value = cast(text)
    except ValueError:
        kind = "a whole number" if cast is int else "a number"
        raise argparse.ArgumentTypeError(f"expected {kind}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"must be {needs}, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type: a whole number >= 1 (a count of people, photos, splits or steps)."""
    return _number(text, int, lambda v: v >= 1, "at least 1")


def seed_number(text: str) -> int:
    """argparse type: a random seed, a whole number from 0 to 2**32 - 1 (what numpy's generators accept)."""
    return _number(text, int, lambda v: 0 <= v < 2**32, f"from 0 to {2**32 - 1}")


def fraction(text: str) -> float:
    """argparse type: a share strictly between 0 and 1."""
    return _number(text, float, lambda v: 0 < v < 1, "between 0 and 1 (exclusive)")


def add_config_flags(p: argparse.ArgumentParser, cls: type, helps: dict[str, str]) -> None:
    """One --flag per named field of `cls`, typed from its default; bool fields get --x / --no-x."""
    defaults = cls()
    for name, text in helps.items():
        value = getattr(defaults, name)
        flag = "--" + name.replace("_", "-")
        unit = " (in 1/255)" if name in PER_255 else ""
        full = f"{text}{unit}; default {_shown(name, value)}"
        if isinstance(value, bool):
            p.add_argument(flag, action=argparse.BooleanOptionalAction, default=None, help=full)
        elif name == "seed":
            p.add_argument(flag, type=seed_number, default=None, help=full, metavar="INT")
        elif isinstance(value, (int, float, str)):
            p.add_argument(flag, type=type(value), default=None, help=full, metavar=type(value).__name__.upper())
        else:
            raise TypeError(f"{cls.__name__}.{name} is a {type(value).__name__}; add it by hand")
    p.set_defaults(**{SECTION + cls.__name__: list(helps)})


def config_from(args: argparse.Namespace, base: C) -> C:
    """`base` with every field given on the command line replaced."""
    names = getattr(args, SECTION + type(base).__name__, [])
    given = {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}
    given = {n: v / 255 if n in PER_255 else v for n, v in given.items()}
    return dataclasses.replace(base, **given)  # type: ignore[type-var]
