"""Fixtures for the materials sources: a loopback server of pages (``tests/servers/
pages_server.py``, loaded by path: the tests folder is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

_SERVER_PATH = Path(__file__).resolve().parents[2] / "servers" / "pages_server.py"
_MODULE_NAME = "copyprobe_tests_pages_server"


def _module() -> Any:
    if _MODULE_NAME not in sys.modules:
        spec = importlib.util.spec_from_file_location(_MODULE_NAME, _SERVER_PATH)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[_MODULE_NAME] = module
        spec.loader.exec_module(module)
    return sys.modules[_MODULE_NAME]


@pytest.fixture
def pages_server() -> Iterator[Any]:
    """A started :class:`PagesServer` (stopped after the test)."""
    with _module().PagesServer() as server:
        yield server
