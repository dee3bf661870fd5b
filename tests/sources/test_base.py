"""The Source interface: the files a source reads, asked through the registry."""

from __future__ import annotations

import pytest

from copyprobe.sources import SOURCES, source_input_files


@pytest.mark.parametrize("kind", ["wikipedia_offline", "installed_licences"])
def test_sources_that_read_no_user_files_list_none(kind):
    assert source_input_files({"kind": kind, "min_words": 10}) == []
    assert SOURCES.get(kind).input_files({}) == []


def test_unknown_kind_names_the_known_ones():
    with pytest.raises(KeyError, match="unknown source 'nope'; known: .*local"):
        source_input_files({"kind": "nope"})
