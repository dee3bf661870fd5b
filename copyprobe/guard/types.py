"""What each guard component reports (plain frozen dataclasses, JSON-ready via asdict)."""
from __future__ import annotations
from dataclasses import dataclass, field

@dataclass(frozen=True)
class NoticeFinding:
    found: bool
    notice: str | None = None          # the notice text as found (normalised)
    where: str | None = None           # "text" | "image" | None
    ocr_chars: int = 0                 # characters OCR read from the images
    from_cache: bool = False
    ocr_text: str = ""                 # what OCR read (the status verifier may use it)

@dataclass(frozen=True)
class StatusFinding:
    status: str                        # "protected" | "public_domain" | "open_licence" | "unknown"
    basis: str                         # "catalogue:<id>", "search+llm", "error:<policy>", ...
    title: str | None = None
    error: str | None = None           # set when a step failed (and the policy decided)

@dataclass(frozen=True)
class RiskFinding:
    risk: str                          # "infringing" | "benign" | "uncertain"
    task: str                          # repetition|extraction|paraphrase|translation|summary|author|comment|background|other
    component: str                     # which part decided: "rules", "embedding", "llm"
    score: float | None = None
    detail: dict = field(default_factory=dict)
