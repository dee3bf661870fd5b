"""Licence texts found in the metadata of the installed Python distributions.

Licence texts are among the most duplicated documents on the web, each published at a known
date, which makes them a natural "surely memorised" (D_pre) control corpus.

Where the texts come from: for every distribution that :func:`importlib.metadata.distributions`
finds (on ``sys.path``, or on the ``path`` param), the files inside its metadata folder
(``*.dist-info`` / ``*.egg-info``) whose name says licence (``LICENSE*``, ``LICENCE*``,
``COPYING*``, ``COPYRIGHT*``, ``*_LICENSE``, ``UNLICENSE``...), every file under a
``licenses/`` folder there (PEP 639) except AUTHORS/README-like files, ``NOTICE*`` files (only
the licences recognised inside them are used), and the ``License`` metadata field when it
holds a full text (more than 50 words).

How a file becomes documents (:func:`split_licences`): many files concatenate several
licences (numpy's LICENSE.txt carries BSD-3-Clause, GPL-3.0 and more). Each recognised
licence is cut out of the text from its characteristic opening phrase (e.g. "Redistribution
and use in source and binary forms", "Apache License Version 2.0, January 2004") to its
characteristic closing phrase ("... POSSIBILITY OF SUCH DAMAGE.", "END OF TERMS AND
CONDITIONS" plus the standard appendix). The copyright lines in front of a licence ("Copyright
(c) 2015 Foo", "All rights reserved.") are not part of the document but are kept in its
provenance. The family of a cut-out licence is refined from its content (BSD with an
endorsement clause is BSD-3-Clause, with an advertising clause BSD-4-Clause, else
BSD-2-Clause; the MIT opening with "to deal with the Software" is NCSA; ...). Text outside
any recognised licence that still looks like licence text (>= ``min_words`` words and a
warranty disclaimer) is an "unknown" candidate: skipped with reason "unrecognised licence
family" unless ``unknown_published`` gives it a date.

Texts are normalised (line wrapping, indentation, comment/quote markers, markdown bold,
rule lines) and near-duplicates are collapsed per family: texts identical after
normalisation are one, and a text whose word-5-gram Jaccard similarity with a variant's
representative is >= ``near_duplicate_threshold`` joins that variant. The representative is
the most common exact text of the variant; the provenance lists every package and file it
was found in.

Params (config keys):

``min_words``               minimum words of a licence text (default 50).
``families``                optional allow-list of families (SPDX ids, or "unknown").
``max_per_family``          keep the N most widespread variants per family (default null = all).
``near_duplicate_threshold`` Jaccard threshold for collapsing variants (default 0.9, in (0, 1]).
``unknown_published``       ISO date for texts of no recognised family (default null = skip them).
``path``                    optional list of folders to search instead of ``sys.path``.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable

from copyprobe.sources.base import SOURCES, Document, Source, SourceError, text_id

UNKNOWN = "unknown"
MAX_FILE_BYTES = 2_000_000
FIELD_MIN_WORDS = 50  # the ``License`` metadata field counts as a licence text above this


@dataclass(frozen=True)
class FamilyInfo:
    published: dt.date
    basis: str


# Publication dates. Where the licence's own heading carries a date, that is the date; for the
# permissive families without one, the date of the earliest well-documented use of the
# current wording (all long before any current model's cutoff, which is what the D_pre/D_post
# split needs; the basis says so where the date is approximate).
FAMILIES: dict[str, FamilyInfo] = {
    "0BSD": FamilyInfo(dt.date(2013, 1, 1), "approximate: Rob Landley's Toybox adopted this "
                       "ISC-derived, attribution-free text (later SPDX 0BSD) in 2013"),
    "Apache-2.0": FamilyInfo(dt.date(2004, 1, 1), "the licence's heading: 'Version 2.0, January "
                             "2004' (apache.org/licenses/LICENSE-2.0)"),
    "Apache-2.0-notice": FamilyInfo(dt.date(2004, 1, 1), "the standard notice is the appendix "
                                    "of Apache License 2.0, January 2004"),
    "BSD-2-Clause": FamilyInfo(dt.date(1999, 7, 22), "approximate: the 2-clause text derives from "
                               "the BSD licence as revised on 1999-07-22, when UC Berkeley "
                               "rescinded the advertising clause (FreeBSD adopted it soon after)"),
    "BSD-3-Clause": FamilyInfo(dt.date(1999, 7, 22), "1999-07-22: UC Berkeley (W. Hoskins) "
                               "rescinded the advertising clause, giving the 3-clause text"),
    "BSD-4-Clause": FamilyInfo(dt.date(1990, 1, 1), "approximate: the original 4-clause BSD "
                               "licence of the 4.3BSD-era releases (c. 1990)"),
    "BSL-1.0": FamilyInfo(dt.date(2003, 8, 17), "the licence's heading: 'Boost Software License "
                          "- Version 1.0 - August 17th, 2003'"),
    "CC0-1.0": FamilyInfo(dt.date(2009, 3, 11), "Creative Commons released CC0 1.0 Universal in "
                          "March 2009"),
    "GPL-2.0": FamilyInfo(dt.date(1991, 6, 1), "the licence's heading: 'Version 2, June 1991'"),
    "GPL-3.0": FamilyInfo(dt.date(2007, 6, 29), "the licence's heading: 'Version 3, 29 June 2007'"),
    "HPND": FamilyInfo(dt.date(1991, 1, 1), "approximate: this permission notice was in wide use "
                       "by 1991 (e.g. CWI's Python 0.9.x, MIT/CMU X and SNMP sources)"),
    "ISC": FamilyInfo(dt.date(1996, 1, 1), "approximate: the Internet Software Consortium's "
                      "notice in BIND sources ('Copyright (c) 1996 by Internet Software "
                      "Consortium'); ISC changed 'and' to 'and/or' in 2007"),
    "LGPL-2.0": FamilyInfo(dt.date(1991, 6, 1), "the licence's heading: 'GNU Library General "
                           "Public License, Version 2, June 1991'"),
    "LGPL-2.1": FamilyInfo(dt.date(1999, 2, 1), "the licence's heading: 'Version 2.1, February "
                           "1999'"),
    "LGPL-3.0": FamilyInfo(dt.date(2007, 6, 29), "the licence's heading: 'Version 3, 29 June "
                           "2007'"),
    "MIT": FamilyInfo(dt.date(1988, 1, 1), "approximate: the MIT/X Consortium permission notice "
                      "('Permission is hereby granted, free of charge, ...') goes back to the X "
                      "Window System releases of 1987-88 (X11R2, 1988)"),
    "MIT-0": FamilyInfo(dt.date(2016, 1, 1), "approximate: 'MIT No Attribution' was published by "
                        "Amazon/AWS in 2016 (SPDX MIT-0)"),
    "MIT-CMU": FamilyInfo(dt.date(1997, 1, 1), "approximate: this wording ('By obtaining, using, "
                          "and/or copying ...') ships with the Python Imaging Library since 1997"),
    "MPL-2.0": FamilyInfo(dt.date(2012, 1, 3), "Mozilla released MPL 2.0 on 2012-01-03"),
    "NCSA": FamilyInfo(dt.date(2003, 10, 24), "the University of Illinois/NCSA Open Source "
                       "License, first used for LLVM 1.0 (released 2003-10-24)"),
    "OFL-1.1": FamilyInfo(dt.date(2007, 2, 26), "the licence's heading: 'SIL OPEN FONT LICENSE "
                          "Version 1.1 - 26 February 2007'"),
    "PSF-2.0": FamilyInfo(dt.date(2001, 4, 17), "the PSF License Agreement (version 2) first "
                          "shipped with Python 2.1, released 2001-04-17"),
    "Unlicense": FamilyInfo(dt.date(2010, 1, 1), "the Unlicense was published (unlicense.org) in "
                            "January 2010"),
    "Zlib": FamilyInfo(dt.date(1995, 5, 1), "approximate: the zlib licence as shipped with the "
                       "first zlib releases (1995)"),
}


def _rx(phrase: str) -> re.Pattern[str]:
    """A case-insensitive regex from a phrase where any space matches any whitespace."""
    return re.compile(re.sub(r"(?:\\ )+| +", r"\\s+", phrase), re.IGNORECASE)


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _classify_bsd(text: str) -> str:
    w = _words(text)
    if "all advertising materials mentioning" in w:
        return "BSD-4-Clause"
    if re.search(r"neither the names? of|may not be used to endorse|used to endorse or promote", w):
        return "BSD-3-Clause"
    return "BSD-2-Clause"


def _classify_mit(text: str) -> str:
    w = _words(text)
    if "to deal with the software" in w or "neither the names of" in w:
        return "NCSA"
    if "subject to the following conditions" not in w:
        return "MIT-0"
    return "MIT"


def _classify_isc(text: str) -> str:
    w = _words(text)
    if "provided that the above copyright notice and this permission notice appear in all" in w:
        return "ISC"
    return "0BSD"


def _classify_hpnd(text: str) -> str:
    return "MIT-CMU" if _words(text).startswith("by obtaining using and or copying") else "HPND"


@dataclass(frozen=True)
class Detector:
    """How one licence (or group of closely related licences) starts and ends."""

    name: str
    start: re.Pattern[str]
    end: re.Pattern[str]
    max_chars: int  # the end must lie within this many characters of the start
    classify: Callable[[str], str]


def _fixed(family: str) -> Callable[[str], str]:
    return lambda _text: family


# "END OF TERMS AND CONDITIONS", then (in most copies) the "How to Apply" appendix up to its
# last sentence ``last``.
_GNU_HOWTO = (
    r"END\s+OF\s+TERMS\s+AND\s+CONDITIONS"
    r"(?:\s*How\s+to\s+Apply\s+These\s+Terms\s+to\s+Your\s+New\s+{what}(?:.|\n){{0,4000}}?{last})?"
)

DETECTORS: list[Detector] = [
    Detector(
        "Apache-2.0",
        _rx(r"Apache License,? Version 2\.0,? January 2004"),
        # The end of section 9, then (in most copies) the end marker and the appendix.
        re.compile(
            r"accepting\s+any\s+such\s+warranty\s+or\s+additional\s+liability\."
            r"(?:\s*END\s+OF\s+TERMS\s+AND\s+CONDITIONS(?:\s*APPENDIX:\s+How\s+to\s+apply\s+the"
            r"\s+Apache\s+License\s+to\s+your\s+work\.?(?:.|\n){0,2500}?limitations\s+under\s+the"
            r"\s+License\.)?)?",
            re.IGNORECASE,
        ),
        20000,
        _fixed("Apache-2.0"),
    ),
    Detector(
        "Apache-2.0-notice",
        _rx(r"Licensed under the Apache License,? Version 2\.0 \(the [\"“”']?License[\"“”']?\)"),
        _rx(r"limitations under the License\.?"),
        1500,
        _fixed("Apache-2.0-notice"),
    ),
    Detector(
        "GPL-3.0",
        _rx(r"GNU GENERAL PUBLIC LICENSE Version 3, 29 June 2007"),
        re.compile(_GNU_HOWTO.format(what="Programs", last=r"why-not-lgpl\.html>?\.?"), re.IGNORECASE),
        45000,
        _fixed("GPL-3.0"),
    ),
    Detector(
        "GPL-2.0",
        _rx(r"GNU GENERAL PUBLIC LICENSE Version 2, June 1991"),
        re.compile(_GNU_HOWTO.format(what="Programs", last=r"Public\s+License\s+instead\s+of\s+this\s+License\.?"),
                   re.IGNORECASE),
        25000,
        _fixed("GPL-2.0"),
    ),
    Detector(
        "LGPL-2.1",
        _rx(r"GNU LESSER GENERAL PUBLIC LICENSE Version 2\.1, February 1999"),
        re.compile(_GNU_HOWTO.format(what="Libraries", last=r"That's\s+all\s+there\s+is\s+to\s+it!"),
                   re.IGNORECASE),
        35000,
        _fixed("LGPL-2.1"),
    ),
    Detector(
        "LGPL-2.0",
        _rx(r"GNU LIBRARY GENERAL PUBLIC LICENSE Version 2, June 1991"),
        re.compile(_GNU_HOWTO.format(what="Libraries", last=r"That's\s+all\s+there\s+is\s+to\s+it!"),
                   re.IGNORECASE),
        35000,
        _fixed("LGPL-2.0"),
    ),
    Detector(
        "LGPL-3.0",
        _rx(r"GNU LESSER GENERAL PUBLIC LICENSE Version 3, 29 June 2007"),
        _rx(r"permanent authorization for you to choose that version for the Library\."),
        12000,
        _fixed("LGPL-3.0"),
    ),
    Detector(
        "MPL-2.0",
        _rx(r"Mozilla Public License,? Version 2\.0"),
        _rx(r"as defined by the Mozilla Public License, v\. 2\.0\.?"),
        40000,
        _fixed("MPL-2.0"),
    ),
    Detector(
        "BSD",
        _rx(r"Redistribution and use in source and binary forms"),
        _rx(r"POSSIBILITY OF SUCH DAMAGE\.?"),
        5000,
        _classify_bsd,
    ),
    Detector(
        "MIT",
        _rx(r"Permission is hereby granted, free of charge, to any person obtaining a copy"),
        _rx(r"(?:OTHER )?DEALINGS (?:IN|WITH) THE SOFTWARE\.?"),
        3500,
        _classify_mit,
    ),
    Detector(
        "BSL-1.0",
        _rx(r"(?:Boost Software License - Version 1\.0|Permission is hereby granted, free of "
            r"charge, to any person or organization obtaining a copy)"),
        _rx(r"(?:OTHER )?DEALINGS IN THE SOFTWARE\.?"),
        3500,
        _fixed("BSL-1.0"),
    ),
    Detector(
        "ISC",
        _rx(r"Permission to use, copy, modify, and(?:/or)? distribute this software for any "
            r"purpose with or without fee is hereby granted"),
        _rx(r"(?:USE OR )?PERFORMANCE OF THIS SOFTWARE\.?"),
        2500,
        _classify_isc,
    ),
    Detector(
        "HPND",
        _rx(r"(?:By obtaining, using, and/or copying this software and/or its associated "
            r"documentation, you agree that you have read, understood, and will comply with the "
            r"following terms and conditions: )?Permission to use, copy, modify,? and distribute "
            r"this software and its (?:associated )?documentation for any purpose and without "
            r"fee is hereby granted"),
        _rx(r"(?:USE OR )?PERFORMANCE OF THIS SOFTWARE\.?"),
        3000,
        _classify_hpnd,
    ),
    Detector(
        "Zlib",
        _rx(r"This (?:software|source code) is provided ['‘’]as-is['‘’], without any express or implied warranty"),
        _rx(r"This notice may not be removed or altered from any source distribution\.?"),
        2500,
        _fixed("Zlib"),
    ),
    Detector(
        "PSF-2.0",
        _rx(r"PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2"),
        _rx(r"agrees to be bound by the terms and conditions of this License Agreement\.?"),
        5000,
        _fixed("PSF-2.0"),
    ),
    Detector(
        "Unlicense",
        _rx(r"This is free and unencumbered software released into the public domain"),
        re.compile(r"OTHER\s+DEALINGS\s+IN\s+THE\s+SOFTWARE\.(?:\s*For\s+more\s+information,\s+please"
                   r"\s+refer\s+to\s+<?https?://unlicense\.org/?>?)?", re.IGNORECASE),
        3000,
        _fixed("Unlicense"),
    ),
    Detector(
        "CC0-1.0",
        _rx(r"Creative Commons Legal Code CC0 1\.0 Universal"),
        _rx(r"with respect to this CC0 or use of the Work\.?"),
        10000,
        _fixed("CC0-1.0"),
    ),
    Detector(
        "OFL-1.1",
        _rx(r"SIL OPEN FONT LICENSE Version 1\.1 - 26 February 2007"),
        _rx(r"OTHER DEALINGS IN THE FONT SOFTWARE\.?"),
        8000,
        _fixed("OFL-1.1"),
    ),
]


# ----------------------------------------------------------------------------- text helpers

_COPYRIGHT_LINE = re.compile(
    r"^[\W_]*(?:portions\s+)?(?:copyright\b|\(c\)|©|all\s+rights\s+reserved)", re.IGNORECASE
)
_RULE_LINE = re.compile(r"^[-=_*~#+.:|\s]{3,}$")
_LIST_ITEM = re.compile(r"^(?:[*\-•+]|\d+[.)]|\([0-9a-zA-Z]{1,4}\)|[a-zA-Z][.)])\s")
_COMMENT_MARKERS = ("*", "//", ";")
_QUOTE_OR_HEADING = re.compile(r"^\s*(?:(?:>\s?)+|#+(?=\s))")


def is_copyright_line(line: str) -> bool:
    """Whether ``line`` is a copyright statement ("Copyright (c) 2015 Foo", "(c) ...",
    "All rights reserved.")."""
    return bool(_COPYRIGHT_LINE.match(line.strip()))


def _clean_copyright(line: str) -> str:
    return re.sub(r"\s+", " ", line.strip().lstrip("*#> ").rstrip("* "))


def strip_copyright_lines(text: str) -> tuple[str, list[str]]:
    """Remove the copyright lines (and blank lines between them) at the top of ``text``.

    Returns the rest of the text and the removed copyright lines (stripped). Only the top is
    touched: a licence's own clauses ("the above copyright notice ...") stay.
    """
    lines = text.splitlines()
    found: list[str] = []
    i = 0
    while i < len(lines):
        s = lines[i].strip()
        if not s or _RULE_LINE.match(s):
            i += 1
            continue
        if is_copyright_line(s):
            found.append(_clean_copyright(s))
            i += 1
            continue
        break
    return "\n".join(lines[i:]), found


def prepare_text(text: str) -> str:
    """Remove markup that would break phrase matching, keeping lines (and line count).

    Unifies newlines, tabs and no-break spaces; drops markdown bold (``**``), markdown quote
    (``>``) and heading (``#``) markers at line starts, and a comment marker (``*``, ``//``,
    ``;``) found at the start of at least 80% of the non-empty lines.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\t", " ")
    text = text.replace("\u00a0", " ").replace("**", "")
    lines = [_QUOTE_OR_HEADING.sub("", ln) for ln in text.split("\n")]
    stripped = [ln.strip() for ln in lines]
    nonempty = [ln for ln in stripped if ln]
    for marker in _COMMENT_MARKERS:
        hits = [ln for ln in nonempty if ln == marker or ln.startswith(marker + " ")]
        if len(nonempty) >= 3 and len(hits) >= 0.8 * len(nonempty):
            lines = [
                ln[len(marker):] if (ln == marker or ln.startswith(marker + " ")) else ln
                for ln in stripped
            ]
            break
    return "\n".join(lines)


