"""Word-mode matching: normalised word tokens, exact word-level overlap measures.

Reference: docs/statistics.md#how-matches-are-counted.
"""

from __future__ import annotations

import functools
import re
import sys
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from rapidfuzz.distance import Levenshtein

from copyprobe.matching.fk import word_fk_counts
from copyprobe.matching.substrings import (
    DEFAULT_MAX_PAIRS,
    _longest_run,
    _maximal_arrays,
    _pair_cap_error,
    _Rolling,
    _shared_counts,
)

__all__ = ["SCRIPTS", "SEGMENTED", "WordMatch", "joins_previous", "normalize_words",
           "normalize_words_with_spans", "script_of", "segment", "segmenter", "word_fk",
           "word_match"]

_APOSTROPHES = "'\u2019\u02bc"

#: Code-point ranges of the scripts written without spaces between words, where each
#: character (with the marks after it) is a word, in three groups: ``han`` (ideographs, the
#: iteration marks and ideographic numerals), ``kana`` (hiragana and katakana, half-width ones
#: too, which NFKC widens) and ``thai`` (Thai, Lao, Myanmar, Khmer, Tai Le, New Tai Lue, Tai
#: Tham, Tai Viet).  No segmenter of words is used: characters need no dictionary and match
#: the same way in every text.
SCRIPTS: dict[str, tuple[tuple[int, int], ...]] = {
    "han": (
        (0x3005, 0x3007),    # iteration mark, closing mark, ideographic zero
        (0x3021, 0x3029),    # Hangzhou numerals
        (0x3038, 0x303C),
        (0x3400, 0x4DBF),    # CJK extension A
        (0x4E00, 0x9FFF),    # CJK unified ideographs
        (0xF900, 0xFAFF),    # CJK compatibility ideographs
        (0x20000, 0x323AF),  # CJK extensions B to H, compatibility supplement
    ),
    "kana": (
        (0x3031, 0x3035),    # kana repeat marks
        (0x3040, 0x30FF),    # hiragana, katakana
        (0x31F0, 0x31FF),    # katakana phonetic extensions
        (0xFF66, 0xFF9F),    # half-width katakana
        (0x1B000, 0x1B16F),  # kana supplement and extensions
    ),
    "thai": (
        (0x0E00, 0x0EFF),    # Thai, Lao
        (0x1000, 0x109F),    # Myanmar
        (0x1780, 0x17FF),    # Khmer
        (0x1950, 0x19FF),    # Tai Le, New Tai Lue, Khmer symbols
        (0x1A20, 0x1AAF),    # Tai Tham
        (0xA9E0, 0xA9FF),    # Myanmar extended-B
        (0xAA60, 0xAADF),    # Myanmar extended-A, Tai Viet
    ),
}
SEGMENTED: tuple[tuple[int, int], ...] = tuple(sorted(r for g in SCRIPTS.values() for r in g))


def _class(ranges: Iterable[tuple[int, int]]) -> str:
    return "".join(
        re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}"
        for lo, hi in ranges
    )


@functools.cache
def _mark_ranges() -> list[tuple[int, int]]:
    """The combining marks (categories Mn, Mc, Me) as code-point ranges (scans the Unicode
    table once)."""
    ranges: list[tuple[int, int]] = []
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp)).startswith("M"):
            if ranges and ranges[-1][1] == cp - 1:
                ranges[-1] = (ranges[-1][0], cp)
            else:
                ranges.append((cp, cp))
    return ranges


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(inner-apostrophe pattern, token pattern), built once."""
    marks = _class(_mark_ranges())
    word_class = rf"[\w{marks}]"
    inner_apostrophe = re.compile(rf"(?<={word_class})[{_APOSTROPHES}](?={word_class})")
    token = re.compile(rf"{word_class}+")
    return inner_apostrophe, token


@functools.cache
def segmenter() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(a segmented character, the pieces of a token: each segmented character with the marks
    after it, and the runs between them)."""
    seg = _class(SEGMENTED)
    marks = _class(_mark_ranges())
    return re.compile(f"[{seg}]"), re.compile(f"[{seg}][{marks}]*|[^{seg}]+")


@functools.cache
def _script_patterns() -> dict[str, re.Pattern[str]]:
    return {name: re.compile(f"[{_class(ranges)}]") for name, ranges in SCRIPTS.items()}


def script_of(token: str) -> str | None:
    """The :data:`SCRIPTS` group of a token's first character (None: another script)."""
    for name, pattern in _script_patterns().items():
        if pattern.match(token):
            return name
    return None


def segment(tokens: list[str]) -> list[str]:
    """``tokens`` with every token holding a segmented character cut into its pieces (each
    such character with the marks after it, and the runs between them)."""
    has, pieces = segmenter()
    out: list[str] = []
    for t in tokens:
        if has.search(t):
            out += pieces.findall(t)
        else:
            out.append(t)
    return out


