"""Wikitext to plain text, as a reader of the rendered article sees its prose.

Reference: docs/wikipedia.md.
"""

from __future__ import annotations

import re

import mwparserfromhell
from mwparserfromhell.nodes import Comment, ExternalLink, Heading, Tag, Template, Wikilink
from mwparserfromhell.wikicode import Wikicode

DEFAULT_CUT_AT = "References"

#: Link namespaces whose links render as media or page metadata, not as prose.
_DROPPED_LINK_NAMESPACES = frozenset({"file", "image", "media", "category"})
#: Tags whose content is not prose (references, tables, media, code-like blocks).
_DROPPED_TAGS = frozenset({
    "ref", "references", "table", "gallery", "imagemap", "timeline", "graph", "math", "chem",
    "score", "templatedata", "categorytree", "inputbox", "syntaxhighlight", "source", "mapframe",
    "maplink", "noinclude", "indicator", "section", "hiero",
})
#: An interlanguage link: a language code and a colon, with no leading colon
#: (``[[de:Titel]]``; ``[[:de:Titel]]`` is an inline link and keeps its label).
_INTERLANGUAGE = re.compile(r"^[a-z]{2,3}(?:-[a-z0-9]+)*\s*:", re.ASCII)
_BEHAVIOUR_SWITCH = re.compile(r"__[A-Z]+__")
_LIST_LINE = re.compile(r"^[*#:;]")
_REDIRECT = re.compile(r"^\s*#\s*redirect\s*:?\s*\[\[", re.IGNORECASE)


def is_redirect(wikitext: str) -> bool:
    """Whether the wikitext is a redirect (``#REDIRECT [[Target]]``)."""
    return bool(_REDIRECT.match(wikitext))


def template_names(wikitext: str) -> list[str]:
    """The names of the templates the wikitext calls directly (as written, stripped)."""
    code = mwparserfromhell.parse(wikitext)
    return [str(t.name).strip() for t in code.filter_templates(recursive=True)]


def category_names(wikitext: str) -> list[str]:
    """The categories the wikitext puts the page in directly (names without the prefix)."""
    code = mwparserfromhell.parse(wikitext)
    out = []
    for link in code.filter_wikilinks(recursive=True):
        ns, _, name = str(link.title).strip().partition(":")
        if name and ns.strip().lower() == "category":
            out.append(name.strip())
    return out


def _link_namespace(link: Wikilink) -> str:
    title = str(link.title).strip()
    ns, sep, _ = title.partition(":")
    return ns.strip().lower() if sep else ""


def _drop(node: object) -> bool:
    if isinstance(node, (Template, Comment)):
        return True
    if isinstance(node, Tag):
        return str(node.tag).strip().lower() in _DROPPED_TAGS
    if isinstance(node, Wikilink):
        title = str(node.title).strip()
        return (_link_namespace(node) in _DROPPED_LINK_NAMESPACES
                or bool(_INTERLANGUAGE.match(title)))
    return False


def _cut(code: Wikicode, cut_at: str | None) -> None:
    """Remove everything from the first heading equal to ``cut_at`` on."""
    if not cut_at:
        return
    want = cut_at.strip().casefold()
    for i, node in enumerate(code.nodes):
        if isinstance(node, Heading) and node.title.strip_code().strip().casefold() == want:
            del code.nodes[i:]
            return


def _remove(code: Wikicode) -> None:
    """Remove the non-prose nodes (recursively: a ref inside a link label goes too)."""
    for node in list(code.nodes):
        if _drop(node):
            code.remove(node, recursive=False)
    for node in code.nodes:
        for child in _children(node):
            _remove(child)


def _children(node: object) -> list[Wikicode]:
    if isinstance(node, Wikilink):
        return [c for c in (node.text,) if c is not None]
    if isinstance(node, ExternalLink):
        return [c for c in (node.title,) if c is not None]
    if isinstance(node, Tag):
        return [c for c in (node.contents,) if c is not None]
    if isinstance(node, Heading):
        return [node.title]
    return []


def _prose(code: Wikicode) -> str:
    """The text of the remaining nodes; a heading becomes a paragraph break."""
    for node in code.filter_headings(recursive=False):
        code.replace(node, "\n\n", recursive=False)
    return code.strip_code(normalize=True, collapse=False)


def _list_items_apart(wikitext: str) -> str:
    """Put each list line in a paragraph of its own (a blank line before and after)."""
    out = []
    for line in wikitext.split("\n"):
        if _LIST_LINE.match(line):
            out.extend(["", line, ""])
        else:
            out.append(line)
    return "\n".join(out)


def normalise_whitespace(text: str) -> str:
    """Paragraphs one per line, separated by one blank line (see the module docstring)."""
    paragraphs = []
    for block in re.split(r"\n\s*\n", text):
        line = " ".join(block.split())
        if line:
            paragraphs.append(line)
    return "\n\n".join(paragraphs)


def to_text(wikitext: str, cut_at: str | None = DEFAULT_CUT_AT) -> str:
    """The plain text of ``wikitext`` (see the module docstring for what is kept)."""
    code = mwparserfromhell.parse(_list_items_apart(wikitext))
    _cut(code, cut_at)
    _remove(code)
    text = _BEHAVIOUR_SWITCH.sub("", _prose(code))
    return normalise_whitespace(text)
