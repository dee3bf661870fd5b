"""Rule report_page (rules/report.smk): one job per page of the report, its table, menu entry
and caption looked up from the pages the studies declare (copyprobe.rule_inputs). Each page's
caption is rendered here as Snakemake's report renders report/report_page.rst (Jinja with
trim_blocks and lstrip_blocks, then docutils); tests/workflow/test_report.py checks the real
report."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from types import SimpleNamespace

import jinja2
import lxml.html
import pytest
from docutils.core import publish_parts

from copyprobe import paths
from copyprobe.config import validate_config
from copyprobe.rule_inputs import SharedInputs
from copyprobe.studies import ReportPage, Study, studies

ROOT = Path(__file__).resolve().parents[1]
CAPTION = ROOT / "report" / "report_page.rst"
API = {"backend": "openai", "model_id": "m", "api_key_env": "K"}
COPYRIGHT = {**API, "studies": ["copyright"]}


@pytest.fixture(scope="module")
def shared() -> SharedInputs:
    """Every kind of page: an MSR model with a sweep and a comparison, a benchmark, a guard,
    an extraction model that the long-form study runs too."""
    cfg = validate_config({
        "sources": {"docs": {"kind": "local", "path": "docs"}},
        "datasets": {"d": ["docs"]},
        "copyright": {"benchmarks": {"b": {"materials": ["docs"]}}, "attribution": {}},
        "spans": {"indexes": {"ix": {"corpora": ["d"]}}},
        "msr": {"attribution": {"index": "ix"}},
        "membership": {"runs": {"given": {"model": "smol", "source": "docs",
                                          "truth": "truth.parquet"}}},
        "models": {"smol": {**API, "cutoff": "2024-06-30"}, "m": copy.deepcopy(COPYRIGHT),
                   "g": {**COPYRIGHT, "base": "m", "guard": {"policy": "block"}},
                   "o": {**COPYRIGHT, "base": "m",
                         "guard": {"input": False, "output": {"min_words": 8}}},
                   "x": {**API, "cutoff": "2024-06-30", "studies": ["extraction", "longform"],
                         "method": "monte_carlo"}},
        "variants": {"w40": {"msr": {"num_words": 40}},
                     "warm": {"decoding": {"temperature": 0.7}}},
        "experiments": {
            "length": {"kind": "sweep", "dataset": "d", "parameter": "input length",
                       "settings": [{"label": 40, "variant": "w40"},
                                    {"label": 200, "variant": "main"}]},
            "temperature": {"kind": "comparison", "dataset": "d",
                            "a": {"label": "greedy", "variant": "main"},
                            "b": {"label": "t0.7", "variant": "warm"}},
        },
    })
    return SharedInputs(cfg, studies(), None)


def _wildcards(page: str) -> SimpleNamespace:
    return SimpleNamespace(page=page.removeprefix("results/report/").removesuffix(".html"))


def _caption(shared: SharedInputs, page: str) -> str:
    """The page's caption as the report shows it (text, whitespace collapsed)."""
    w = _wildcards(page)
    job = SimpleNamespace(config=shared.config, wildcards=w,
                          params=SimpleNamespace(page=shared.report_caption_params(w)))
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    rst = env.from_string(CAPTION.read_text(encoding="utf-8")).render(snakemake=job)
    body = publish_parts(rst, writer="html")["body"]
    assert "system-message" not in body, (page, rst)
    return " ".join(lxml.html.fromstring(f"<div>{body}</div>").text_content().split())


