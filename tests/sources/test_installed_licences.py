"""The installed_licences source: text helpers on genuine licence texts, fake distributions,
and one run over the distributions actually installed."""

from __future__ import annotations

import datetime as dt
import json
import time
import textwrap
from pathlib import Path

import pytest

from copyprobe.artifacts import CORPUS, to_table
from copyprobe.sources import SOURCES, SourceError
from copyprobe.sources.installed_licences import InstalledLicences, is_licence_file
from copyprobe.sources.licences.families import FAMILIES
from copyprobe.sources.licences.text import (
    comparison_key,
    detect_family,
    normalise_text,
    split_licences,
    strip_copyright_lines,
)
from copyprobe.sources.licences.variants import Occurrence, group_variants, jaccard, shingles

MIT = """\
Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

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


def bsd3(holder: str = "the copyright holder") -> str:
    return f"""\
Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

1. Redistributions of source code must retain the above copyright notice, this
   list of conditions and the following disclaimer.

2. Redistributions in binary form must reproduce the above copyright notice,
   this list of conditions and the following disclaimer in the documentation
   and/or other materials provided with the distribution.

3. Neither the name of {holder} nor the names of its
   contributors may be used to endorse or promote products derived from
   this software without specific prior written permission.

THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS"
AND ANY EXPRESS OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE
IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR CONTRIBUTORS BE LIABLE
FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR CONSEQUENTIAL
DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER
CAUSED AND ON ANY THEORY OF LIABILITY, WHETHER IN CONTRACT, STRICT LIABILITY,
OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE
OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
"""


def bsd2() -> str:
    text = bsd3()
    start = text.index("3. Neither")
    return text[:start] + text[text.index("THIS SOFTWARE"):]


ISC = """\
Permission to use, copy, modify, and/or distribute this software for any
purpose with or without fee is hereby granted, provided that the above
copyright notice and this permission notice appear in all copies.

THE SOFTWARE IS PROVIDED "AS IS" AND THE AUTHOR DISCLAIMS ALL WARRANTIES
WITH REGARD TO THIS SOFTWARE INCLUDING ALL IMPLIED WARRANTIES OF
MERCHANTABILITY AND FITNESS. IN NO EVENT SHALL THE AUTHOR BE LIABLE FOR
ANY SPECIAL, DIRECT, INDIRECT, OR CONSEQUENTIAL DAMAGES OR ANY DAMAGES
WHATSOEVER RESULTING FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN
ACTION OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS ACTION, ARISING OUT OF
OR IN CONNECTION WITH THE USE OR PERFORMANCE OF THIS SOFTWARE.
"""

ZLIB = """\
This software is provided 'as-is', without any express or implied
warranty.  In no event will the authors be held liable for any damages
arising from the use of this software.

Permission is granted to anyone to use this software for any purpose,
including commercial applications, and to alter it and redistribute it
freely, subject to the following restrictions:

1. The origin of this software must not be misrepresented; you must not
   claim that you wrote the original software. If you use this software
   in a product, an acknowledgment in the product documentation would be
   appreciated but is not required.
2. Altered source versions must be plainly marked as such, and must not be
   misrepresented as being the original software.
