"""A pytest plugin: a run in which a test is skipped for a reason that tests/skip_allowlist.txt
does not list fails, naming each such test and its reason. A broken or missing install (an
``importorskip`` of a package the project's extras provide, a missing command) then turns the
run red instead of into a green run of skips.

tests/conftest.py registers it; tests/test_skip_policy.py runs it on a folder of its own
(``python -m pytest -p skip_policy``, with ``COPYPROBE_SKIP_ALLOWLIST`` naming the list).

The list holds one Python regular expression a line, searched in the skip's reason; blank lines
and lines starting with ``#`` are ignored. A line starting with ``local:`` is allowed only
outside CI: ``.ci/run`` sets ``COPYPROBE_CI=1`` after installing the test services, so there a
skip for a missing service fails too.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

DEFAULT_LIST = Path(__file__).with_name("skip_allowlist.txt")
LIST_ENV = "COPYPROBE_SKIP_ALLOWLIST"
CI_ENV = "COPYPROBE_CI"


@dataclass(frozen=True)
class Allowed:
    pattern: re.Pattern[str]
    local_only: bool


def read_allowlist(path: Path) -> list[Allowed]:
    out = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        local = line.startswith("local:")
        if local:
            line = line.removeprefix("local:").strip()
        try:
            out.append(Allowed(re.compile(line), local))
        except re.error as exc:
            raise pytest.UsageError(f"{path}:{n}: not a regular expression: {exc}") from None
    return out


def allowed(reason: str, entries: list[Allowed], in_ci: bool) -> bool:
    return any(e.pattern.search(reason) for e in entries if not (e.local_only and in_ci))


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:  # (path, line, "Skipped: why")
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


class SkipPolicy:
    def __init__(self, config: pytest.Config) -> None:
        self.path = Path(os.environ.get(LIST_ENV) or DEFAULT_LIST)
        self.entries = read_allowlist(self.path)
        self.in_ci = os.environ.get(CI_ENV, "") not in ("", "0")
        self.unlisted: list[tuple[str, str]] = []

    def _note(self, report: pytest.TestReport | pytest.CollectReport) -> None:
        if not report.skipped or hasattr(report, "wasxfail"):  # an xfail is no skip
            return
        reason = _reason(report)
        if not allowed(reason, self.entries, self.in_ci):
            self.unlisted.append((report.nodeid, reason))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._note(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        self._note(report)  # a module-level importorskip or skip

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.unlisted and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:  # noqa: ANN001
        if not self.unlisted:
            return
        where = f"{self.path.name}" + (" (CI: local: entries do not apply)" if self.in_ci
                                       else "")
        terminalreporter.section(f"skips that {where} does not allow", sep="=", red=True)
        for nodeid, reason in self.unlisted:
            terminalreporter.line(f"SKIP NOT ALLOWED {nodeid}: {reason}")
        terminalreporter.line(f"{len(self.unlisted)} skip(s) outside {self.path}: the run "
                              "fails (install what the test needs, or list a reason that no "
                              "install can fix)")


def pytest_configure(config: pytest.Config) -> None:
    """Loaded with ``-p skip_policy``: register the policy."""
    if not config.pluginmanager.has_plugin("copyprobe_skip_policy"):
        config.pluginmanager.register(SkipPolicy(config), "copyprobe_skip_policy")
