"""Stand-alone HTML pages of the workflow's tables, for Snakemake's report.

The report shows PNG, SVG and HTML results inline (an HTML result in a frame) and offers any
other file, CSV and Markdown included, only as a download; so each Markdown table (with the
notes written under it) and the environment table get an HTML twin made here.
"""

from __future__ import annotations

import html
import os
from pathlib import Path

import pandas as pd
from markdown_it import MarkdownIt

# the environment artifact's columns (one row per Python, platform, package, library module,
# workflow file, config and model file: its version and/or sha256)
ENVIRONMENT_COLUMNS = ("kind", "name", "version", "sha256")

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1rem; color: #1e293b; }
.source { color: #64748b; font-size: 12px; margin: 0 0 .5rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: 13px; }
th, td { border: 1px solid #cbd5e1; padding: 2px 6px; text-align: left; vertical-align: top; }
th { background: #f1f5f9; }
tbody tr:nth-child(even) { background: #f8fafc; }
td.hash, code { font-family: ui-monospace, monospace; font-size: 12px; }
"""


def page(title: str, body: str, *, source: str | None = None) -> str:
    """A complete HTML document around ``body`` (already HTML); ``source`` names the file the
    page was made from, shown above it."""
    origin = f'<p class="source">{html.escape(source)}</p>\n' if source else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f"{origin}{body}</body>\n</html>\n"
    )


def markdown_html(text: str) -> str:
    """CommonMark with pipe tables as HTML; raw HTML in the text is escaped, not passed on
    (the tables quote document titles and model output)."""
    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def markdown_page(path: str | os.PathLike[str]) -> str:
    """The Markdown file at ``path`` as an HTML page titled by its first heading (else its
    file name)."""
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    heading = next((line.lstrip("#").strip() for line in text.splitlines()
                    if line.startswith("#")), p.name)
    return page(heading, markdown_html(text), source=str(path))


def environment_frame(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The environment table at ``path``, rows ordered by kind (in order of first appearance)
    and name; an error names the file and the columns it lacks."""
    frame = pd.read_parquet(path)
    missing = [c for c in ENVIRONMENT_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: the environment table lacks the column(s) "
                         f"{', '.join(missing)} (expected {', '.join(ENVIRONMENT_COLUMNS)})")
    frame = frame.loc[:, list(ENVIRONMENT_COLUMNS)]
    order = {k: i for i, k in enumerate(dict.fromkeys(frame["kind"]))}
    return (frame.assign(_order=frame["kind"].map(order))
            .sort_values(["_order", "name"], kind="stable")
            .drop(columns="_order").reset_index(drop=True))


def environment_page(path: str | os.PathLike[str]) -> str:
    """The environment table as an HTML page: one table per kind, versions and sha256 as
    recorded (an empty cell where a row has none)."""
    frame = environment_frame(path)
    parts = [
        "<h1>Software, code and model versions</h1>\n",
        f"<p>{len(frame)} entries: the versions and sha256 hashes that a rerun must match to "
        "give the same results.</p>\n",
    ]
    for kind, rows in frame.groupby("kind", sort=False):
        parts.append(f"<h2>{html.escape(str(kind))} ({len(rows)})</h2>\n")
        parts.append("<table>\n<thead><tr><th>name</th><th>version</th><th>sha256</th></tr>"
                     "</thead>\n<tbody>\n")
        for r in rows.itertuples(index=False):
            parts.append(
                f"<tr><td>{_cell(r.name)}</td><td>{_cell(r.version)}</td>"
                f'<td class="hash">{_cell(r.sha256)}</td></tr>\n')
        parts.append("</tbody>\n</table>\n")
    return page("Software, code and model versions", "".join(parts), source=str(path))


def _cell(value: object) -> str:
    """A table cell's HTML: empty for a missing value."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return html.escape(str(value))
