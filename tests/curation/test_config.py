from pathlib import Path

import pytest
import yaml

from copyprobe.config import ConfigError, validate_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def cfg():
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def test_curation_defaults_are_filled(cfg):
    cfg["curation"] = {"margin_days": 3}
    cur = validate_config(cfg)["curation"]
    assert cur["dedup"] == {"exact": True, "near": True, "threshold": 0.8, "shingle_words": 5,
                            "num_perm": 128, "seed": 1}
    assert cur["margin_before_days"] is None and cur["margin_after_days"] is None


@pytest.mark.parametrize(("block", "key"), [
    ({"dedup": {"threshold": 1.5}}, "curation.dedup.threshold"),
    ({"dedup": {"treshold": 0.5}}, "curation.dedup.treshold"),
    ({"margin_after_days": -1}, "curation.margin_after_days"),
    ({"dedup": {"near": "yes"}}, "curation.dedup.near"),
])
def test_bad_curation_keys_are_named(cfg, block, key):
    cfg["curation"] = block
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        validate_config(cfg)