def normalize_words(text: str) -> list[str]:
    """Normalised word tokens of ``text`` (see the module docstring for the exact rules).

    >>> normalize_words("Don't  STOP—the café's 2nd_act!")
    ['dont', 'stop', 'the', 'cafés', '2nd', 'act']
    """
    inner_apostrophe, token = _patterns()
    text = unicodedata.normalize("NFKC", text).casefold().replace("_", " ")
    if any(a in text for a in _APOSTROPHES):
        text = inner_apostrophe.sub("", text)
    return segment(token.findall(text))


def joins_previous(ch: str) -> bool:
    """Whether NFKC can compose ``ch`` with the character before it: combining marks, Hangul
    medial vowels and final consonants, and the half-width voiced sound marks."""
    cp = ord(ch)
    return (unicodedata.category(ch).startswith("M") or 0x1160 <= cp <= 0x11FF
            or 0xD7B0 <= cp <= 0xD7FF or cp in (0xFF9E, 0xFF9F))


def _clusters(text: str) -> list[tuple[int, int]]:
    """(start, end) of each base character with the characters that may compose with it:
    the units NFKC composes within."""
    out: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(text) + 1):
        if i == len(text) or not joins_previous(text[i]):
            out.append((start, i))
            start = i
    return out


def _chunks(text: str) -> list[tuple[int, int]]:
    """Whitespace-separated chunks and the whitespace between them (coarser units)."""
    return [m.span() for m in re.finditer(r"\s+|\S+", text)]


def _tokens_in(text: str, clusters: list[tuple[int, int]]
               ) -> tuple[list[str], list[int], list[int]]:
    inner_apostrophe, token = _patterns()
    pieces: list[str] = []
    owner: list[int] = []  # normalised char -> cluster index
    for k, (a, b) in enumerate(clusters):
        piece = unicodedata.normalize("NFKC", text[a:b]).casefold().replace("_", " ")
        pieces.append(piece)
        owner.extend([k] * len(piece))
    norm = "".join(pieces)
    if any(a in norm for a in _APOSTROPHES):
        drop = {m.start() for m in inner_apostrophe.finditer(norm)}
        if drop:
            keep = [i for i in range(len(norm)) if i not in drop]
            norm = "".join(norm[i] for i in keep)
            owner = [owner[i] for i in keep]
    has, pieces = segmenter()
    tokens, starts, ends = [], [], []
    for m in token.finditer(norm):
        parts = pieces.finditer(norm, m.start(), m.end()) if has.search(m.group()) else (m,)
        for p in parts:
            tokens.append(p.group())
            starts.append(clusters[owner[p.start()]][0])
            ends.append(clusters[owner[p.end() - 1]][1])
    return tokens, starts, ends


def normalize_words_with_spans(text: str) -> tuple[list[str], list[int], list[int]]:
    """:func:`normalize_words` with each token's character range in ``text`` (the original,
    unnormalised string): ``(tokens, starts, ends)``, ``text[starts[i]:ends[i]]`` being the
    characters token ``i`` came from.

    Normalisation runs cluster by cluster (a base character and what may compose with it)
    with an offset map. Where that gives other tokens than the whole-string
    :func:`normalize_words` (a composition the clusters do not foresee), whitespace-separated
    chunks are the units instead (a token's range is then its chunk), and failing that the
    whole text: the tokens always equal :func:`normalize_words` exactly.

    >>> normalize_words_with_spans("Don't ﬁx it")
    (['dont', 'fix', 'it'], [0, 6, 9], [5, 8, 11])
    """
    expected = normalize_words(text)
    for clusters in (_clusters, _chunks):
        tokens, starts, ends = _tokens_in(text, clusters(text))
        if tokens == expected:
            return tokens, starts, ends
    return expected, [0] * len(expected), [len(text)] * len(expected)


@dataclass(frozen=True)
class WordMatch:
    """Word-mode result for one (reference, generation) pair.

    Attributes:
        longest: length in words of the longest common word substring.
        longest_text: that substring's tokens joined by single spaces (taken from the
            reference; earliest in the reference on ties).
        maximal: ``(ref_start, gen_start, length)`` of every maximal common word substring
            of at least ``k_min`` words, sorted by ``(ref_start, gen_start)``.
        kgram_counts: ``k -> `` number of distinct generation k-grams found in the
            reference, for ``k = k_min .. k_max``.
        survives: ``k -> longest >= k`` for ``k = k_min .. k_max``.
        lcp: HELM-style longest common prefix: leading tokens on which generation and
            reference agree, comparing the first ``min(len)`` tokens.
        edit_similarity: HELM-style: the generation truncated to the reference's token
            count, ``1 - Levenshtein(gen, ref) / max(len(gen), len(ref))`` over tokens;
            0.0 when either is empty.
        reference_words: number of reference tokens.
        generation_words: number of generation tokens.
    """

    longest: int
    longest_text: str
    maximal: list[tuple[int, int, int]]
    kgram_counts: dict[int, int]
    survives: dict[int, bool]
    lcp: int
    edit_similarity: float
    reference_words: int
    generation_words: int


