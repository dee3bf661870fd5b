"""Rewordings of labelled requests, generated so the risk analyzer meets requests it was not
built from: synonym substitution, politeness wrappers, reordering, case and punctuation noise,
and extra context. Seeded, so a run is reproducible; used by the tests and the benchmark.

The synonym table was written from a thesaurus-style reading of the base requests, not from
the analyzer's rules; several substitutes ("precisely", "to the letter", "put across",
"condense", "the writer") are words no rule names, so the embedding fallback is exercised.
"""

from __future__ import annotations

import random
import re

#: phrase (matched as whole words, case-insensitive) -> substitutes
SYNONYMS: dict[str, tuple[str, ...]] = {
    "text": ("writing", "words", "passage", "content"),
    "image": ("picture", "photo", "screenshot", "scan"),
    "picture": ("image", "photo"),
    "repeat": ("reproduce", "recite", "write out again"),
    "copy": ("duplicate", "transcribe", "reproduce"),
    "duplicate": ("copy", "clone"),
    "echo": ("repeat", "parrot"),
    "verbatim": ("word-for-word", "to the letter", "exactly"),
    "exactly": ("precisely", "verbatim", "to the letter"),
    "word for word": ("verbatim", "to the letter"),
    "extract": ("pull out", "take out", "lift out"),
    "show": ("display", "present", "give"),
    "first": ("opening", "1st", "initial"),
    "second": ("2nd",),
    "third": ("3rd",),
    "sentence": ("line",),
    "rephrase": ("reword", "recast", "put differently"),
    "paraphrase": ("reword", "restate"),
    "rewrite": ("redo", "reword"),
    "simpler": ("easier", "plainer"),
    "translate": ("render", "put", "convert"),
    "convert": ("translate", "turn"),
    "French": ("German", "Spanish", "Japanese", "Italian"),
    "German": ("French", "Dutch"),
    "Spanish": ("Portuguese", "Korean"),
    "summarise": ("sum up", "condense", "give the gist of"),
    "main point": ("central idea", "key message", "core point"),
    "wrote": ("authored", "penned"),
    "author": ("writer", "creator"),
    "opinion": ("view", "take"),
    "writing style": ("style", "prose"),
    "background": ("context",),
    "context": ("background", "setting"),
    "Explain": ("Describe", "Tell me"),
}

POLITE = (
    "Could you please {q}",
    "Would you mind helping me? {Q}",
    "Hey, {q}",
    "{Q} Thanks a lot!",
    "I was wondering if you could {q}",
    "Please, {q}",
    "Hi there! {Q}",
    "If it's not too much trouble, {q}",
)

CONTEXT = (
    "For my class, {q}",
    "I'm writing an essay about this. {Q}",
    "{Q} This is for a school project.",
    "My teacher asked me to look at this page. {Q}",
    "{Q} I need it for a presentation tomorrow.",
    "Quick question for my book club: {q}",
)

_PLACE = re.compile(r"\s*\b((?:shown |displayed )?(?:in|from|on) the (?:image|picture|photo)"
                    r"(?: above)?)\b", re.I)


def _lower_first(q: str) -> str:
    return q[:1].lower() + q[1:] if q[:2] != "I " and q[:2] != "I'" else q


def substitute(q: str, rng: random.Random) -> str:
    """Replace one to three phrases with a synonym."""
    present = [w for w in SYNONYMS if re.search(rf"\b{re.escape(w)}\b", q, re.I)]
    rng.shuffle(present)
    for w in present[:rng.randint(1, 3)]:
        sub = rng.choice(SYNONYMS[w])
        q = re.sub(rf"\b{re.escape(w)}\b", sub, q, count=1, flags=re.I)
    return q


def politeness(q: str, rng: random.Random) -> str:
    return rng.choice(POLITE).format(q=_lower_first(q), Q=q)


def context(q: str, rng: random.Random) -> str:
    return rng.choice(CONTEXT).format(q=_lower_first(q), Q=q)


def reorder(q: str, rng: random.Random) -> str:
    """Move the phrase that says where the text is to the front ("In the image, ..."), or
    swap the two halves of a request made of two sentences."""
    parts = [p for p in re.split(r"(?<=[.?!])\s+", q.strip()) if p]
    if len(parts) == 2 and rng.random() < 0.5:
        return f"{parts[1]} {parts[0]}"
    m = _PLACE.search(q)
    if m is None:
        return q
    rest = (q[:m.start()] + q[m.end():]).strip()
    return f"{m.group(1)[0].upper()}{m.group(1)[1:]}, {_lower_first(rest)}"


def noise(q: str, rng: random.Random) -> str:
    """Case and punctuation noise: all lower or upper case, punctuation dropped or doubled,
    extra spaces."""
    kind = rng.choice(("lower", "upper", "nopunct", "shout", "spaces"))
    if kind == "lower":
        return q.lower()
    if kind == "upper":
        return q.upper()
    if kind == "nopunct":
        return re.sub(r"[^\w\s']", "", q)
    if kind == "shout":
        return re.sub(r"[.?]?$", "?!!", q)
    return re.sub(r" ", lambda _: " " * rng.randint(1, 3), q)


TRANSFORMS = (substitute, politeness, reorder, noise, context)


def rewordings(labelled: list[tuple[str, str]], n: int, seed: int = 0
               ) -> list[tuple[str, str, str, str]]:
    """``n`` rewordings of ``(task, query)`` pairs: ``(task, rewording, original, steps)``.
    Each applies two to four of the transforms (substitution always among them), in a
    random order; a rewording equal to its original is drawn again."""
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        task, q = rng.choice(labelled)
        steps = [substitute, *rng.sample(TRANSFORMS[1:], rng.randint(1, 3))]
        rng.shuffle(steps)
        r = q
        for step in steps:
            r = step(r, rng)
        if r != q:
            out.append((task, r, q, "+".join(s.__name__ for s in steps)))
    return out


#: requests about anything but a text, written for the tests and the benchmark (none is an
#: exemplar of the analyzer)
OFF_TOPIC = [
    "What is the weather like in Paris today?", "What is the capital of Peru?",
    "Write a haiku about autumn leaves.", "How old is the universe?",
    "Give me a recipe for pancakes.", "Write a story about a dragon.",
    "What is the boiling point of water?", "Help me fix this bug in my code.",
    "How do I change a bicycle tyre?", "Which planet is the largest?",
    "Plan a workout for a beginner.", "What does a tax accountant do?",
    "Is a tomato a fruit?", "Tell me a fun fact about octopuses.",
    "How do I make my bread rise more?", "Name three famous painters.",
    "Describe the photo.", "Is the scan upside down?",
    "What's a good gift for a five-year-old?", "How many legs does a spider have?",
]
