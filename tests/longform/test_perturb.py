"""Best-of-N perturbations: seeded, so a rerun sends the same requests."""

from __future__ import annotations

import pytest

from copyprobe.longform.perturb import perturb

TEXT = "Continue the following text exactly as it appears in the original literary work"


def test_the_same_seed_gives_the_same_request_and_another_seed_another():
    a = perturb(TEXT, 0.4, "0:1")
    assert a == perturb(TEXT, 0.4, "0:1")
    assert a != TEXT and a != perturb(TEXT, 0.4, "0:2")
    # letters shuffled inside words, case flipped, a character shifted: the length remains
    assert len(a) == len(TEXT) and a.split()[0][0].lower() == "c"


def test_sigma_zero_changes_nothing_and_a_bad_sigma_is_an_error():
    assert perturb(TEXT, 0.0, 7) == TEXT
    with pytest.raises(ValueError, match="sigma"):
        perturb(TEXT, 1.5, 0)
