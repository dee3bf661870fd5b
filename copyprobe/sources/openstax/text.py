"""The text of an OpenStax page as a reader sees it, from CNXML or from the archive's XHTML.

Reference: docs/openstax.md.
"""

from __future__ import annotations

import re
import textwrap

from lxml import etree

#: Elements dropped with their content (local names, both formats).
DROP_NAMES = frozenset({
    "figure", "media", "image", "img", "iframe", "video", "audio", "object", "embed", "math",
    "table", "exercise", "problem", "solution", "commentary", "footnote", "glossary", "label",
    "caption", "figcaption", "script", "style", "metadata", "abstract", "head",
})
#: XHTML ``data-type`` values dropped with their content.
DROP_DATA_TYPES = frozenset({
    "exercise", "problem", "solution", "commentary", "footnote-refs", "footnote-number",
    "footnote-ref", "glossary", "media", "figure", "abstract", "document-title", "metadata",
    "injected-exercise", "equation", "footnote",
})
#: ``class`` values (either format) of material dropped with its content: what the reader
#: moves to end-of-chapter pages, and the baked end-of-section/chapter containers.
DROP_CLASSES = frozenset({
    "summary", "multiple-choice", "free-response", "references", "review-questions",
    "critical-thinking", "key-terms", "key-equations", "key-concepts", "section-exercises",
    "os-eos", "os-eoc", "os-figure", "os-table", "learning-objectives", "os-caption-container",
})
#: Elements whose text is one line (a block) of the output.
BLOCKS = frozenset({
    "para", "p", "title", "h1", "h2", "h3", "h4", "h5", "h6", "item", "li", "quote",
    "blockquote", "dt", "dd", "definition", "meaning", "equation", "header",
})
#: Containers: their children are blocks; one left with only its title vanishes.
CONTAINERS = frozenset({
    "content", "section", "note", "example", "list", "ul", "ol", "dl", "div", "aside",
    "body", "html", "document", "rule", "statement", "proof",
})
TITLES = frozenset({"title", "h1", "h2", "h3", "h4", "h5", "h6", "header"})
#: Code blocks (CNXML ``<code>`` outside running text, ``<preformat>``, XHTML ``<pre>``).
CODE_BLOCKS = frozenset({"preformat", "pre"})

_GAP = "\x00"  # marks where an element vanished inside a block
_OPENING = "([{“‘"
_CLOSING = ")]},.;:!?”’"
_GAP_RE = re.compile(rf"\s*(?:{_GAP}\s*)+")
_BRACKETED_GAP_RE = re.compile(rf"[(\[]\s*(?:{_GAP}\s*)+[)\]]")


def local(el: etree._Element) -> str:
    """The element's name without namespace ('' for comments and processing instructions)."""
    if not isinstance(el.tag, str):
        return ""
    return etree.QName(el).localname


def _dropped(el: etree._Element) -> bool:
    name = local(el)
    if name in DROP_NAMES:
        return True
    if el.get("data-type") in DROP_DATA_TYPES:
        return True
    return bool(DROP_CLASSES.intersection((el.get("class") or "").split()))


def _is_code_block(el: etree._Element) -> bool:
    name = local(el)
    if name in CODE_BLOCKS:
        return True
    if name != "code":
        return False
    if el.get("display") == "block":
        return True
    parent = el.getparent()
    return parent is not None and local(parent) in CONTAINERS


def _close_gaps(raw: str) -> str:
    def join(m: re.Match[str]) -> str:
        before = raw[m.start() - 1] if m.start() > 0 else ""
        after = raw[m.end()] if m.end() < len(raw) else ""
        if not before or not after or before in _OPENING or after in _CLOSING:
            return ""
        return " " if m.group().replace(_GAP, "") else ""

    raw = _BRACKETED_GAP_RE.sub(_GAP, raw)  # "(Figure 1.2)" with the reference gone
    return _GAP_RE.sub(join, raw)


class _Walker:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.buf: list[str] = []

    def add(self, text: str | None) -> None:
        if text:
            self.buf.append(text)

    def flush(self) -> None:
        raw = "".join(self.buf)
        self.buf = []
        text = " ".join(_close_gaps(raw).split())
        if text:
            self.lines.append(text)

    def walk(self, el: etree._Element) -> None:
        name = local(el)
        if not name:  # comment or processing instruction: only its tail is text
            self.add(el.tail)
            return
        if _dropped(el):
            self.add(_GAP)
            self.add(el.tail)
            return
        if _is_code_block(el):
            self.flush()
            code = textwrap.dedent("".join(el.itertext()).expandtabs())
            self.lines.extend(line.rstrip() for line in code.splitlines() if line.strip())
            self.add(el.tail)
            return
        if name in ("link", "a") and not "".join(el.itertext()).strip() and not len(el):
            self.add(_GAP)  # an empty cross-reference that the website fills in
            self.add(el.tail)
            return
        if name in CONTAINERS:
            self._container(el)
        elif name in BLOCKS:
            self.flush()
            self.add(el.text)
            for child in el:
                self.walk(child)
            self.flush()
        else:  # inline
            self.add(el.text)
            for child in el:
                self.walk(child)
        self.add(el.tail)

    def _container(self, el: etree._Element) -> None:
        self.flush()
        start = len(self.lines)
        body = 0
        self.add(el.text)
        for child in el:
            n = len(self.lines)
            self.walk(child)
            if local(child) not in TITLES and child.get("data-type") != "title":
                body += len(self.lines) - n
        n = len(self.lines)
        self.flush()
        body += len(self.lines) - n
        if body == 0 and local(el) not in ("body", "html", "document", "content"):
            del self.lines[start:]


def page_lines(root: etree._Element) -> list[str]:
    """The text blocks of a CNXML ``<content>`` or an XHTML ``<body>`` (or any element)."""
    w = _Walker()
    w.walk(root)
    w.flush()
    return w.lines


def page_text(title: str, root: etree._Element | None) -> tuple[str, int]:
    """A page's text (its title first, then one line per block) and its number of body lines
    (0: the page has no text besides its title)."""
    body = page_lines(root) if root is not None else []
    head = " ".join(title.split())
    return "\n".join([head, *body] if head else body), len(body)
