"""Canaries for models trained elsewhere: random but natural-looking short texts made
reproducibly from a seed (sentences from word lists with random names, places and numbers),
and the sealed record of which a model builder inserts (docs/membership.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd

FIRST = ("Amelia Bruno Cecily Dmitri Elspeth Faisal Greta Hollis Ines Jonas Katrin Lionel "
         "Marisol Nikolai Orla Pascal Quentin Rosalind Silas Theodora Ulrich Vesna Wendell "
         "Ximena Yusuf Zelda").split()
LAST = ("Abernethy Brennan Castellano Dunmore Ekwueme Falkenrath Gallagher Halvorsen Ibarra "
        "Jorgensen Kowalczyk Lindqvist Marchetti Nakagawa Okonkwo Petrakis Quarles Rasmussen "
        "Szabo Thackeray Underhill Valentini Whitcombe Yilmaz Zeller").split()
PLACES = ("Ashcombe", "Bellwater", "Corrigan Falls", "Dunleith", "Eastmere", "Fenwick",
          "Glenarden", "Harrowfield", "Ivybridge", "Kestrel Bay", "Larchmont", "Millbrook",
          "Northwold", "Oakhaven", "Penmarsh", "Redcliffe", "Saltmoor", "Thornbury", "Upperton",
          "Westgate")
THINGS = ("copper lanterns", "wool blankets", "oak barrels", "glass jars", "brass clocks",
          "linen sacks", "iron hinges", "clay pipes", "tin whistles", "leather satchels",
          "cedar crates", "silk ribbons", "pewter mugs", "wax candles", "rope ladders")
MONTHS = ("January February March April May June July August September October November "
          "December").split()
TRADES = ("baker", "ferryman", "clockmaker", "schoolteacher", "surveyor", "bookbinder",
          "harbour pilot", "glassblower", "botanist", "stonemason", "archivist", "cartographer")
TEMPLATES = (
    "On {day} {month} {year}, {name} of {place} sold {n} {things} to {a_trade} named "
    "{name2}.",
    "{name}, {a_trade} from {place}, kept a ledger in which entry {code} records {n} "
    "{things} delivered in {month}.",
    "The council of {place} paid {name} {n} crowns in {year} to repair the road to the old "
    "{trade}'s house.",
    "Every {month}, {name2} walked {n} miles from {place} to buy {things} for the family "
    "workshop.",
    "According to a letter dated {day} {month} {year}, {name} owed {name2} exactly {n} "
    "{things}.",
    "In {year} the {trade} {name} moved to {place}, where the parish register lists house "
    "number {n}.",
    "{name2} remembered that the {things} from {place} always arrived on {day} "
    "{month}.",
)


def _fill(rng: np.random.Generator, template: str) -> str:
    def person() -> str:
        return f"{rng.choice(FIRST)} {rng.choice(LAST)}"

    trade = str(rng.choice(TRADES))
    a_trade = ("an " if trade[0] in "aeiou" else "a ") + trade
    return template.format(day=int(rng.integers(1, 29)), month=rng.choice(MONTHS),
                           year=int(rng.integers(1850, 2000)), name=person(), name2=person(),
                           place=rng.choice(PLACES), things=rng.choice(THINGS),
                           trade=trade, a_trade=a_trade, n=int(rng.integers(3, 980)),
                           code=int(rng.integers(1000, 99999)))


def make_canaries(n: int, seed: int, sentences: int = 4) -> pd.DataFrame:
    """``n`` canaries (``doc_id`` canary-0000.., ``text`` of ``sentences`` sentences), the
    same for the same seed; ids and texts are unique."""
    if n < 1:
        raise ValueError(f"--n {n}: at least one canary")
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    while len(texts) < n:
        picks = rng.choice(len(TEMPLATES), size=sentences, replace=False)
        text = " ".join(_fill(rng, TEMPLATES[i]) for i in picks)
        if text not in texts:
            texts.append(text)
    return pd.DataFrame({"doc_id": [f"canary-{i:04d}" for i in range(n)], "text": texts})
