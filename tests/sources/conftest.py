"""Fixtures for source tests: a real MediaWiki holding the pages of tests/servers/wiki_pages.py,
and a fault proxy in front of it.

The modules in tests/servers are loaded by path (the tests folder is not a package): this file
puts that folder on ``sys.path``, so test modules here may also ``import wiki_pages`` directly;
the ``wiki_pages`` fixture hands over the same module.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

_SERVERS = Path(__file__).resolve().parents[1] / "servers"
if str(_SERVERS) not in sys.path:
    sys.path.insert(0, str(_SERVERS))

import fault_proxy as _fault_proxy  # noqa: E402
import mediawiki as _mediawiki  # noqa: E402
import wiki_pages as _wiki_pages  # noqa: E402


@pytest.fixture(scope="session")
def wiki_pages() -> ModuleType:
    """The page set module (``PAGES``, ``page``, ``titles``, ``creation``, ``text_before``, ...)."""
    return _wiki_pages


@pytest.fixture(scope="session")
def mediawiki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_mediawiki.MediaWiki]:
    """A running MediaWiki (Debian's package behind ``php -S``) holding exactly
    ``wiki_pages.PAGES``; ``.api_url``, ``.host`` ("127.0.0.1:PORT"), ``.path`` ("/"),
    ``.page_id(title)``, ``.revision_ids(title)``. Skips when php or MediaWiki is not installed
    (``scripts/install-test-services`` installs them). Treat it as read-only: it is shared by
    the whole session."""
    reason = _mediawiki.unavailable_reason()
    if reason:
        pytest.skip(f"no test MediaWiki: {reason}")
    with _mediawiki.MediaWiki(workdir=tmp_path_factory.mktemp("mediawiki")) as wiki:
        yield wiki


@pytest.fixture
def wiki_proxy(mediawiki: _mediawiki.MediaWiki) -> Iterator[_fault_proxy.FaultProxy]:
    """A fresh :class:`fault_proxy.FaultProxy` in front of the test wiki for one test:
    ``wiki_proxy.api_url``, ``.host``; script faults with ``fail_next`` / ``fail_when``;
    ``wiki_proxy.forwarded`` counts requests that reached the wiki."""
    with _fault_proxy.FaultProxy(mediawiki.base_url) as proxy:
        yield proxy
