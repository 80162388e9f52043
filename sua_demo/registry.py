"""A tiny name -> class registry, so a new attack, method, denoiser or adapter is one file and one line."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from sua_demo.errors import UnknownNameError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps short names (used on the CLI and in configs) to classes."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, type[T]] = {}

    def register(self, name: str) -> Callable[[type[T]], type[T]]:
        def add(cls: type[T]) -> type[T]:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = cls
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
