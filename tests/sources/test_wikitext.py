"""Wikitext -> plain text (copyprobe.sources.wikitext), on hand-written snippets and on the
test wiki's flagship article."""

import pytest

from copyprobe.sources.wikitext import (
    category_names,
    is_redirect,
    normalise_whitespace,
    template_names,
    to_text,
)
from tests.servers import wiki_pages


@pytest.mark.parametrize("wikitext, expected", [
    ("A {{Infobox|name=Zed|x={{nested|deep}}}}b", "A b"),
    ("Fact.<ref>Hidden source, 1902.</ref> Next.", "Fact. Next."),
    ('Fact.<ref name="a">Hidden</ref> Again.<ref name="a"/> End.', "Fact. Again. End."),
    ("Before\n{| class=wikitable\n! H\n|-\n| cellword\n|}\nAfter", "Before\n\nAfter"),
    ("x [[File:A.jpg|thumb|captionword]] y [[Image:B.png|alt]] z", "x y z"),
    ("Text [[Category:Hidden cat]] [[category:Other]]", "Text"),
    ("Text [[de:Leuchtturm]] [[zh-yue:燈塔]]", "Text"),
    ("See [[:de:Leuchtturm|the German article]].", "See the German article."),
    ("The [[Harrowgate]] and [[Harrowshire|the county]].", "The Harrowgate and the county."),
    ("'''Bold''' and ''italic'' and '''''both'''''", "Bold and italic and both"),
    ("[https://example.org label words] and [https://example.org]", "label words and"),
    ("Lead.\n== History ==\nBody.", "Lead.\n\nBody."),
    ("__NOTOC__Lead<!-- hidden comment -->text", "Leadtext"),
    ("AT&amp;T &nbsp;x", "AT&T x"),
])
def test_markup_removed_and_prose_kept(wikitext, expected):
    assert to_text(wikitext, cut_at=None) == expected


def test_cut_at_heading_default_references_and_none():
    text = ("Lead.\n== History ==\nOld.\n== References ==\n{{reflist}}\n"
            "== External links ==\nLinkword")
    assert to_text(text) == "Lead.\n\nOld."
    assert to_text(text, cut_at="history") == "Lead."  # case-insensitive
    assert to_text(text, cut_at=None) == "Lead.\n\nOld.\n\nLinkword"
    assert to_text(text, cut_at="") == "Lead.\n\nOld.\n\nLinkword"
    # the word alone in prose does not cut: only a heading does
    assert to_text("References to the past.\n== Notes ==\nN.") == "References to the past.\n\nN."


def test_whitespace_paragraphs_and_list_items():
    text = "First line\nsecond   line.\n\n\n* item one\n* item two\nAfter list."
    assert to_text(text) == "First line second line.\n\nitem one\n\nitem two\n\nAfter list."
    assert normalise_whitespace("  a \n b\n \n\n c\t d  ") == "a b\n\nc d"


def test_redirect_templates_categories():
    assert is_redirect("#REDIRECT [[Target]]")
    assert is_redirect("  #redirect:[[Target]]")
    assert not is_redirect("The #REDIRECT [[x]] in prose")
    assert template_names("{{Disambiguation}} {{ cite web |a=1}}") == ["Disambiguation", "cite web"]
    assert category_names("[[Category:Disambiguation pages]] [[Other]] [[ category : X ]]") == [
        "Disambiguation pages", "X"]


def test_flagship_article_of_the_test_wiki():
    text = to_text(wiki_pages.page("Harrowgate Lighthouse").latest.text)
    for feature, word in wiki_pages.MARKUP_ONLY_WORDS.items():
        assert word not in text, feature
    for word in wiki_pages.BODY_WORDS:
        assert word in text
    assert "'''" not in text and "[[" not in text and "{{" not in text and "==" not in text
    assert text.startswith("The Harrowgate Lighthouse is a whitewashed granite tower")
    assert text.endswith("Visitors may now climb the spiral stair on open days.")
    assert "\n\n\n" not in text
