"""Best-of-N perturbations of a request (Hughes et al. 2024, "Best-of-N Jailbreaking"):
middle-letter shuffling of words longer than three characters and random case flips, each
with probability sigma ** 0.5, and printable characters shifted by one code point with
probability sigma ** 3 (sigma 0.4 by default, as their released code). Seeded: the same
(text, sigma, seed) always gives the same request, so a rerun sends what the first run sent.
"""

from __future__ import annotations

import random


def perturb(text: str, sigma: float, seed: int | str) -> str:
    """``text`` with the three augmentations applied in the authors' order."""
    if not 0 <= sigma <= 1:
        raise ValueError(f"sigma must lie in [0, 1], got {sigma}")
    rng = random.Random(str(seed))
    p_word = sigma ** 0.5
    out = []
    for word in text.split(" "):
        if len(word) > 3 and rng.random() < p_word:
            middle = list(word[1:-1])
            rng.shuffle(middle)
            word = word[0] + "".join(middle) + word[-1]
        out.append(word)
    chars = []
    for c in " ".join(out):
        if c.isascii() and c.isalpha() and rng.random() < p_word:
            c = c.swapcase()
        chars.append(c)
    noised = []
    for c in chars:
        if c.isprintable() and rng.random() < sigma ** 3:
            code = ord(c) + rng.choice((-1, 1))
            c = chr(code) if 32 <= code <= 126 else c
        noised.append(c)
    return "".join(noised)
