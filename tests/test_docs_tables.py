"""The docs' tables that restate facts of the code still match the code: the README's command
table and the CLI, docs/studies.md and the study registry, docs/backends.md and the backend
registry, docs/sources.md and the source registry, docs/architecture.md and the packages
(config/README.md is generated and checked by tests/test_config_docs.py)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from copyprobe.cli import build_parser
from copyprobe.generation.base import BACKENDS
from copyprobe.studies import STUDIES

ROOT = Path(__file__).resolve().parents[1]


def table_rows(text: str, header: str) -> list[list[str]]:
    """The cells of the Markdown table whose header row starts with ``header``."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header)]
    assert len(starts) == 1, f"no single table headed {header!r}"
    rows = []
    for line in lines[starts[0] + 2:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def first_column(text: str, header: str) -> list[str]:
    names = []
    for row in table_rows(text, header):
        m = re.fullmatch(r"`([^`]+)`", row[0])
        assert m, f"first cell {row[0]!r} is not one `name`"
        names.append(m.group(1))
    return names


def cli_commands() -> list[str]:
    (action,) = [a for a in build_parser()._actions
                 if isinstance(a, argparse._SubParsersAction)]
    return list(action.choices)


def test_the_readme_lists_every_command_of_the_cli():
    listed = first_column((ROOT / "README.md").read_text(encoding="utf-8"),
                          "| command | does |")
    assert len(listed) == len(set(listed)), "a command listed twice in README.md"
    assert sorted(listed) == sorted(cli_commands())


def test_docs_studies_lists_every_registered_study_with_its_files():
    text = (ROOT / "docs" / "studies.md").read_text(encoding="utf-8")
    rows = table_rows(text, "| study |")
    names = first_column(text, "| study |")
    assert names == STUDIES.names() or sorted(names) == sorted(STUDIES.names())
    for name, row in zip(names, rows):
        study = STUDIES.get(name)
        cls = study if isinstance(study, type) else type(study)
        module = Path(*cls.__module__.split(".")).with_suffix(".py")
        assert row[2] == f"`{module}`", f"{name}: class in {module}, docs say {row[2]}"
        rule = f"`{study.rule_file}`" if study.rule_file else "none"
        assert row[3] == rule, f"{name}: rule file {rule}, docs say {row[3]}"
        (link,) = re.findall(r"\(([\w-]+\.md)\)", row[4])
        assert (ROOT / "docs" / link).is_file(), f"{name}: docs/{link} is missing"


def test_docs_studies_is_linked_from_the_readme():
    assert "(docs/studies.md)" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_docs_backends_lists_every_registered_backend():
    listed = first_column((ROOT / "docs" / "backends.md").read_text(encoding="utf-8"),
                          "| backend | what it runs |")
    assert sorted(listed) == sorted(BACKENDS.names())


def test_a_table_that_drifts_from_the_code_is_caught():
    text = "| command | does |\n|---|---|\n| `validate-config` | x |\n\nafter\n"
    assert first_column(text, "| command | does |") == ["validate-config"]
    assert sorted(first_column(text, "| command | does |")) != sorted(cli_commands())


def test_docs_architecture_covers_every_study_package_and_the_workflow_layer():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    packages = sorted(p.name for p in (ROOT / "copyprobe").iterdir()
                      if (p / "__init__.py").is_file())
    missing = [p for p in packages if f"copyprobe/{p}/" not in text]
    assert not missing, f"docs/architecture.md names no module of {missing}"
    for name in STUDIES.names():
        study = STUDIES.get(name)
        rule_file = getattr(study, "rule_file", None)
        assert rule_file is None or f"`{rule_file}`" in text, f"{name}: {rule_file}"
    for part in ("Snakefile", "rules/", "workflow_scripts/", "rules/spans.smk"):
        assert part in text, part


def test_docs_cite_no_issue_number_and_no_build_machine_path():
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
    bad = re.compile(r"\b[Ii]ssue \d+\b|-issue-\d+\b|(?<![\w.])/(?:work|root|tmp)/\S")
    found = [f"{page.relative_to(ROOT)}:{n}: {line.strip()[:80]}"
             for page in pages
             for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
             if bad.search(line)]
    assert not found, "\n".join(found)
    assert not (ROOT / "docs" / "plans").exists()


def test_docs_sources_lists_every_registered_source_kind():
    from copyprobe.sources import SOURCES

    text = (ROOT / "docs" / "sources.md").read_text(encoding="utf-8")
    listed = set(first_column(text, "| kind | keys (default) |"))
    listed |= set(first_column(text, "| kind | what | docs |"))
    assert sorted(listed) == sorted(SOURCES.names())
