"""Fixtures for generation tests: the scriptable OpenAI-compatible fault server.

``tests/servers/fault_server.py`` is loaded by path (the tests folder is not a package), once
per session, and registered in ``sys.modules`` as ``copyprobe_tests_fault_server``.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

_SERVER_PATH = Path(__file__).resolve().parents[1] / "servers" / "fault_server.py"
_MODULE_NAME = "copyprobe_tests_fault_server"


def load_fault_server_module() -> ModuleType:
    """The fault server module (loaded once)."""
    if _MODULE_NAME in sys.modules:
        return sys.modules[_MODULE_NAME]
    spec = importlib.util.spec_from_file_location(_MODULE_NAME, _SERVER_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[_MODULE_NAME] = module  # dataclasses look their module up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[_MODULE_NAME]
        raise
    return module


@pytest.fixture(scope="session")
def fault_server_module() -> ModuleType:
    """The module (``FaultServer``, ``Fault``, ``answer_text``, ``body_hash``, ...)."""
    return load_fault_server_module()


@pytest.fixture
def fault_server(fault_server_module: ModuleType) -> Iterator[Any]:
    """A running ``FaultServer`` (no latency, no faults) on an ephemeral 127.0.0.1 port;
    ``fault_server.base_url`` is ``http://127.0.0.1:PORT/v1``. Set ``fault_server.latency``
    or script faults in the test."""
    with fault_server_module.FaultServer(latency=0.0) as srv:
        yield srv
