"""Copyright lines: holder, first year and the line itself, and what is not a notice."""

from __future__ import annotations

import pytest

from copyprobe.sources.materials.rights import (
    Notice,
    best_notice,
    parse_notice,
    parse_year,
    strip_notices,
)


@pytest.mark.parametrize("line, holder, year", [
    ("© 2025 Cable News Network. A Warner Bros. Discovery Company. All Rights Reserved.",
     "Cable News Network", 2025),
    ("Copyright (c) 2015-2020 Jane Doe. All rights reserved.", "Jane Doe", 2015),
    ("Copyright © BBC 2024", "BBC", 2024),
    ("Copyright 2025 BBC. All rights reserved. The BBC is not responsible for external sites.",
     "BBC", 2025),
    ("Copyright (c) 2010, Foo, Inc.", "Foo, Inc.", 2010),
    ("copyright 2001-present Python Software Foundation; All Rights Reserved",
     "Python Software Foundation", 2001),
    ("(c) 2019 by J. R. R. Tolkien", "J. R. R. Tolkien", 2019),
    ("Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>",
     "Free Software Foundation, Inc.", 2007),
    ("Copyright (c) 2013 Andrew Kesterson <andrew@aklabs.net>, Caleb Case <caleb@example.com>",
     "Andrew Kesterson, Caleb Case", 2013),
    ("Copyright (c) 2013-2026 by the Babel Team, see AUTHORS for more information.",
     "the Babel Team", 2013),
    ("&copy; 1999 Old Site", "Old Site", 1999),
])
def test_notice_gives_holder_and_first_year(line, holder, year):
    n = parse_notice(line)
    assert n == Notice(holder=holder, year=year, notice=line.replace("&copy;", "©"))


@pytest.mark.parametrize("line", [
    "Copyright [yyyy] [name of copyright owner]",       # Apache-2.0's template
    "Copyright (c) <year> <copyright holders>",         # MIT's template
    "Copyright law protects the expression of facts.",  # prose
    "(c) the council decides on the budget.",           # the third item of a list
    "All rights reserved.",                             # no holder, no year
    "The above copyright notice and this permission notice shall be included",
    "",
    "© " + "word " * 60,                                # too long for a notice line
])
def test_not_a_notice(line):
    assert parse_notice(line) is None


def test_strip_notices_removes_the_lines_and_returns_them_in_order():
    text = "Title\nBody line one.\n© 2025 A News Co.\nCNN Sans ™ & © 2016 Cable News Network.\n"
    rest, found = strip_notices(text)
    assert rest == "Title\nBody line one."
    assert [(n.holder, n.year) for n in found] == [("A News Co.", 2025),
                                                   ("Cable News Network", 2016)]
    assert best_notice(found) == found[0]
    assert best_notice([Notice("X", None, "© X"), found[1]]) == found[1]
    assert best_notice([]) is None


@pytest.mark.parametrize("value, year", [(2015, 2015), ("2015", 2015), (2015.0, 2015),
                                         ("2015.0", 2015), ("", None), (None, None),
                                         (float("nan"), None)])
def test_parse_year(value, year):
    assert parse_year(value) == year


@pytest.mark.parametrize("value, why", [("15", "four-digit"), ("1500", "outside"),
                                        ("3000", "outside"), (True, "not a year"),
                                        ("2015-2016", "four-digit")])
def test_parse_year_rejects(value, why):
    with pytest.raises(ValueError, match=why):
        parse_year(value, where="row 3: ")