PAGES = {
    "results/report/environment.html": ("Reproducibility", None,
                                        {"table": "versions and hashes"}),
    "results/report/msr/msr_table.html": ("MSR tables", None,
                                          {"table": "results of every model (Table 1)"}),
    "results/report/msr/sweep_length.html": ("MSR tables", None,
                                             {"table": "sweep length (Table 2)"}),
    "results/report/msr/comparisons.html": ("MSR tables", None,
                                            {"table": "settings comparisons"}),
    "results/report/curation/smol.html": ("Curation", None, {"model": "smol"}),
    **{f"results/report/copyright/b/{t}.html": ("Copyright tables", "b", None)
       for t in ("table1", "by_notice_form", "by_category", "table5", "over_refusal")},
    **{f"results/report/copyright/guard/{t}.html": ("Copyright tables", "guard", None)
       for t in ("table2", "table6", "ablation", "latency")},
    "results/report/copyright/guard/guards_compared.html": (
        "Copyright tables", "guard",
        {"table": "guards compared: none, reminder, input, output, both"}),
    "results/report/msr/msr_attribution.html": (
        "MSR tables", None, {"table": "attribution: spans found in the corpus"}),
    **{f"results/report/copyright/b/attribution_{m}.html": (
        "Copyright tables", "b", {"table": f"attribution of {m}"}) for m in ("m", "g", "o")},
    "results/report/extraction/extraction_table.html": (
        "Extraction tables", None, {"table": "extraction probabilities of every model"}),
    "results/report/membership/given.html": ("Membership", None, {"run": "given"}),
    "results/report/longform/longform_table.html": (
        "Long-form tables", None, {"table": "nv-recall of every model"}),
    "results/report/longform/longform_vs_pz.html": (
        "Long-form tables", None, {"table": "nv-recall beside the p_z map"}),
}


def test_every_table_of_every_study_has_a_page_in_its_menu_entry(shared):
    pages = shared.report_pages()
    assert set(pages) == set(PAGES)
    for page, (category, subcategory, labels) in PAGES.items():
        w = _wildcards(page)
        assert shared.report_category(w) == category, page
        assert shared.report_subcategory(w) == subcategory, page
        if labels is not None:
            assert shared.report_labels(w) == labels, page
        assert shared.report_table(w) == pages[page].table
        assert Path(shared.report_table(w)).suffix in (".md", ".parquet")
    assert shared.report_table(_wildcards("results/report/copyright/b/table5.html")) == \
        "results/copyright/b/tables/table5.md"
    assert shared.report_table(_wildcards(paths.ENVIRONMENT_PAGE)) == paths.ENVIRONMENT


def test_the_page_wildcard_matches_exactly_the_declared_pages(shared):
    names = re.compile(rf"(?:{shared.report_page_names()})")
    assert all(names.fullmatch(_wildcards(p).page) for p in PAGES)
    for other in ("msr/msr_table2", "copyright/b", "curation/other", "environment.html", ""):
        assert not names.fullmatch(other), other


def test_pages_of_tables_that_are_not_made_are_not_declared(shared):
    """No comparison, no sweep, no guard pair: no page for their tables."""
    cfg = validate_config({"sources": {"docs": {"kind": "local", "path": "docs"}},
                           "datasets": {"d": ["docs"]},
                           "copyright": {"benchmarks": {"b": {"materials": ["docs"]}}},
                           "models": {"smol": {**API, "cutoff": "2024-06-30"},
                                      "m": copy.deepcopy(COPYRIGHT)}})
    pages = SharedInputs(cfg, studies(), None).report_pages()
    assert not [p for p in pages if "/guard/" in p or "sweep_" in p or "comparisons" in p]
    assert "results/report/msr/msr_table.html" in pages