def normalise_text(text: str) -> str:
    """Normalise a licence text's layout, keeping its words and punctuation.

    Drops carriage returns, tabs, indentation, comment/quote markers found on most lines,
    markdown bold and rule lines; re-joins wrapped lines into paragraphs (list items keep their
    own line); paragraphs are separated by one blank line.
    """
    lines = [ln.strip() for ln in prepare_text(text).split("\n")]
    paragraphs: list[list[str]] = []
    current: list[str] = []
    for ln in lines:
        if not ln or _RULE_LINE.match(ln):
            if current:
                paragraphs.append(current)
                current = []
            continue
        ln = re.sub(r" {2,}", " ", ln)
        if current and not _LIST_ITEM.match(ln):
            current[-1] = current[-1] + " " + ln
        else:
            current.append(ln)
    if current:
        paragraphs.append(current)
    return "\n\n".join("\n".join(p) for p in paragraphs)


def comparison_key(text: str) -> str:
    """Lower-case words only: two texts with the same key are the same licence text."""
    return _words(text)


def shingles(key: str, k: int = 5) -> frozenset[tuple[str, ...]]:
    words = key.split()
    if len(words) <= k:
        return frozenset([tuple(words)])
    return frozenset(tuple(words[i:i + k]) for i in range(len(words) - k + 1))


