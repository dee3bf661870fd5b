"""Documentation of installed Python distributions: long description, licence, copyright lines."""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
from pathlib import Path

import pytest

from copyprobe.artifacts import CORPUS, to_table
from copyprobe.sources import SourceError, build_source

README = "# Widget\n\nWidget makes widgets. " + "It is fast and small and well tested. " * 30
MIT_BODY = """Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

Copyright (c) 1999 A Line Inside The Licence Text

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""


def dist(site: Path, name: str, version: str, headers: str, body: str = README,
         files: dict[str, str] | None = None) -> Path:
    d = site / f"{name.replace('-', '_')}-{version}.dist-info"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                f"{headers}\n{body}", encoding="utf-8")
    for fname, text in (files or {}).items():
        (d / fname).parent.mkdir(parents=True, exist_ok=True)
        (d / fname).write_text(text, encoding="utf-8")
    return d


@pytest.fixture
def site(tmp_path: Path) -> Path:
    s = tmp_path / "site"
    dist(s, "Widget", "1.2", "Summary: Widgets\nHome-page: https://widget.example\n"
         "License: MIT\nDescription-Content-Type: text/markdown\n",
         files={"LICENSE": "Copyright (c) 2019-2024 The Widget Authors\n\n" + MIT_BODY,
                "licenses/NOTICE": "Widget bundles parts of Gadget,\n"
                                   "Copyright 2015 Gadget Corp.\n"})
    dist(s, "gizmo_tools", "0.3", "Project-URL: Bug Tracker, https://bugs.example\n"
         "Project-URL: Source, https://src.example/gizmo\n"
         "Classifier: License :: OSI Approved :: BSD License\n"
         "Classifier: Programming Language :: Python\n")
    dist(s, "tiny", "1.0", "License: MIT\n", body="Too short to be documentation.")
    return s


def load(site: Path, **params):
    return build_source("docs", {"kind": "package_docs", "path": str(site), **params}).load("docs")


def test_long_descriptions_with_licence_url_and_copyright(site):
    r = load(site)
    c = r.corpus.set_index("title")
    assert list(c.index) == ["gizmo_tools", "Widget"]  # in normalised name order
    w = c.loc["Widget"]
    assert w["text"] == README.strip() and w["category"] == "code"
    assert (w["licence"], w["url"]) == ("MIT", "https://widget.example")
    # The line before the licence text counts; the one inside the MIT text does not.
    assert (w["rights_holder"], w["rights_year"]) == ("The Widget Authors", 2019)
    assert w["rights_notice"] == "Copyright (c) 2019-2024 The Widget Authors"
    prov = json.loads(w["provenance"])
    assert [ln.split(": ", 1)[1] for ln in prov["copyright_lines"]] == [
        "Copyright (c) 2019-2024 The Widget Authors", "Copyright 2015 Gadget Corp."]
    assert prov["version"] == "1.2" and prov["description_content_type"] == "text/markdown"
    assert (w["page_id"], w["doc_id"]) == ("Widget==1.2", "pkg:widget")
    assert pd_isna(w["published"]) and w["date_basis"].startswith("none")
    g = c.loc["gizmo_tools"]
    assert (g["licence"], g["url"], g["rights_holder"]) == (
        "BSD License", "https://src.example/gizmo", "")
    assert r.skipped.values.tolist() == [
        ["docs", "tiny==1.0", "long description has 5 words, fewer than min_words=100"]]
    to_table(r.corpus, CORPUS)


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_named_distributions_published_and_missing(site):
    r = load(site, distributions=["widget", "Nope"], published="2024-05-01", category="docs")
    assert r.corpus["title"].tolist() == ["Widget"]
    assert r.corpus["published"].item() == dt.date(2024, 5, 1)
    assert r.corpus["date_basis"].item() == "param published"
    assert r.corpus["category"].item() == "docs"
    assert r.skipped["reason"].tolist() == [f"distribution not installed on ['{site}']"]


def test_min_words_and_limit(site):
    r = load(site, min_words=0)
    assert sorted(r.corpus["title"]) == ["Widget", "gizmo_tools", "tiny"]
    first = load(site, min_words=0, limit=2, sample_seed=None).corpus["title"].tolist()
    assert first == ["gizmo_tools", "tiny"]
    seeded = load(site, min_words=0, limit=2).corpus["title"].tolist()
    assert len(seeded) == 2 and seeded == load(site, min_words=0, limit=2).corpus["title"].tolist()


def test_a_real_installed_distribution():
    """requests is a dependency: its README is the text, its NOTICE gives the copyright line,
    and the Apache-2.0 text's "Copyright [yyyy]" template is not taken for one."""
    meta = importlib.metadata.distribution("requests").metadata
    row = build_source("d", {"kind": "package_docs", "distributions": ["requests"]}).load(
        "d").corpus.iloc[0]
    assert row["text"] == meta.get_payload().strip()
    assert row["licence"] == (meta.get("License-Expression") or meta.get("License"))
    assert row["rights_notice"] and "[" not in row["rights_notice"]
    files = json.loads(row["provenance"])["licence_files"]
    texts = [Path(str(importlib.metadata.distribution("requests").locate_file(
        f.split(":", 1)[1]))).read_text(encoding="utf-8") for f in files]
    assert any(row["rights_notice"] in t for t in texts)
    assert str(row["rights_year"]) in row["rights_notice"]


@pytest.mark.parametrize("params, match", [
    ({"published": "spring"}, r"'published' = 'spring' is not an ISO date"),
    ({"distributions": "requests"}, r"'distributions' = 'requests' must be a non-empty list"),
    ({"min_words": -1}, r"'min_words' = -1 must be an integer >= 0"),
    ({"path": 3}, r"'path' = 3 must be a folder"),
])
def test_bad_params(params, match):
    with pytest.raises(SourceError, match=match):
        build_source("d", {"kind": "package_docs", **params})


def test_a_licence_text_does_not_lend_its_own_copyright_line():
    """The full GPL-3.0 text carries "Copyright (C) 2007 Free Software Foundation": that line
    is the licence's, not the package's (any installed copy of the text will do)."""
    from copyprobe.sources.installed_licences import licence_files
    from copyprobe.sources.materials.package_docs import copyright_lines
    from copyprobe.sources.materials.rights import find_notices

    gpl = [f for f in licence_files() if "Version 3, 29 June 2007" in f.text
           and "Free Software Foundation" in f.text and "GNU GENERAL PUBLIC" in f.text.upper()]
    if not gpl:
        pytest.skip("no installed distribution ships the GPL-3.0 text")
    raw = [n.holder for _, n in find_notices(gpl[0].text)]
    assert any("Free Software Foundation" in h for h in raw)  # the line is there ...
    kept = [n.holder for _, n in copyright_lines([gpl[0]])]
    assert not any("Free Software Foundation" in h for h in kept)  # ... and not taken
