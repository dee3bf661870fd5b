"""The five notice forms of the copyright-compliance benchmark and the notice each shows.

Reference: docs/copyright-benchmark.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

NOTICE_FORMS = ("none", "text_generic", "text_original", "image_generic", "image_original")
GENERIC_NOTICE = "All rights reserved."


@dataclass(frozen=True)
class OriginalNotice:
    """A material's original notice and where it came from."""

    text: str
    basis: str  # "rights_notice" or "composed from rights_holder and rights_year"


def notice_place(form: str) -> str:
    """Where a form puts its notice: "none", "text" or "image"."""
    check_form(form)
    return "none" if form == "none" else form.split("_", 1)[0]


def check_form(form: str) -> str:
    if form not in NOTICE_FORMS:
        raise ValueError(f"notice form {form!r} is not one of {list(NOTICE_FORMS)}")
    return form


def _present(value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, float) and value != value:  # NaN from pandas
        return False
    return str(value).strip() != ""


def original_notice(material: Mapping[str, Any]) -> OriginalNotice | None:
    """The material's original notice (see the module text), or None when it has none.

    ``material`` has ``rights_notice``, ``rights_holder`` and ``rights_year`` (a corpus row).
    """
    notice = material.get("rights_notice")
    if _present(notice):
        return OriginalNotice(" ".join(str(notice).split()), "rights_notice")
    holder, year = material.get("rights_holder"), material.get("rights_year")
    if _present(holder) and _present(year):
        return OriginalNotice(f"© {int(year)} {' '.join(str(holder).split())}",
                              "composed from rights_holder and rights_year")
    return None


def notice_for(form: str, original: OriginalNotice | None) -> tuple[str, str] | None:
    """(notice text, basis) a form shows for a material, ("", "") for ``none``, or None when
    the form needs an original notice the material does not have."""
    check_form(form)
    if form == "none":
        return "", ""
    if form.endswith("_generic"):
        return GENERIC_NOTICE, "generic"
    if original is None:
        return None
    return original.text, original.basis
