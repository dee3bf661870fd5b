"""copyprobe.registry's examples (its docstring) and the declarations it lists."""

from __future__ import annotations

import doctest

import copyprobe.registry
from copyprobe.registry import Registry


def test_docstring_examples():
    assert doctest.testmod(copyprobe.registry).failed == 0


def test_declarations_are_listed_by_name_without_importing():
    r: Registry[type] = Registry("thing")
    r.declare("z", "no_such_module_xyz:Z", fast=True)
    r.declare("a", "json:JSONDecoder")
    assert [(d.name, d.target, dict(d.facts)) for d in r.declarations()] == [
        ("a", "json:JSONDecoder", {}), ("z", "no_such_module_xyz:Z", {"fast": True})]
