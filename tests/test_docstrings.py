"""Module docstrings stay short: purpose and a pointer to docs/ (reference prose lives there)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "copyprobe"
#: The most lines one module docstring may have, and all of them together.
MAX_LINES = 25
MAX_TOTAL = 1200


def docstring_lines(path: Path) -> int:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
    return len(doc.splitlines()) if doc else 0


def measure(package: Path) -> dict[str, int]:
    return {str(p.relative_to(package.parent)): docstring_lines(p)
            for p in sorted(package.rglob("*.py"))}


def test_no_module_docstring_is_longer_than_the_limit():
    long = {name: n for name, n in measure(PACKAGE).items() if n > MAX_LINES}
    assert not long, (f"module docstrings over {MAX_LINES} lines (move reference prose to "
                      f"docs/, figures to docs/benchmarks.md): {long}")


def test_module_docstrings_together_stay_under_the_total():
    sizes = measure(PACKAGE)
    assert len(sizes) > 100  # the package is found: the limit is not met by an empty walk
    total = sum(sizes.values())
    assert total < MAX_TOTAL, f"module docstrings hold {total} lines (limit {MAX_TOTAL})"


def test_the_measure_counts_a_long_docstring(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "long.py").write_text('"""' + "line\n" * (MAX_LINES + 1) + '"""\nX = 1\n')
    (pkg / "none.py").write_text("X = 1\n")
    assert measure(pkg) == {"pkg/long.py": MAX_LINES + 1, "pkg/none.py": 0}
