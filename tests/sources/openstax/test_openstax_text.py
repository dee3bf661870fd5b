"""Text extraction as a reader sees it, on small CNXML and XHTML documents."""

from __future__ import annotations

from lxml import etree

from copyprobe.sources.openstax.text import page_lines, page_text

CNXML = "http://cnx.rice.edu/cnxml"


def cnxml(body: str) -> etree._Element:
    doc = etree.fromstring(
        f'<document xmlns="{CNXML}" xmlns:m="http://www.w3.org/1998/Math/MathML">'
        f"<title>T</title><content>{body}</content></document>")
    return doc.find(f"{{{CNXML}}}content")


def test_empty_cross_references_vanish_without_double_spaces():
    root = cnxml('<para id="p">magnification (<link target-id="fig-1" document=""/>\n'
                 '      <emphasis effect="bold">a</emphasis>). As <link target-id="t1"/> '
                 'shows, see <link target-id="f2"/>, and (<link target-id="f3"/>) too.</para>')
    assert page_lines(root) == ["magnification (a). As shows, see, and too."]


def test_wrapped_lines_join_with_single_spaces_and_blocks_are_lines():
    root = cnxml("<para>Human\n      <term>anatomy</term>\n      is the study.</para>"
                 "<list><item>one\n  item</item><item>two</item></list>"
                 "<section><title>Head</title><para>Body.</para></section>")
    assert page_lines(root) == ["Human anatomy is the study.", "one item", "two", "Head",
                                "Body."]


def test_dropped_material_leaves_no_text():
    root = cnxml(
        "<para>Keep this.</para>"
        "<figure><title>Fig title</title><media alt='x'><image src='a.jpg'/></media>"
        "<caption>Caption text</caption></figure>"
        "<para>Area <m:math><m:mi>pi</m:mi><m:mi>r</m:mi></m:math> here.</para>"
        "<exercise><problem><para>Question text</para></problem>"
        "<solution><para>Answer text</para></solution></exercise>"
        "<table><tgroup cols='1'><tbody><row><entry>Cell text</entry></row></tbody></tgroup>"
        "</table>"
        "<para>Claim<footnote>Footnote text</footnote> made.</para>"
        "<section class='summary'><title>Chapter Review</title><para>Summary text</para>"
        "</section>"
        "<note class='interactive'><title>Video only</title><media alt='v'>"
        "<iframe src='v'/></media></note>"
        "<note><title>Kept note</title><para>Note body.</para></note>")
    assert page_lines(root) == ["Keep this.", "Area here.", "Claim made.", "Kept note",
                                "Note body."]


def test_code_blocks_keep_their_lines():
    root = cnxml("<para>Run:</para><code>\n    import math\n    print(math.pi)</code>"
                 "<para>Inline <code class='inline-code'>x = 1</code> stays.</para>")
    assert page_lines(root) == ["Run:", "import math", "print(math.pi)",
                                "Inline x = 1 stays."]


def test_xhtml_page_as_the_archive_serves_it(cells_page):
    CELLS, CELLS_TEXT = cells_page
    root = etree.fromstring(CELLS.encode())
    body = root.find("{*}body")
    text, lines = page_text("What Cells Are", body)
    assert text == CELLS_TEXT
    assert lines == len(CELLS_TEXT.splitlines()) - 1


def test_a_page_with_nothing_but_a_figure_has_no_body():
    text, lines = page_text("Pictures", cnxml("<figure><media alt='x'><image src='a'/></media>"
                                              "</figure>"))
    assert (text, lines) == ("Pictures", 0)
