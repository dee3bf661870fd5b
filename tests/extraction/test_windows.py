"""Window geometry: whole windows at 0, stride, 2 * stride ..., skips, config validation."""

from __future__ import annotations

import pytest

from copyprobe.extraction.windows import Window, WindowSpec, cut_windows, skip_reason


def test_defaults_are_cooper_et_al() -> None:
    spec = WindowSpec()
    assert (spec.prefix_tokens, spec.suffix_tokens, spec.stride) == (50, 50, 50)
    assert spec.length == 100


def test_exact_boundaries() -> None:
    spec = WindowSpec(prefix_tokens=3, suffix_tokens=2, stride=2)
    # 5 tokens: exactly one window; 6: still one (the next would end at 7); 7: two
    assert [w.start for w in cut_windows(range(5), spec)] == [0]
    assert [w.start for w in cut_windows(range(6), spec)] == [0]
    assert [w.start for w in cut_windows(range(7), spec)] == [0, 2]
    assert cut_windows(range(4), spec) == []
    assert spec.count(4) == 0 and spec.count(5) == 1 and spec.count(7) == 2


def test_window_contents_and_offsets() -> None:
    ids = [100 + i for i in range(12)]
    windows = cut_windows(ids, WindowSpec(prefix_tokens=4, suffix_tokens=3, stride=5))
    assert windows == [
        Window(index=0, start=0, prefix_ids=(100, 101, 102, 103), suffix_ids=(104, 105, 106)),
        Window(index=1, start=5, prefix_ids=(105, 106, 107, 108), suffix_ids=(109, 110, 111)),
    ]
    assert [w.suffix_start for w in windows] == [4, 9]
    for w in windows:
        assert ids[w.start:w.suffix_start] == list(w.prefix_ids)
        assert ids[w.suffix_start:w.suffix_start + 3] == list(w.suffix_ids)


def test_default_windows_overlap_by_half() -> None:
    windows = cut_windows(range(250), WindowSpec())
    assert [w.start for w in windows] == [0, 50, 100, 150]
    for a, b in zip(windows, windows[1:]):
        assert a.suffix_ids == b.prefix_ids


def test_skip_reason() -> None:
    spec = WindowSpec()
    assert skip_reason(42, spec) == "42 tokens, fewer than one window of 50+50"
    assert skip_reason(99, spec) is not None
    assert skip_reason(100, spec) is None
    assert skip_reason(0, WindowSpec(prefix_tokens=8, suffix_tokens=4)) == (
        "0 tokens, fewer than one window of 8+4")


@pytest.mark.parametrize("field", ["prefix_tokens", "suffix_tokens", "stride"])
@pytest.mark.parametrize("value", [0, -3, 2.5, True, "50"])
def test_invalid_fields_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        WindowSpec(**{field: value})


def test_from_config() -> None:
    assert WindowSpec.from_config(None) == WindowSpec()
    assert WindowSpec.from_config({"suffix_tokens": 32, "n": [1, 10]}) == WindowSpec(
        suffix_tokens=32)
    with pytest.raises(ValueError, match="stride"):
        WindowSpec.from_config({"stride": 0})
