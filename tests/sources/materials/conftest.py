"""Fixtures for the materials sources: a loopback server of pages (``tests/servers/
pages_server.py``, loaded by path: the tests folder is not a package)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture
def pages_server(server_module: Any) -> Iterator[Any]:
    """A started :class:`PagesServer` (stopped after the test)."""
    with server_module("pages_server").PagesServer() as server:
        yield server
