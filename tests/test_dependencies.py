"""The copyprobe files a workflow script depends on, found statically."""

from __future__ import annotations

from pathlib import Path

import pytest

from copyprobe.dependencies import PACKAGE_DIR, model_parts, module_file, script_dependencies

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "workflow_scripts"
LLAMACPP_ONLY = {"backend": ["llamacpp"], "backend wrapper": [], "study": []}


def deps(script: str, select=None) -> set[str]:
    return set(script_dependencies(SCRIPTS / f"{script}.py", select, relative_to=ROOT))


def test_a_script_depends_on_what_it_imports_and_their_imports():
    got = deps("msr_count_matches")
    # imported by the script, by copyprobe.msr.match_scoring, and the packages on the way
    assert {"copyprobe/__init__.py", "copyprobe/artifacts.py", "copyprobe/script_logging.py",
            "copyprobe/msr/match_scoring.py", "copyprobe/matching/__init__.py",
            "copyprobe/matching/paper.py", "copyprobe/matching/words.py"} <= got
    assert not any(p.startswith(("copyprobe/generation/", "copyprobe/copyright/",
                                 "copyprobe/guard/")) for p in got), got
    assert "workflow_scripts/msr_count_matches.py" not in got  # Snakemake tracks the script


def test_msr_and_copyright_scripts_share_no_study_module():
    # with the parts their rules name (the rules that run no model: model_parts(None), which
    # also leaves out the studies that only bring backend wrappers)
    msr = set().union(*(deps(s) for s in ("msr_build_prompts", "msr_count_matches",
                                          "msr_compute_stats", "msr_make_table",
                                          "msr_plot_figures")))
    copyright_ = set().union(*(deps(s) for s in ("copyright_manifest", "copyright_prompts")),
                             *(deps(s, model_parts(None)) for s in ("copyright_score",
                                                                    "copyright_tables")))
    assert not any(p.startswith("copyprobe/copyright/") for p in msr)
    assert not any(p.startswith("copyprobe/msr/") for p in copyright_)


def test_a_reached_registry_brings_its_declared_parts_or_the_selected_ones():
    every = deps("generate")
    assert {"copyprobe/generation/llamacpp.py", "copyprobe/generation/openai_api.py",
            "copyprobe/generation/vllm_backend.py", "copyprobe/guard/backend.py"} <= every
    llama = deps("generate", LLAMACPP_ONLY)
    assert "copyprobe/generation/llamacpp.py" in llama
    assert not {"copyprobe/generation/openai_api.py", "copyprobe/guard/backend.py"} & llama
    guarded = deps("generate", {**LLAMACPP_ONLY, "backend wrapper": ["guard"], "study": ["guard"]})
    assert {"copyprobe/guard/backend.py", "copyprobe/guard/pipeline.py"} <= guarded
    local = deps("collect_corpus", {"source": ["local"]})
    assert "copyprobe/sources/local.py" in local
    assert "copyprobe/sources/wikipedia.py" not in local
    assert "copyprobe/sources/wikipedia.py" in deps("collect_corpus")


def test_package_data_a_module_names_is_a_dependency():
    guarded = deps("generate", {**LLAMACPP_ONLY, "backend wrapper": ["guard"], "study": ["guard"]})
    assert {"copyprobe/guard/data/catalogue.csv", "copyprobe/guard/data/risk_exemplars.json",
            "copyprobe/copyright/data/queries.json"} <= guarded
    assert "copyprobe/guard/data/catalogue.csv" not in deps("generate", LLAMACPP_ONLY)


def test_imports_in_functions_count_and_type_checking_imports_do_not(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(
        "from typing import TYPE_CHECKING\n"
        "import json\n"
        "from copyprobe.matching import words\n"
        "if TYPE_CHECKING:\n"
        "    from copyprobe.guard.types import GuardDecision\n"
        "else:\n"
        "    import copyprobe.progress\n"
        "def later():\n"
        "    from copyprobe.stats.paper import paper_stats\n")
    got = set(script_dependencies(script, relative_to=PACKAGE_DIR.parent))
    assert {"copyprobe/matching/words.py", "copyprobe/matching/__init__.py",
            "copyprobe/progress.py", "copyprobe/stats/paper.py",
            "copyprobe/stats/__init__.py"} <= got
    assert not any(p.startswith("copyprobe/guard/") for p in got)


def test_paths_outside_relative_to_are_absolute_and_a_missing_script_is_named(tmp_path):
    out = script_dependencies(SCRIPTS / "msr_curate.py", relative_to=tmp_path)
    assert out and all(Path(p).is_absolute() and Path(p).is_file() for p in out)
    with pytest.raises(FileNotFoundError, match="nope.py"):
        script_dependencies(tmp_path / "nope.py")


def test_module_file():
    assert module_file("copyprobe.matching") == PACKAGE_DIR / "matching" / "__init__.py"
    assert module_file("copyprobe.matching.paper") == PACKAGE_DIR / "matching" / "paper.py"
    assert module_file("copyprobe.matching.paper_lcs") is None  # an attribute, not a module
    assert module_file("pandas") is None


def test_model_parts_names_every_backend_and_wrapper_of_a_model():
    cascade = {"backend": "ocr_cascade", "text_backend": {"backend": "llamacpp"},
               "guard": {"policy": "block"}}
    # the guard study declares the guard wrapper: a guarded model's jobs depend on it
    assert model_parts(cascade) == {"backend": ["llamacpp", "ocr_cascade"],
                                    "backend wrapper": ["guard"], "study": ["guard"]}
    assert model_parts({"backend": "openai", "guard": None}) == {
        "backend": ["openai"], "backend wrapper": [], "study": []}
    assert model_parts(None) == {"backend": [], "backend wrapper": [], "study": []}
