"""How often a span of L words recurs in unrelated real texts, per script: what ``min_words``
means where a word is a character (Chinese, Japanese, Thai).

Texts: the gettext catalogs installed under ``/usr/share/locale`` (or ``--locale-dir``): each
message's translation in a language, and its English original (``msgid``) as the baseline,
grouped by project (a project's several catalogs are one group). Units: the span index's
``words`` unit (:func:`copyprobe.spans.encoding.words`; printf directives removed). A message
*recurs at L* when one of its L-unit windows occurs in a message of another project whose
English original is another text (the same original translated twice is a true copy, not a
chance match). Printed per L: the share of the messages of at least L units that recur, per
language, and the units per English word; then the same at ``min_words`` 12 with the output
guard's ``chars_per_word`` (:data:`copyprobe.guard.output.CHARS_PER_WORD`: a window is the
shortest that reaches 12 words, a character counting as a fraction of one).

Usage::

    python benchmarks/segmented_windows.py [--langs zh_CN ja th ko] [--ls 4 6 8 ...]
"""

from __future__ import annotations

import argparse
import gettext
import re
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from copyprobe.guard.output import CHARS_PER_WORD  # noqa: E402
from copyprobe.spans.encoding import words  # noqa: E402
from copyprobe.spans.stream import SpanLength  # noqa: E402

_PRINTF = re.compile(r"%(?:\d+\$)?[-+ #0-9.*]*(?:hh|h|ll|l|L|z|j|t)?[a-zA-Z%]")
#: catalogs of one project (stems after a version suffix is cut)
_PROJECT = [(re.compile(p), g) for p, g in [
    (r"^iso_", "iso-codes"), (r"^(pg_|psql|postgres|libpq|initdb|plpgsql|pgscripts|ecpg)",
                              "postgresql"),
    (r"^(gas|ld|bfd|binutils|gold|gprof|opcodes)$", "binutils"),
    (r"^(apt|libapt-pkg.*|python-apt)$", "apt"), (r"^gettext-", "gettext"),
    (r"^gtk20", "gtk20"), (r"^(.*)-gnulib$", r"\1")]]


def project(stem: str) -> str:
    stem = re.sub(r"-\d+$", "", stem)
    for pat, group in _PROJECT:
        if pat.search(stem):
            return pat.sub(group, stem) if "\\1" in group else group
    return stem


def catalogs(locale_dir: Path, lang: str) -> list[tuple[str, str, str]]:
    """``(project, English original, translation)`` of every message of ``lang``."""
    out = []
    for mo in sorted((locale_dir / lang / "LC_MESSAGES").glob("*.mo")):
        with open(mo, "rb") as fh:
            try:
                cat = gettext.GNUTranslations(fh)._catalog  # type: ignore[attr-defined]
            except OSError:
                continue
        for key, msgstr in cat.items():
            msgid = key[0] if isinstance(key, tuple) else key
            if msgid and isinstance(msgstr, str) and msgstr:
                out.append((project(mo.stem), _PRINTF.sub(" ", msgid), _PRINTF.sub(" ", msgstr)))
    return out


def recurrence(msgs: list[tuple[str, tuple[str, ...], list[str]]], length: SpanLength
               ) -> tuple[int, int]:
    """(messages reaching ``length``, those with a window found in an unrelated message). A
    window is the shortest reaching the length at its end (the same in every text holding
    its units), so comparing the windows of two messages finds every shared one."""
    where: dict[tuple[str, ...], set[tuple[str, tuple[str, ...]]]] = defaultdict(set)
    windows = [[tuple(units[a:b]) for a, b in length.windows(units)] for _, _, units in msgs]
    for (proj, orig, _), ws in zip(msgs, windows, strict=True):
        for w in ws:
            where[w].add((proj, orig))
    n = hits = 0
    for (proj, orig, _), ws in zip(msgs, windows, strict=True):
        if ws:
            n += 1
            hits += any(p != proj and o != orig for w in ws for p, o in where[w])
    return n, hits


def _row(label: str, columns: dict, length: SpanLength) -> None:
    cells = []
    for msgs in columns.values():
        n, hits = recurrence(msgs, length)
        cells.append(f"{hits:>6}/{n:<6} {100 * hits / max(1, n):6.2f}%")
    print(f"{label:>8} " + " ".join(f"{c:>22}" for c in cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--locale-dir", type=Path, default=Path("/usr/share/locale"))
    ap.add_argument("--langs", nargs="+", default=["zh_CN", "ja", "th", "ko"])
    ap.add_argument("--ls", nargs="+", type=int,
                    default=[4, 6, 8, 10, 12, 16, 20, 24, 28, 32])
    args = ap.parse_args()
    columns: dict[str, list[tuple[str, tuple[str, ...], list[str]]]] = {}
    english: dict[tuple[str, str], tuple[str, tuple[str, ...], list[str]]] = {}
    per_word = {}
    for lang in args.langs:
        rows = catalogs(args.locale_dir, lang)
        if not rows:
            print(f"{lang}: no catalogs under {args.locale_dir}", file=sys.stderr)
            continue
        msgs, n_units, n_words = [], 0, 0
        for proj, msgid, msgstr in rows:
            orig = tuple(words(msgid))
            units = words(msgstr)
            msgs.append((proj, orig, units))
            english[(proj, msgid)] = (proj, orig, list(orig))
            n_units += len(units)
            n_words += len(orig)
        columns[lang] = msgs
        per_word[lang] = n_units / max(1, n_words)
    columns = {"en (msgid)": list(english.values()), **columns}
    print(f"catalogs: {args.locale_dir}; messages: "
          + ", ".join(f"{k} {len(v)}" for k, v in columns.items()))
    print("units per English word: "
          + ", ".join(f"{k} {v:.2f}" for k, v in per_word.items()))
    print("share of messages of >= L units with an L-unit window in an unrelated message "
          "(another project, another original):")
    print(f"{'L':>8} " + " ".join(f"{k:>22}" for k in columns))
    for L in args.ls:
        _row(str(L), columns, SpanLength.of(L))
    _row("12 cpw", columns, SpanLength.of(12, CHARS_PER_WORD))
    print(f"12 cpw: min_words 12 with chars_per_word {CHARS_PER_WORD}")


if __name__ == "__main__":
    main()
