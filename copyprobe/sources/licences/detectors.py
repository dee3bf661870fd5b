"""Licence detectors: how each licence (or group of closely related licences) starts and ends,
and how a cut-out text is assigned its exact family.

Each :class:`Detector` has a characteristic opening phrase (e.g. "Redistribution and use in
source and binary forms", "Apache License Version 2.0, January 2004") and closing phrase
("... POSSIBILITY OF SUCH DAMAGE.", "END OF TERMS AND CONDITIONS" plus the standard appendix).
The family of a cut-out licence is then refined from its content: BSD with an endorsement
clause is BSD-3-Clause, with an advertising clause BSD-4-Clause, else BSD-2-Clause; the MIT
opening with "to deal with the Software" is NCSA; and so on. Every family a detector can
return has a date in :data:`copyprobe.sources.licences.families.FAMILIES`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


def _rx(phrase: str) -> re.Pattern[str]:
    """A case-insensitive regex from a phrase where any space matches any whitespace."""
    return re.compile(re.sub(r"(?:\\ )+| +", r"\\s+", phrase), re.IGNORECASE)


def words(text: str) -> str:
    """Lower-case letters and digits only, one space between words."""
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def _classify_bsd(text: str) -> str:
    w = words(text)
    if "all advertising materials mentioning" in w:
        return "BSD-4-Clause"
    if re.search(r"neither the names? of|may not be used to endorse|used to endorse or promote", w):
        return "BSD-3-Clause"
    return "BSD-2-Clause"


def _classify_mit(text: str) -> str:
    w = words(text)
    if "to deal with the software" in w or "neither the names of" in w:
        return "NCSA"
    if "subject to the following conditions" not in w:
        return "MIT-0"
    return "MIT"


def _classify_isc(text: str) -> str:
    w = words(text)
    if "provided that the above copyright notice and this permission notice appear in all" in w:
        return "ISC"
    return "0BSD"


def _classify_hpnd(text: str) -> str:
    return "MIT-CMU" if words(text).startswith("by obtaining using and or copying") else "HPND"


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
