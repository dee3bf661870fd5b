"""``pip install .`` (not editable) gives a working ``copyprobe``: the schema and every other
data file the CLI reads are package data. Builds the wheel from a copy of the project, installs
it into a folder of its own and runs the installed console script from outside the repository,
with only that folder (plus the venv's dependencies) importable."""

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
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "src"  # a copy, so that the build leaves nothing in the repository
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "copyprobe", src / "copyprobe",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheels = tmp / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "--no-index", "-q", "-w", str(wheels), str(src)],
                   check=True, capture_output=True, text=True, timeout=300)
    (wheel,) = wheels.glob("copyprobe-*.whl")
    data = {p.relative_to(src).as_posix() for p in (src / "copyprobe").rglob("*")
            if p.is_file() and p.suffix != ".py"}
    assert "copyprobe/data/config_schema.yaml" in data
    with zipfile.ZipFile(wheel) as z:
        assert data <= set(z.namelist()), data - set(z.namelist())
    target = tmp / "site"
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
    bad.write_text(cfg.read_text().replace("limit: 40 ", "limt: 40 "))
    proc = subprocess.run([str(script), "validate-config", str(bad)], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip() == (f"copyprobe: {bad}: unknown config key "
                                   "'sources.wikipedia.limt' (source kind 'wikipedia_offline')")
