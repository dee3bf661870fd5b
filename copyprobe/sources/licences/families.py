"""Licence families: the SPDX-style names the detectors produce, and each one's publication
date with the basis for it."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

# The family of licence-like text that no detector recognises.
UNKNOWN = "unknown"


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