def jaccard(a: frozenset[Any], b: frozenset[Any]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


# ------------------------------------------------------------------------------- splitting


@dataclass
class Segment:
    """A piece of a file: a recognised licence (``family`` set) or leftover text (``None``)."""

    family: str | None
    text: str  # normalised
    start: int
    end: int
    copyright: list[str] = field(default_factory=list)
    problem: str = ""  # set when a recognised opening has no closing


def _looks_like_licence(text: str) -> bool:
    return bool(re.search(r"warrant", text, re.IGNORECASE))


def split_licences(text: str) -> list[Segment]:
    """Cut ``text`` into the licences it contains (in order) and the text left between them.

    A licence runs from its detector's opening phrase to the first closing phrase within
    ``max_chars``; the copyright lines just before it go to its ``copyright``. An opening
    without a closing gives a segment with ``problem`` set (and scanning continues after it).
    Leftover pieces (``family`` None) are returned only when they look like licence text
    (they mention a warranty); their top copyright lines are stripped into ``copyright``.
    """
    text = prepare_text(text)
    starts: list[tuple[int, int, int, re.Match[str]]] = []
    for order, det in enumerate(DETECTORS):
        for m in det.start.finditer(text):
            starts.append((m.start(), order, m.end(), m))
    starts.sort(key=lambda s: (s[0], s[1]))
    out: list[Segment] = []
    pos = 0
    for s_pos, order, s_end, _m in starts:
        if s_pos < pos:
            continue
        det = DETECTORS[order]
        window = text[s_end : s_end + det.max_chars]
        m_end = det.end.search(window)
        pre = text[pos:s_pos]
        if m_end is None:
            out.append(Segment(det.name, "", s_pos, s_end,
                               problem=f"{det.name} opening phrase without its closing phrase within "
                                       f"{det.max_chars} characters (a mention, a truncated "
                                       f"text or an unusual variant)"))
            continue
        end = s_end + m_end.end()
        _leftover(pre, pos, out)
        # The copyright lines of this licence: those in the last paragraphs before it.
        pre_lines = [ln.strip() for ln in pre.splitlines()[-15:]]
        cr = [_clean_copyright(ln) for ln in pre_lines if is_copyright_line(ln)]
        raw = text[s_pos:end]
        norm = normalise_text(raw)
        out.append(Segment(det.classify(norm), norm, s_pos, end, copyright=cr))
        pos = end
    _leftover(text[pos:], pos, out)
    return out


def _leftover(piece: str, offset: int, out: list[Segment]) -> None:
    if not piece.strip() or not _looks_like_licence(piece):
        return
    body, cr = strip_copyright_lines(piece)
    norm = normalise_text(body)
    # Drop copyright lines anywhere in leftovers (they are headers of bundled components).
    norm = "\n\n".join(p for p in norm.split("\n\n") if not is_copyright_line(p))
    if norm:
        out.append(Segment(None, norm, offset, offset + len(piece), copyright=cr))


def detect_family(text: str) -> str | None:
    """The family of the first licence recognised in ``text`` (None if none is)."""
    for seg in split_licences(text):
        if seg.family is not None and not seg.problem:
            return seg.family
    return None


# ----------------------------------------------------------------------- installed files

_META_SKIP = {
    "metadata", "record", "wheel", "installer", "requested", "top_level.txt", "entry_points.txt",
    "direct_url.json", "pkg-info", "sources.txt", "dependency_links.txt", "not-zip-safe",
    "zip-safe", "requires.txt", "namespace_packages.txt", "installed-files.txt",
}
_LICENCE_NAME = re.compile(r"licen[cs]e|copying|copyright|notice", re.IGNORECASE)
_NOT_LICENCE_NAME = re.compile(
    r"^(?:authors?|contributors?|readme|changelog|changes|history|credits|maintainers)",
    re.IGNORECASE,
)
_BINARY_SUFFIX = {".pyc", ".so", ".pyd", ".dll", ".png", ".jpg", ".gif", ".ttf", ".otf"}


@dataclass(frozen=True)
class LicenceFile:
    """A candidate licence text: a file, or the ``License`` metadata field."""

    package: str
    version: str
    ref: str  # "<package>==<version>:<path in site-packages>" or ":METADATA[License]"
    text: str
    notice: bool  # NOTICE files: only recognised licences count


def _metadata_relpath(parts: tuple[str, ...]) -> tuple[str, ...] | None:
    for i, p in enumerate(parts):
        if p.endswith(".dist-info") or p.endswith(".egg-info"):
            return parts[i + 1:]
    return None


def is_licence_file(sub: tuple[str, ...]) -> bool:
    """Whether a file at ``sub`` (its path inside the metadata folder) holds licence text."""
    if not sub:
        return False
    base = sub[-1]
    if base.lower() in _META_SKIP or PurePosixPath(base).suffix.lower() in _BINARY_SUFFIX:
        return False
    if _NOT_LICENCE_NAME.match(base):
        return False
    in_licenses_dir = any(p.lower() in {"licenses", "licences", "license_files"} for p in sub[:-1])
    return in_licenses_dir or bool(_LICENCE_NAME.search(base))


def _dist_files(dist: importlib.metadata.Distribution) -> Iterator[tuple[str, Path]]:
    """(path as in RECORD, file) of the files in the distribution's metadata folder.

    The folder is listed directly when the distribution has one on disk (fast, and it also
    sees files missing from RECORD); otherwise RECORD (``dist.files``) is used.
    """
    root = getattr(dist, "_path", None)  # importlib.metadata.PathDistribution
    if root is not None and Path(root).is_dir():
        root = Path(root)
        for p in sorted(root.rglob("*")):
            if p.is_file():
                yield str(PurePosixPath(root.name, *p.relative_to(root).parts)), p
        return
    for f in dist.files or []:
        yield str(f), Path(str(dist.locate_file(f)))


def licence_files(
    path: list[str] | None = None, skip: Callable[[str, str], None] | None = None
) -> list[LicenceFile]:
    """The licence texts of the distributions found on ``path`` (default ``sys.path``)."""
    if path is not None:
        dists = importlib.metadata.distributions(path=path)
    else:
        dists = importlib.metadata.distributions()
    seen: set[tuple[str, str]] = set()
    out: list[LicenceFile] = []
    for dist in dists:
        try:
            name = (dist.metadata.get("Name") or "").strip()
        except Exception:  # a broken metadata folder must not stop the scan
            name = ""
        if not name:
            continue
        version = str(dist.version)
        key = (re.sub(r"[-_.]+", "-", name).lower(), version)
        if key in seen:  # the same distribution on two path entries
            continue
        seen.add(key)
        try:
            files = list(_dist_files(dist))
        except Exception as exc:  # unreadable RECORD or folder
            if skip:
                skip(f"{name}=={version}", f"cannot list the metadata files: {exc}")
            files = []
        for rel, p in files:
            sub = _metadata_relpath(PurePosixPath(rel).parts)
            if sub is None or not is_licence_file(sub):
                continue
            ref = f"{name}=={version}:{rel}"
            try:
                data = p.read_bytes()
            except OSError as exc:
                if skip:
                    skip(ref, f"cannot read: {exc.strerror or exc}")
                continue
            if len(data) > MAX_FILE_BYTES:
                if skip:
                    skip(ref, f"larger than {MAX_FILE_BYTES} bytes")
                continue
            try:
                text = data.decode("utf-8-sig")
            except UnicodeDecodeError:
                if skip:
                    skip(ref, "not UTF-8 text")
                continue
            out.append(LicenceFile(name, version, ref, text,
                                   notice=sub[-1].lower().startswith("notice")))
        lic = dist.metadata.get("License") or ""
        if len(lic.split()) > FIELD_MIN_WORDS:
            # Core metadata folds multi-line fields with 8 spaces (or "|" in old versions).
            lic = re.sub(r"\n(?: {8}|\|)", "\n", lic)
            out.append(LicenceFile(name, version, f"{name}=={version}:METADATA[License]", lic, False))
    out.sort(key=lambda f: f.ref)
    return out


# ------------------------------------------------------------------------------ grouping


@dataclass
class Occurrence:
    family: str
    text: str
    key: str
    package: str
    ref: str
    copyright: list[str]


@dataclass
class Variant:
    family: str
    representative: str  # text
    rep_key: str
    rep_shingles: frozenset[tuple[str, ...]]
    members: list[Occurrence] = field(default_factory=list)
    exact_texts: int = 0
    min_similarity: float = 1.0

    @property
    def packages(self) -> list[str]:
        return sorted({m.package for m in self.members}, key=str.lower)


def group_variants(occurrences: list[Occurrence], threshold: float) -> list[Variant]:
    """Collapse the occurrences of one family into variants (identical or near-identical text).

    Exact groups (same :func:`comparison_key`) are taken most widespread first; each joins the
    first variant whose representative it matches with word-5-gram Jaccard >= ``threshold``,
    else starts a new variant. Deterministic for a given input set.
    """
    exact: dict[str, list[Occurrence]] = {}
    for o in occurrences:
        exact.setdefault(o.key, []).append(o)

    def rank(item: tuple[str, list[Occurrence]]) -> tuple[int, int, str]:
        key, occ = item
        return (-len({o.package for o in occ}), -len(occ), text_id(key))

    variants: list[Variant] = []
    for key, occ in sorted(exact.items(), key=rank):
        sh = shingles(key)
        for v in variants:
            sim = jaccard(sh, v.rep_shingles)
            if sim >= threshold:
                v.members.extend(occ)
                v.exact_texts += 1
                v.min_similarity = min(v.min_similarity, sim)
                break
        else:
            rep = sorted(occ, key=lambda o: o.ref)[0]
            variants.append(Variant(occ[0].family, rep.text, key, sh, list(occ), 1))
    variants.sort(key=lambda v: (-len(v.packages), -len(v.members), text_id(v.rep_key)))
    return variants


# -------------------------------------------------------------------------------- source

_PARAMS = {"min_words", "families", "max_per_family", "near_duplicate_threshold",
           "unknown_published", "path"}


def _err(key: str, value: Any, why: str) -> SourceError:
    return SourceError(f"source installed_licences: param {key!r} = {value!r} {why}")


@SOURCES.register("installed_licences")
class InstalledLicences(Source):
    """Distinct licence texts of the installed Python distributions."""

    name = "installed_licences"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        unknown = sorted(set(params) - _PARAMS)
        if unknown:
            raise SourceError(
                f"source installed_licences: unknown param(s) {unknown}; known: {sorted(_PARAMS)}"
            )
        mw = params.get("min_words", 50)
        if isinstance(mw, bool) or not isinstance(mw, int) or mw < 0:
            raise _err("min_words", mw, "must be an integer >= 0")
        self.min_words: int = mw

        fams = params.get("families")
        self.families: set[str] | None = None
        if fams is not None:
            if not isinstance(fams, (list, tuple, set)):
                raise _err("families", fams, "must be a list of licence families")
            canon = {f.lower(): f for f in [*FAMILIES, UNKNOWN]}
            chosen = set()
            for f in fams:
                if not isinstance(f, str) or f.lower() not in canon:
                    raise _err("families", fams, f"has unknown family {f!r}; known: "
                               f"{', '.join(sorted(canon.values()))}")
                chosen.add(canon[f.lower()])
            self.families = chosen

        mpf = params.get("max_per_family")
        if mpf is not None and (isinstance(mpf, bool) or not isinstance(mpf, int) or mpf < 1):
            raise _err("max_per_family", mpf, "must be an integer >= 1 or null")
        self.max_per_family: int | None = mpf

        thr = params.get("near_duplicate_threshold", 0.9)
        if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not 0 < thr <= 1:
            raise _err("near_duplicate_threshold", thr, "must be a number in (0, 1]")
        self.threshold = float(thr)

        up = params.get("unknown_published")
        self.unknown_published: dt.date | None = None
        if up is not None:
            if isinstance(up, dt.datetime):
                up = up.date()
            if isinstance(up, str):
                try:
                    up = dt.date.fromisoformat(up.strip())
                except ValueError:
                    raise _err("unknown_published", up, "is not an ISO date (YYYY-MM-DD)") from None
            if not isinstance(up, dt.date):
                raise _err("unknown_published", up, "is not an ISO date (YYYY-MM-DD)")
            self.unknown_published = up

        path = params.get("path")
        if path is not None:
            if isinstance(path, str):
                path = [path]
            if not isinstance(path, (list, tuple)) or not all(isinstance(p, str) for p in path):
                raise _err("path", path, "must be a folder or a list of folders")
            path = [str(Path(p).expanduser().resolve()) for p in path]
        self.path: list[str] | None = path

    # ------------------------------------------------------------------------------------

    def collect(self) -> dict[str, list[Occurrence]]:
        """The usable licence texts per family (skips recorded)."""
        by_family: dict[str, list[Occurrence]] = {}
        for lf in licence_files(self.path, self.skip):
            segments = split_licences(lf.text)
            if not segments:
                if not lf.notice:
                    self.skip(lf.ref, "no licence text recognised")
                continue
            for i, seg in enumerate(segments, 1):
                ref = lf.ref if len(segments) == 1 else f"{lf.ref}#{i}"
                if seg.problem:
                    self.skip(ref, seg.problem)
                    continue
                family = seg.family
                if family is None:
                    if lf.notice:
                        continue
                    family = UNKNOWN
                n = len(seg.text.split())
                if n < self.min_words:
                    self.skip(ref, f"{family} text of {n} words, fewer than min_words={self.min_words}")
                    continue
                if family == UNKNOWN and self.unknown_published is None:
                    self.skip(ref, "unrecognised licence family")
                    continue
                if self.families is not None and family not in self.families:
                    self.skip(ref, f"family {family} not in param 'families'")
                    continue
                by_family.setdefault(family, []).append(
                    Occurrence(family, seg.text, comparison_key(seg.text), lf.package, ref,
                               seg.copyright)
                )
        return by_family

    def documents(self) -> Iterable[Document]:
        by_family = self.collect()
        for family in sorted(by_family):
            variants = group_variants(by_family[family], self.threshold)
            for idx, v in enumerate(variants, 1):
                title_base = "Unrecognised licence text" if family == UNKNOWN else family
                title = title_base if len(variants) == 1 else f"{title_base} (variant {idx})"
                if self.max_per_family is not None and idx > self.max_per_family:
                    for m in v.members:
                        self.skip(m.ref, f"{title} beyond max_per_family={self.max_per_family}")
                    continue
                if family == UNKNOWN:
                    assert self.unknown_published is not None
                    published = self.unknown_published
                    basis = "param unknown_published (no recognised licence family, no known date)"
                    spdx = "NOASSERTION"
                else:
                    info = FAMILIES[family]
                    published = info.published
                    basis = f"licence publication date of {family}: {info.basis}"
                    spdx = "Apache-2.0" if family == "Apache-2.0-notice" else family
                rep = next(m for m in sorted(v.members, key=lambda o: o.ref) if m.key == v.rep_key)
                copyright_lines = sorted({c for m in v.members for c in m.copyright})
                yield Document(
                    doc_id=f"licence:{family}:{text_id(v.representative, length=12)}",
                    title=title,
                    text=v.representative,
                    published=published,
                    date_basis=basis,
                    url="",
                    licence=spdx,
                    provenance={
                        "family": family,
                        "variant": idx,
                        "n_variants": len(variants),
                        "packages": v.packages,
                        "n_packages": len(v.packages),
                        "occurrences": sorted(m.ref for m in v.members),
                        "n_occurrences": len(v.members),
                        "representative": rep.ref,
                        "exact_texts": v.exact_texts,
                        "min_similarity": round(v.min_similarity, 4),
                        "near_duplicate_threshold": self.threshold,
                        "copyright_lines": copyright_lines,
                        "python": sys.version.split()[0],
                    },
                )
