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


@pytest.mark.parametrize("kind", ["wikipedia_offline", "installed_licences", "local", "msr_csv"])
def test_every_built_in_kind_refuses_an_unknown_param_by_name(kind):
    """The check lives once, in Source.__init__, driven by each kind's known_params."""
    from copyprobe.sources import SourceError, build_source

    known = sorted(SOURCES.get(kind).known_params)
    with pytest.raises(SourceError) as info:
        build_source("s", {"kind": kind, "limt": 3})
    assert str(info.value) == f"source {kind}: unknown param(s) ['limt']; known: {known}"
