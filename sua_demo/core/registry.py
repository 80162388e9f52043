"""A tiny name -> class registry, so a new attack, method, denoiser or adapter is one file and one line."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from sua_demo.core.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps short names (used on the CLI and in configs) to classes."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, type[T]] = {}

    def register(self, name: str, **setting: Any) -> Callable[[type[T]], type[T]]:
        """Register a class as `name`. A `setting` gives class attributes their value for this name, so one class
        serves every setting (quant8 and quant4 are `Quantized` with bits=8 and bits=4) where a subclass per
        constant used to; the entry is the class with those attributes set, so `get` still returns a class whose
        facts can be read before it is built. An attribute the class does not declare is refused, not ignored."""

        def add(cls: type[T]) -> type[T]:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            unknown = [key for key in setting if not _declares(cls, key)]
            if unknown:
                raise ValueError(f"{self.kind} {name!r}: {cls.__name__} declares no {', '.join(unknown)}")
            self._items[name] = _with_setting(cls, name, setting) if setting else cls
            return cls

        return add

    def get(self, name: str) -> type[T]:
        try:
            return self._items[name]
        except KeyError:
            raise UnknownNameError(f"unknown {self.kind} {name!r}; choose one of: {', '.join(self.names())}") from None

    def names(self) -> list[str]:
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        return name in self._items


def _declares(cls: type, key: str) -> bool:
    """Whether `cls` (or a base) has the attribute `key`, with a value or only an annotation."""
    return any(key in vars(c) or key in inspect.get_annotations(c) for c in cls.__mro__)


def _with_setting(cls: type[T], name: str, setting: dict[str, Any]) -> type[T]:
    """`cls` with the setting's attributes set, named after the entry (`Quantized[quant8]` in a traceback)."""
    return type(f"{cls.__name__}[{name}]", (cls,), {**setting, "__module__": cls.__module__})
