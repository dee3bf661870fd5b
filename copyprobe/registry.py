"""A small named registry for interchangeable parts (sources, backends, ...).

A part is either registered directly (``@REGISTRY.register("name")`` on the class) or declared
up front with the module that holds it and a few facts about it
(``REGISTRY.declare("name", "package.module:Class", remote=True)``). A declared part is
imported only when :meth:`Registry.get` asks for it, so code that only needs the facts (config
validation, the Snakemake layer deciding threads and resources) never imports a backend's
heavy or network libraries.
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


def _where(obj: Any) -> str:
    """``module:qualname`` of a registered part."""
    return f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', '?')}"


class Registry(Generic[T]):
    """Maps a name used in config to an implementation.

    >>> r: Registry[type] = Registry("thing")
    >>> @r.register("a")
    ... class A: ...
    >>> r.get("a") is A
    True
    >>> r.declare("b", "json:JSONDecoder", cheap=True)
    >>> r.facts("b")["cheap"], "b" in r, r.names()
    (True, True, ['a', 'b'])
    >>> [(d.name, d.target) for d in r.declarations()]
    [('b', 'json:JSONDecoder')]
    >>> r.get("b")
    Traceback (most recent call last):
    ...
    LookupError: thing 'b' is declared in json, which does not register it
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}
        self._declared: dict[str, Declaration] = {}

    def declare(self, name: str, target: str, **facts: Any) -> None:
        """Name a part that lives in ``target`` (``"module:attribute"``), importing nothing.
        A part its module registered before the declaration ran (the module was imported
        first) is accepted when it is the one the declaration names."""
        if ":" not in target:
            raise ValueError(f"{self.kind} {name!r}: target must be 'module:attribute', "
                             f"got {target!r}")
        if name in self._items and _where(self._items[name]) != target:
            raise ValueError(f"{self.kind} {name!r} is declared as {target}, not "
                             f"{_where(self._items[name])}")
        if name in self._declared:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._declared[name] = Declaration(name, target, dict(facts))

    def register(self, name: str) -> Callable[[T], T]:
        """Class decorator. A declared name accepts exactly the object its target names."""

        def decorator(obj: T) -> T:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            decl = self._declared.get(name)
            if decl is not None and _where(obj) != decl.target:
                raise ValueError(f"{self.kind} {name!r} is declared as {decl.target}, "
                                 f"not {_where(obj)}")
            self._items[name] = obj
            return obj

        return decorator

    def _unknown(self, name: str) -> KeyError:
        known = ", ".join(self.names()) or "(none)"
        return KeyError(f"unknown {self.kind} {name!r}; known: {known}")

    def get(self, name: str) -> T:
        """The part itself, importing its module if it was only declared (the module must
        register it with :meth:`register`)."""
        if name in self._items:
            return self._items[name]
        decl = self._declared.get(name)
        if decl is None:
            raise self._unknown(name)
        module = decl.target.split(":", 1)[0]
        importlib.import_module(module)  # its @register decorator checks the target
        if name not in self._items:
            raise LookupError(f"{self.kind} {name!r} is declared in {module}, which does not "
                              "register it")
        return self._items[name]

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