def _encode(ref_tokens: list[str], gen_tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of both lists under one shared vocabulary (ids in first-seen order)."""
    vocab = {token: i for i, token in enumerate(dict.fromkeys(ref_tokens + gen_tokens))}
    lookup = vocab.__getitem__
    return (
        np.array(list(map(lookup, ref_tokens)), dtype=np.int64),
        np.array(list(map(lookup, gen_tokens)), dtype=np.int64),
    )


def _lcp(ref: np.ndarray, gen: np.ndarray) -> int:
    n = min(len(ref), len(gen))
    if n == 0:
        return 0
    differs = ref[:n] != gen[:n]
    return int(np.argmax(differs)) if differs.any() else n


def _edit_similarity(ref: np.ndarray, gen: np.ndarray) -> float:
    gen = gen[: len(ref)]
    if len(ref) == 0 or len(gen) == 0:
        return 0.0
    distance = Levenshtein.distance(gen.tolist(), ref.tolist())
    return 1.0 - distance / max(len(gen), len(ref))


def word_match(
    reference: str,
    generation: str,
    k_min: int = 5,
    k_max: int = 12,
    *,
    max_pairs: int = DEFAULT_MAX_PAIRS,
) -> WordMatch:
    """Word-level overlap between a reference and a generation.

    Args:
        reference: the held-out reference text.
        generation: the model's generation.
        k_min: smallest k for maximal matches, k-gram counts and survival (>= 1).
        k_max: largest k for k-gram counts and survival (>= k_min).
        max_pairs: cap on equal-k-gram pairs, as in
            :func:`~copyprobe.matching.substrings.maximal_matches`.

    Returns:
        The :class:`WordMatch`.

    Raises:
        ValueError: bad ``k_min``/``k_max``, or reference and generation are so repetitive
            that their maximal matches need more than ``max_pairs`` equal-gram pairs.
    """
    if k_min < 1 or k_max < k_min:
        raise ValueError(f"need 1 <= k_min <= k_max, got k_min={k_min}, k_max={k_max}")
    ref_tokens = normalize_words(reference)
    gen_tokens = normalize_words(generation)
    ref, gen = _encode(ref_tokens, gen_tokens)
    # One hash prefix per side and one set of maximal matches feed every measure.
    r_ref, r_gen = _Rolling(ref), _Rolling(gen)
    matches = _maximal_arrays(ref, gen, r_ref, r_gen, k_min, max_pairs)
    if matches is None:
        raise _pair_cap_error(max_pairs)
    start, _, longest = _longest_run(ref, gen, r_ref, r_gen, k_min, matches)
    return WordMatch(
        longest=longest,
        longest_text=" ".join(ref_tokens[start : start + longest]),
        maximal=list(zip(*(x.tolist() for x in matches), strict=True)),
        kgram_counts=_shared_counts(gen, ref, r_gen, r_ref, k_min, k_max, max_pairs, matches),
        survives={k: longest >= k for k in range(k_min, k_max + 1)},
        lcp=_lcp(ref, gen),
        edit_similarity=_edit_similarity(ref, gen),
        reference_words=len(ref_tokens),
        generation_words=len(gen_tokens),
    )


def word_fk(
    matches: Iterable[WordMatch], k_min: int = 5, k_max: int = 12
) -> dict[str, dict[int, int]]:
    """Corpus-level word-mode counts.

    Args:
        matches: one :class:`WordMatch` per document (consumed once).
        k_min: smallest k reported.
        k_max: largest k reported.  ``kgrams`` needs every match to have been computed
            with a k range covering ``k_min .. k_max``.

    Returns:
        ``{'survival': {k: documents with longest >= k}, 'kgrams': {k: sum of
        kgram_counts[k]}}``.

    Raises:
        ValueError: a match lacks the k-gram count for some requested k.
    """
    ks = list(range(k_min, k_max + 1))
    kgrams = dict.fromkeys(ks, 0)
    longest = []
    for m in matches:
        longest.append(m.longest)
        for k in ks:
            try:
                kgrams[k] += m.kgram_counts[k]
            except KeyError:
                raise ValueError(
                    f"a WordMatch has no k-gram count for k={k} "
                    f"(computed for {sorted(m.kgram_counts)})"
                ) from None
    survival = dict(zip(ks, word_fk_counts(longest, ks), strict=True))
    return {"survival": survival, "kgrams": kgrams}
