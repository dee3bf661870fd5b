"""Best-of-N perturbations of the probe's instruction: the pool of the paper's Appendix A
(identity, capitalization, spacing, word order, glyph substitution, punctuation, word
scrambling, random capitalization, ASCII noising, and composites), one entry drawn per
attempt. Seeded: the same (text, sigma, seed) always gives the same request.
docs/longform.md#best-of-n-perturbations lists each entry and what is this project's choice.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from functools import partial

Step = Callable[[str, random.Random], str]

#: visually similar glyphs (the paper gives a -> @ á à â and s -> $ 5; the rest are ours)
GLYPHS = {
    "a": "@áàâ", "b": "8ß", "c": "(¢ç", "d": "ďđ", "e": "3éèê", "f": "ƒ", "g": "9ğ",
    "h": "#ĥ", "i": "1!íì", "j": "ĵ", "k": "ķ", "l": "1|ł", "m": "ḿ", "n": "ñń",
    "o": "0óòô", "p": "þ", "q": "9", "r": "ŕř", "s": "$5", "t": "7+ţ", "u": "úùû",
    "v": "ṽ", "w": "ŵ", "x": "×", "y": "ýÿ", "z": "2ž",
}
PUNCTUATION = ".,!?;:"
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def capitalization(text: str, rng: random.Random, p: float) -> str:
    """Each letter's case flipped with probability ``p``."""
    return "".join(c.swapcase() if c.isalpha() and rng.random() < p else c for c in text)


def spacing(text: str, rng: random.Random, p_add: float, p_rm: float) -> str:
    """Left to right: each space removed with probability ``p_rm``; after each other
    character a space inserted with probability ``p_add`` unless whitespace follows."""
    out = []
    for i, c in enumerate(text):
        if c == " ":
            if rng.random() >= p_rm:
                out.append(c)
            continue
        out.append(c)
        if i + 1 < len(text) and not text[i + 1].isspace() and rng.random() < p_add:
            out.append(" ")
    return "".join(out)


def word_shuffle(text: str, rng: random.Random, p: float) -> str:
    """Within each sentence (split after . ! ?), its words shuffled with probability ``p``
    when it has more than one."""
    sentences = []
    for sentence in _SENTENCE.split(text):
        tokens = sentence.split()
        if len(tokens) > 1 and rng.random() < p:
            rng.shuffle(tokens)
        sentences.append(" ".join(tokens))
    return " ".join(sentences)


def substitution(text: str, rng: random.Random, p: float) -> str:
    """Each letter replaced with probability ``p`` by a glyph of :data:`GLYPHS` drawn
    uniformly (an upper-case letter takes the glyph as it is)."""
    out = []
    for c in text:
        glyphs = GLYPHS.get(c.lower()) if c.isalpha() else None
        out.append(rng.choice(glyphs) if glyphs and rng.random() < p else c)
    return "".join(out)


def punctuation(text: str, rng: random.Random, p_add: float, p_rm: float) -> str:
    """Each punctuation mark removed with probability ``p_rm``; after each letter a random
    mark inserted with probability ``p_add``."""
    out = []
    for c in text:
        if c in PUNCTUATION:
            if rng.random() >= p_rm:
                out.append(c)
            continue
        out.append(c)
        if c.isalpha() and rng.random() < p_add:
            out.append(rng.choice(PUNCTUATION))
    return "".join(out)


def word_scrambling(text: str, rng: random.Random, p: float) -> str:
    """The inner letters of each word longer than three characters shuffled with
    probability ``p`` (first and last kept)."""
    out = []
    for word in text.split(" "):
        if len(word) > 3 and rng.random() < p:
            middle = list(word[1:-1])
            rng.shuffle(middle)
            word = word[0] + "".join(middle) + word[-1]
        out.append(word)
    return " ".join(out)


def ascii_noising(text: str, rng: random.Random, p: float) -> str:
    """Each printable ASCII character (32-126) moved one code point up or down with
    probability ``p``; left as it is when that leaves the printable range."""
    out = []
    for c in text:
        if 32 <= ord(c) <= 126 and rng.random() < p:
            code = ord(c) + rng.choice((-1, 1))
            c = chr(code) if 32 <= code <= 126 else c
        out.append(c)
    return "".join(out)


def pool(sigma: float) -> dict[str, tuple[Step, ...]]:
    """The pool, by name: each entry the steps it chains, in order (identity: none)."""
    if not 0 <= sigma <= 1:
        raise ValueError(f"sigma must lie in [0, 1], got {sigma}")
    single: dict[str, Step] = {
        "capitalization-0.2": partial(capitalization, p=0.2),
        "capitalization-0.5": partial(capitalization, p=0.5),
        "spacing-0.05": partial(spacing, p_add=0.05, p_rm=0.05),
        "spacing-0.1": partial(spacing, p_add=0.1, p_rm=0.1),
        "word-shuffle": partial(word_shuffle, p=0.3),
        "substitution-0.1": partial(substitution, p=0.1),
        "substitution-0.05": partial(substitution, p=0.05),
        "punctuation-0.05": partial(punctuation, p_add=0.05, p_rm=0.05),
        "punctuation-0.1": partial(punctuation, p_add=0.1, p_rm=0.1),
        "word-scrambling": partial(word_scrambling, p=sigma ** 0.5),
        "random-capitalization": partial(capitalization, p=sigma ** 0.5),
        "ascii-noising": partial(ascii_noising, p=sigma ** 3),
    }
    entries: dict[str, tuple[Step, ...]] = {"identity": ()}
    entries.update({name: (step,) for name, step in single.items()})
    for cap in ("capitalization-0.2", "capitalization-0.5"):  # composites: ours (the paper:
        for space in ("spacing-0.05", "spacing-0.1"):          # "e.g.")
            entries[f"{cap}+{space}"] = (single[cap], single[space])
    chain = ("word-scrambling", "random-capitalization", "ascii-noising")
    entries["+".join(chain)] = tuple(single[n] for n in chain)
    return entries


#: every entry's name, in the pool's order
POOL = tuple(pool(0.5))


def draw(text: str, sigma: float, seed: int | str,
         names: tuple[str, ...] | None = None) -> tuple[str, str]:
    """(the entry drawn uniformly from the pool, or from ``names``; ``text`` perturbed by
    it), everything seeded by ``seed``."""
    entries = pool(sigma)
    chosen = POOL if names is None else names
    unknown = [n for n in chosen if n not in entries]
    if unknown or not chosen:
        raise ValueError(f"perturbations: unknown {', '.join(unknown) or '(none given)'}; "
                         f"the pool: {', '.join(POOL)}")
    name = random.Random(f"{seed}:draw").choice(list(chosen))
    for i, step in enumerate(entries[name]):
        text = step(text, random.Random(f"{seed}:{name}:{i}"))
    return name, text
