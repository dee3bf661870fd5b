"""copyprobe.report_pages: the HTML pages of the Markdown tables and the environment table."""

from __future__ import annotations

import lxml.html
import pandas as pd
import pytest

from copyprobe.report_pages import environment_frame, environment_page, markdown_page

TABLE_MD = """# Curation report: smol (cutoff 2024-06-30)

| split | kept | title |
|---|---|---|
| pre | 3 | <script>alert(1)</script> |
| post | 2 | A & B |

Blind baseline: AUC 1.00.
"""


def test_a_markdown_table_becomes_a_page_with_its_notes(tmp_path):
    md = tmp_path / "smol.md"
    md.write_text(TABLE_MD, encoding="utf-8")
    doc = lxml.html.fromstring(markdown_page(md))
    assert doc.findtext(".//title") == "Curation report: smol (cutoff 2024-06-30)"
    assert [th.text_content() for th in doc.iter("th")] == ["split", "kept", "title"]
    rows = [[td.text_content() for td in tr.iter("td")] for tr in doc.iter("tr")][1:]
    # raw HTML in a cell is shown as text, never run
    assert rows == [["pre", "3", "<script>alert(1)</script>"], ["post", "2", "A & B"]]
    assert not list(doc.iter("script"))
    assert "Blind baseline: AUC 1.00." in doc.text_content()
    assert doc.find_class("source")[0].text_content() == str(md)


def test_a_markdown_file_without_a_heading_is_titled_by_its_name(tmp_path):
    md = tmp_path / "msr_table.md"
    md.write_text("| a |\n|---|\n| 1 |\n", encoding="utf-8")
    assert lxml.html.fromstring(markdown_page(md)).findtext(".//title") == "msr_table.md"


def _environment(tmp_path, frame: pd.DataFrame):
    path = tmp_path / "environment.parquet"
    frame.to_parquet(path)
    return path


def test_the_environment_table_is_grouped_by_kind_in_its_order(tmp_path):
    path = _environment(tmp_path, pd.DataFrame({
        "kind": ["python", "package", "package", "library_module", "model_file"],
        "name": ["python", "pandas", "numpy", "copyprobe/config.py", "smol"],
        "version": ["3.11.2", "2.2.3", "2.1.0", None, None],
        "sha256": [None, None, None, "ab" * 32, "cd" * 32],
    }))
    frame = environment_frame(path)
    assert list(frame["kind"]) == ["python", "package", "package", "library_module",
                                   "model_file"]
    assert list(frame["name"])[1:3] == ["numpy", "pandas"]  # by name within a kind
    doc = lxml.html.fromstring(environment_page(path))
    assert [h.text_content() for h in doc.iter("h2")] == [
        "python (1)", "package (2)", "library_module (1)", "model_file (1)"]
    cells = [[td.text_content() for td in tr.iter("td")] for tr in doc.iter("tr")]
    assert ["numpy", "2.1.0", ""] in cells and ["smol", "", "cd" * 32] in cells
    assert "5 entries" in doc.text_content()


def test_an_environment_table_without_its_columns_is_named(tmp_path):
    path = _environment(tmp_path, pd.DataFrame({"kind": ["python"], "name": ["python"]}))
    with pytest.raises(ValueError, match=r"environment\.parquet: the environment table lacks "
                                         r"the column\(s\) version, sha256"):
        environment_frame(path)
