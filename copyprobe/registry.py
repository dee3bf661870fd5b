"""A small named registry for interchangeable parts (sources, backends, ...).

Each part is declared once, by name, with where it lives and a few facts about it
(``REGISTRY.declare("name", "package.module:Class", remote=True)``); its module is imported
only when :meth:`Registry.get` first asks for it, so code that needs only the facts (config
validation, the Snakemake layer) never imports a backend's heavy or network libraries.
:meth:`Registry.register` adds an object already in hand (a plug-in or a test's part).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Declaration:
    """Where a part lives (``module:attribute``) and what is known about it without importing it."""

    name: str
    target: str
    facts: Mapping[str, Any] = field(default_factory=dict)


class Registry(Generic[T]):
    """Maps a name used in config to an implementation.

    >>> r: Registry[type] = Registry("thing")
    >>> r.declare("b", "json:JSONDecoder", cheap=True)
    >>> r.facts("b")["cheap"], "b" in r, r.names()
    (True, True, ['b'])
    >>> [(d.name, d.target) for d in r.declarations()]
    [('b', 'json:JSONDecoder')]
    >>> import json; r.get("b") is json.JSONDecoder
    True
    >>> @r.register("a")
    ... class A: ...
    >>> r.get("a") is A, r.names()
    (True, ['a', 'b'])
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._declared: dict[str, Declaration] = {}

    def declare(self, name: str, target: str, **facts: Any) -> None:
        """Name a part that lives in ``target`` (``"module:attribute"``), importing nothing."""
        if ":" not in target:
            raise ValueError(f"{self.kind} {name!r}: target must be 'module:attribute', "
                             f"got {target!r}")
        if name in self:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._declared[name] = Declaration(name, target, dict(facts))

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator adding an object in hand under ``name`` (not for declared names)."""

        def decorator(obj: T) -> T:
            if name in self:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            self._items[name] = obj
            return obj

        return decorator

    def _unknown(self, name: str) -> KeyError:
        known = ", ".join(self.names()) or "(none)"
        return KeyError(f"unknown {self.kind} {name!r}; known: {known}")

    def get(self, name: str) -> T:
        """The part itself, importing its module on first use if it was declared."""
        if name in self._items:
            return self._items[name]
        decl = self._declared.get(name)
        if decl is None:
            raise self._unknown(name)
        module, _, attribute = decl.target.partition(":")
        obj = importlib.import_module(module)
        for part in attribute.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                raise LookupError(f"{self.kind} {name!r} is declared as {decl.target}, which "
                                  f"{module} does not define")
        self._items[name] = obj
        return obj

    def facts(self, name: str) -> Mapping[str, Any]:
        """What the declaration says about a part (empty for parts registered directly)."""
        if name in self._declared:
            return self._declared[name].facts
        if name in self._items:
            return {}
        raise self._unknown(name)

    def declarations(self) -> list[Declaration]:
        """The declared parts (module, attribute and facts, nothing imported), by name."""
        return [self._declared[n] for n in sorted(self._declared)]

    def names(self) -> list[str]:
        return sorted({*self._items, *self._declared})

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._declared

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