3. This notice may not be removed or altered from any source distribution.
"""

APACHE_NOTICE = """\
Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
"""

UNKNOWN_LICENCE = """\
The Frobnicator Community Licence. You may run, study and share the
Frobnicator on a Tuesday, and on any other day of the week only after
telling a friend about it. Copies must carry this licence in full and the
name of the Frobnicator may not be changed. This is not a warranty of any
kind; the Frobnicator comes with no warranty whatsoever, and its authors
accept no liability for anything that happens when it is run, shared or
changed, to the extent that the law allows it.
"""


# ------------------------------------------------------------------------- text helpers


@pytest.mark.parametrize(
    "text, family",
    [
        ("Copyright (c) 2015 Foo\n\n" + MIT, "MIT"),
        ("Copyright (c) 2001, Bar Inc.\nAll rights reserved.\n\n" + bsd3("Bar Inc."), "BSD-3-Clause"),
        (bsd2(), "BSD-2-Clause"),
        ("Copyright (c) 2004 Baz\n\n" + ISC, "ISC"),
        ("  zlib License\n\n  (C) 1995 Jean-loup Gailly\n\n" + textwrap.indent(ZLIB, "  "), "Zlib"),
        ("Copyright 2020 Qux\n\n" + APACHE_NOTICE, "Apache-2.0-notice"),
        (UNKNOWN_LICENCE, None),
        ("no licence here at all", None),
    ],
)
def test_detect_family(text, family):
    assert detect_family(text) == family


def test_mit_variants_are_told_apart():
    ncsa = MIT.replace("to deal\nin the Software", "to deal\nwith the Software")
    assert detect_family(ncsa) == "NCSA"
    mit0 = MIT.replace(", subject to the following conditions:", ".").replace(
        "The above copyright notice and this permission notice shall be included in all\n"
        "copies or substantial portions of the Software.\n\n", "")
    assert detect_family(mit0) == "MIT-0"
    zerobsd = ISC.replace(", provided that the above\ncopyright notice and this permission "
                          "notice appear in all copies", "")
    assert detect_family(zerobsd) == "0BSD"


def test_strip_copyright_lines():
    text = ("Copyright (c) 2015 Foo Bar <foo@example.org>\n"
            "(c) 2016-2020 Baz contributors\n"
            "  © 2021 Someone Else\n\n"
            "All rights reserved.\n\n" + MIT)
    body, lines = strip_copyright_lines(text)
    assert lines == [
        "Copyright (c) 2015 Foo Bar <foo@example.org>",
        "(c) 2016-2020 Baz contributors",
        "© 2021 Someone Else",
        "All rights reserved.",
    ]
    assert body.startswith("Permission is hereby granted")
    # The licence's own mention of "copyright notice" is untouched.
    assert "The above copyright notice" in body
    assert strip_copyright_lines(MIT) == (MIT.rstrip("\n"), [])


def test_normalisation_makes_layouts_identical():
    rewrapped = textwrap.fill(" ".join(MIT.split("\n\n")[0].split()), width=50)
    rest = "\n\n".join(MIT.split("\n\n")[1:])
    variant = "\t" + rewrapped.replace("\n", "\n    ") + "\r\n\r\n" + rest.replace("\n", "\r\n")
    quoted = "\n".join("> " + ln if ln else ">" for ln in MIT.splitlines())
    starred = "\n".join(" * " + ln if ln else " *" for ln in MIT.splitlines())
    a = normalise_text(MIT)
    assert normalise_text(variant) == a
    assert normalise_text(quoted) == a
    assert normalise_text(starred) == a
    assert a.count("\n\n") == 2 and "\n" not in a.split("\n\n")[0]  # three paragraphs
    # List items keep their own line.
    assert "\n2. Altered source versions" in normalise_text(ZLIB)


def test_split_a_composite_file():
    composite = (
        "Copyright (c) 2015 Foo\n\n" + MIT + "\n" + "-" * 40 + "\n"
        "Name: vendored-bar\nFiles: bar/*\nLicense: BSD-3-Clause\n"
        "Copyright (c) 2001, Bar Inc.\nAll rights reserved.\n\n" + bsd3("Bar Inc.") + "\n"
        "Name: vendored-frob\n\n" + UNKNOWN_LICENCE
    )
    segs = split_licences(composite)
    assert [s.family for s in segs] == ["MIT", "BSD-3-Clause", None]
    assert segs[0].copyright == ["Copyright (c) 2015 Foo"]
    assert segs[1].copyright == ["Copyright (c) 2001, Bar Inc.", "All rights reserved."]
    assert segs[0].text == normalise_text(MIT)
    assert segs[1].text.startswith("Redistribution and use")
    assert segs[1].text.endswith("POSSIBILITY OF SUCH DAMAGE.")
    assert "Frobnicator Community Licence" in segs[2].text


def test_near_duplicates_collapse():
    texts = {
        "a": bsd3("the copyright holder"),
        "b": bsd3("the copyright holder"),  # identical
        "c": bsd3("Example Software Foundation"),  # near-identical
        "d": bsd2(),  # another licence
    }
    sims = jaccard(shingles(comparison_key(texts["a"])), shingles(comparison_key(texts["c"])))
    assert 0.9 <= sims < 1.0
    occ = [
        Occurrence("BSD-3-Clause", normalise_text(t), comparison_key(t), f"pkg-{k}", f"pkg-{k}:LICENSE", [])
        for k, t in texts.items() if k != "d"
    ]
    variants = group_variants(occ, 0.9)
    assert len(variants) == 1
    assert variants[0].packages == ["pkg-a", "pkg-b", "pkg-c"]
    assert variants[0].exact_texts == 2
    assert "the copyright holder" in variants[0].representative  # the most common text
    assert len(group_variants(occ, 0.999)) == 2


def test_licence_file_names():
    assert is_licence_file(("LICENSE",))
    assert is_licence_file(("LICENCE.txt",))
    assert is_licence_file(("COPYING",))
    assert is_licence_file(("licenses", "LICENSES", "HAVEN_MIT"))
    assert is_licence_file(("licenses", "numpy", "dragon4_LICENSE.txt"))
    assert is_licence_file(("NOTICE",))
    assert not is_licence_file(("licenses", "AUTHORS.md"))
    assert not is_licence_file(("METADATA",))
    assert not is_licence_file(("RECORD",))
    assert not is_licence_file(("entry_points.txt",))


# ---------------------------------------------------------------------- fake distributions


def make_dist(site: Path, name: str, version: str, files: dict[str, str],
              license_field: str | None = None) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    if license_field:
        meta += "License: " + license_field.replace("\n", "\n        ") + "\n"
    (info / "METADATA").write_text(meta, encoding="utf-8")
    record = [f"{info.name}/METADATA,,"]
    for rel, text in files.items():
        p = info / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
        record.append(f"{info.name}/{rel},,")
    record.append(f"{info.name}/RECORD,,")
    (info / "RECORD").write_text("\n".join(record) + "\n", encoding="utf-8")


@pytest.fixture()
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    make_dist(site, "alpha", "1.0", {"licenses/LICENSE": "Copyright (c) 2015 Alpha Team\n\n" + MIT})
    wrapped = textwrap.fill(" ".join(MIT.split()), width=60)  # same words, other layout
    make_dist(site, "beta", "2.0", {
        "LICENSE.txt": "The MIT License (MIT)\n\nCopyright 2019 Beta Authors\n\n" + wrapped,
        "AUTHORS": "Beta Authors: Ann, Bob\n",
        "NOTICE": "Beta\nThis product includes software developed by Beta.\n",
    })
    make_dist(site, "gamma", "3.0", {
        "COPYING": "Copyright (c) 2001, Gamma Inc.\nAll rights reserved.\n\n" + bsd3("Gamma Inc."),
        "licenses/FROB_LICENSE": UNKNOWN_LICENCE,
    })
    make_dist(site, "delta", "0.1", {}, license_field="Copyright (c) 2010 Delta\n\n" + bsd3("Delta")
              + "\n\n" + ZLIB)
    make_dist(site, "epsilon", "1.1", {"LICENSE": "Copyright 2020 Eps\n\n" + bsd2()})
    return site


def test_fake_distributions(site: Path):
    src = InstalledLicences(path=[str(site)])
    r = src.load("lic")
    c = r.corpus.set_index("title")
    assert sorted(c.index) == ["BSD-2-Clause", "BSD-3-Clause", "MIT", "Zlib"]
    mit = json.loads(c.loc["MIT", "provenance"])
    assert mit["packages"] == ["alpha", "beta"]
    assert mit["n_packages"] == 2 and mit["n_occurrences"] == 2 and mit["exact_texts"] == 1
    assert mit["copyright_lines"] == ["Copyright (c) 2015 Alpha Team", "Copyright 2019 Beta Authors"]
    assert mit["representative"] == "alpha==1.0:alpha-1.0.dist-info/licenses/LICENSE"
    assert c.loc["MIT", "text"] == normalise_text(MIT)
    assert c.loc["MIT", "licence"] == "MIT"
    assert c.loc["MIT", "published"] == FAMILIES["MIT"].published == dt.date(1988, 1, 1)
    assert "MIT" in c.loc["MIT", "date_basis"]
    bsd = json.loads(c.loc["BSD-3-Clause", "provenance"])
    # "Gamma Inc." and "Delta" variants differ by a name only: one document, two packages.
    assert bsd["packages"] == ["delta", "gamma"] and bsd["exact_texts"] == 2
    assert "delta==0.1:METADATA[License]#1" in bsd["occurrences"]
    assert c.loc["BSD-3-Clause", "published"] == dt.date(1999, 7, 22)
    assert "Copyright" not in c.loc["BSD-3-Clause", "text"].split("\n")[0]
    assert r.corpus["doc_id"].str.match(r"^licence:[A-Za-z0-9.-]+:[0-9a-f]{12}$").all()
    # The unknown licence is skipped with the reason; AUTHORS and a NOTICE without a licence
    # are not candidates at all.
    sk = dict(zip(r.skipped["ref"], r.skipped["reason"]))
    assert sk == {"gamma==3.0:gamma-3.0.dist-info/licenses/FROB_LICENSE": "unrecognised licence family"}
    assert to_table(r.corpus, CORPUS).num_rows == 4
    # Sorted, deterministic output.
    again = InstalledLicences(path=[str(site)]).load("lic").corpus
    assert again["doc_id"].tolist() == r.corpus["doc_id"].tolist()
    assert r.corpus["title"].tolist() == sorted(r.corpus["title"])


def test_unknown_published_keeps_unrecognised_texts(site: Path):
    r = InstalledLicences(path=[str(site)], unknown_published="2015-03-01").load("lic")
    row = r.corpus[r.corpus["doc_id"].str.startswith("licence:unknown:")]
    assert len(row) == 1
    assert row["published"].iloc[0] == dt.date(2015, 3, 1)
    assert row["licence"].iloc[0] == "NOASSERTION"
    assert "unknown_published" in row["date_basis"].iloc[0]


def test_filters(site: Path):
    r = InstalledLicences(path=[str(site)], families=["mit", "Zlib"]).load("lic")
    assert sorted(r.corpus["licence"]) == ["MIT", "Zlib"]
    assert r.skipped["reason"].str.contains("not in param 'families'").sum() == 3
    r = InstalledLicences(path=[str(site)], min_words=200).load("lic")
    assert sorted(r.corpus["licence"]) == ["BSD-3-Clause"]  # MIT 162, BSD-2 ~185, Zlib 132 words
    assert r.skipped["reason"].str.contains("fewer than min_words=200").any()
    # Without near-duplicate collapsing the two BSD-3 texts are two variants ...
    r = InstalledLicences(path=[str(site)], near_duplicate_threshold=1.0).load("lic")
    titles = sorted(r.corpus["title"])
    assert "BSD-3-Clause (variant 1)" in titles and "BSD-3-Clause (variant 2)" in titles
    # ... and max_per_family keeps the first.
    r = InstalledLicences(path=[str(site)], near_duplicate_threshold=1.0, max_per_family=1).load("lic")
    assert (r.corpus["licence"] == "BSD-3-Clause").sum() == 1
    assert r.skipped["reason"].str.contains("beyond max_per_family=1").any()


@pytest.mark.parametrize(
    "params, key",
    [
        ({"min_words": -5}, "min_words"),
        ({"families": "MIT"}, "families"),
        ({"families": ["MIT", "Beerware-9"]}, "families"),
        ({"max_per_family": 0}, "max_per_family"),
        ({"near_duplicate_threshold": 0}, "near_duplicate_threshold"),
        ({"near_duplicate_threshold": 1.5}, "near_duplicate_threshold"),
        ({"unknown_published": "someday"}, "unknown_published"),
        ({"path": 3}, "path"),
        ({"treshold": 0.8}, "treshold"),
    ],
)
def test_bad_params_name_the_key(params, key):
    with pytest.raises(SourceError, match=key):
        InstalledLicences(**params)


# ------------------------------------------------------------------ the installed packages


@pytest.fixture(scope="module")
def real():
    t0 = time.perf_counter()
    r = InstalledLicences().load("installed_licences")
    return r, time.perf_counter() - t0


def test_real_installed_packages(real):
    r, seconds = real
    c = r.corpus
    assert "installed_licences" in SOURCES
    assert seconds < 10
    assert {"MIT", "BSD-3-Clause", "Apache-2.0"} <= set(c["licence"])
    assert c["doc_id"].is_unique
    # No two documents of one family have the same text (after normalisation).
    keys = c["doc_id"].str.split(":").str[1] + "|" + c["text"].map(comparison_key)
    assert keys.is_unique
    prov = c["provenance"].map(json.loads)
    bsd3_packages = {p for pr, lic in zip(prov, c["licence"]) if lic == "BSD-3-Clause"
                     for p in pr["packages"]}
    assert {"numpy", "pandas"} <= bsd3_packages
    mit_packages = {p for pr, lic in zip(prov, c["licence"]) if lic == "MIT" for p in pr["packages"]}
    assert "pytest" in mit_packages
    for fam, pub, pr in zip(c["doc_id"].str.split(":").str[1], c["published"], prov):
        assert pub == FAMILIES[fam].published
        assert pr["n_packages"] == len(pr["packages"]) >= 1
        assert pr["representative"] in pr["occurrences"]
    assert (c["text"].str.split().str.len() >= 50).all()
    order = [(pr["family"], pr["variant"]) for pr in prov]
    assert order == sorted(order)  # deterministic: by family, then most widespread variant first
    assert to_table(c, CORPUS).num_rows == len(c)


def test_every_detectable_family_has_a_date():
    from copyprobe.sources.licences import detectors as il

    possible = {d.classify("") for d in il.DETECTORS}
    possible |= {il._classify_bsd(t) for t in (bsd2(), bsd3(), bsd3() + " All advertising materials mentioning")}
    possible |= {il._classify_mit(t) for t in (MIT, MIT.replace("in the Software", "with the Software"), "")}
    possible |= {il._classify_isc(t) for t in (ISC, "")}
    possible |= {il._classify_hpnd(t) for t in ("By obtaining, using, and/or copying this software", "")}
    assert {"BSD-4-Clause", "NCSA", "MIT-0", "0BSD", "MIT-CMU", "HPND", "ISC"} <= possible
    assert possible <= set(FAMILIES)
    for info in FAMILIES.values():
        assert dt.date(1980, 1, 1) < info.published < dt.date(2020, 1, 1) and info.basis