def test_every_page_has_a_caption_naming_its_settings(shared):
    captions = {page: _caption(shared, page) for page in PAGES}
    assert all(captions.values())
    assert "Models: smol (openai), m (openai), g (openai), o (openai), x (openai)." in \
        captions["results/report/environment.html"]
    text = captions["results/report/extraction/extraction_table.html"]
    assert text.startswith("The extraction study, one row per model and dataset")
    assert "headline (1, 0.5)" in text and "Models: x (openai, monte_carlo, completion)." in text
    assert "50-token prefix, 50-token suffix, stride 50; score path auto" in text
    text = captions["results/report/longform/longform_table.html"]
    assert text.startswith("The long-form study, one row per model")
    assert "Models: x (openai)." in text
    assert "Probe: instruction form, 10 attempt(s), threshold 0.6; at most 20" in text
    text = captions["results/report/longform/longform_vs_pz.html"]
    assert text.startswith("The long-form view beside the exact p_z map")
    assert "p_z of at least 0.5" in text and "Models: x (openai)." in text
    text = captions["results/report/membership/given.html"]
    assert text.startswith("Membership against a known truth, run given")
    assert "on smol (trained elsewhere; truth truth.parquet)" in text
    assert "Source: docs; documents cut to 120 words; seed 0." in text
    assert "Models: smol (openai, cutoff 2024-06-30). Datasets: d (docs)." in \
        captions["results/report/msr/msr_table.html"]
    assert "Variants: w40 ({'msr': {'num_words': 40}})" in \
        captions["results/report/msr/msr_table.html"]
    assert "Sweep: length over input length on dataset d. Settings: 40 (variant w40), 200 " \
        "(variant main)." in captions["results/report/msr/sweep_length.html"]
    assert "temperature on dataset d: greedy (variant main) against t0.7 (variant warm)" in \
        captions["results/report/msr/comparisons.html"]
    assert "Model: smol (training-data cutoff 2024-06-30)." in \
        captions["results/report/curation/smol.html"]
    for t, opening in (("table1", "Table 1 of the copyright-compliance benchmark"),
                       ("by_notice_form", "Per model, notice form and task"),
                       ("by_category", "Per model, material category and task"),
                       ("table5", "Table 5: correlation"),
                       ("over_refusal", "Over-refusal: the refusal rate on benign")):
        text = captions[f"results/report/copyright/b/{t}.html"]
        assert text.startswith(opening), t
        assert "Benchmark: b: materials from docs (copyrighted)" in text
        assert "Models: m (openai), g (openai, guarded: block), o (openai, guarded: output check only)." \
            in text
        assert "Refusal: the rule detector only (no judge configured)." in text
    text = captions["results/report/msr/msr_attribution.html"]
    assert text.startswith("Where the generations' long verbatim spans come from")
    assert "at least 8 words found in the span index ix (corpora docs; unit words)" in text
    text = captions["results/report/copyright/b/attribution_g.html"]
    assert text.startswith("Attribution of g's responses, per task and notice form")
    assert "found in the index copyright-b over the benchmark's materials" in text
    assert "Benchmark: b: materials from docs (copyrighted)" in text
    for t, opening in (("table2", "Table 2 of the copyright-compliance study"),
                       ("table6", "Table 6: over-refusal without and with the guard"),
                       ("ablation", "Guard ablation"),
                       ("latency", "What the guard did and what it cost")):
        text = captions[f"results/report/copyright/guard/{t}.html"]
        assert text.startswith(opening), t
        assert "Guarded models and their settings: g (policy block), o (no input check, " \
            "output check: block); each is compared" in text
        assert "Benchmarks: b (copyrighted materials)." in text
    text = captions["results/report/copyright/guard/guards_compared.html"]
    assert text.startswith("Guards compared on the same benchmark and base model")
    assert "fewer than 1,000 requests" in text


def test_a_page_without_a_caption_section_stops_the_report():
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
    template = env.from_string(CAPTION.read_text(encoding="utf-8"))
    for caption in ("toy_table", "copyright_toy", "guard_toy"):
        job = SimpleNamespace(config={"copyright": {"benchmarks": {"b": {}}}},
                              params=SimpleNamespace(page={"caption": caption,
                                                           "benchmark": "b"}))
        with pytest.raises(jinja2.UndefinedError, match="no_section_in_report_page_rst"):
            template.render(snakemake=job)


def test_a_page_outside_the_rules_pattern_is_an_error_naming_it(shared):
    class Stray(Study):
        name = "stray"

        def report_pages(self, cfg):
            return {"results/tables/stray.html": ReportPage("results/stray.md", "stray", "X",
                                                            {"table": "stray"})}

    stray = SharedInputs(shared.config, [*shared.studies, Stray()], None)
    with pytest.raises(ValueError, match=r"'results/tables/stray.html' is not of the form "
                                         r"results/report/\{page\}.html"):
        stray.report_page_names()
