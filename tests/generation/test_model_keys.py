"""Per-backend model keys: a key the model's backend does not read is an error naming the key
and the backends that read it; checked for every built-in backend, and through load_config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from copyprobe.config import ConfigError, load_config
from copyprobe.generation.base import BACKENDS, backend_model_keys
from copyprobe.generation.model_keys import ModelKeyError, check_model_keys, readers

ROOT = Path(__file__).resolve().parents[2]

#: per backend: an entry it accepts, and a key of another backend it does not read
CASES = {
    "llamacpp": ({"model_file": {"path": "m.gguf"}, "n_ctx": 2048, "n_threads": 2},
                 "max_images_per_prompt", ["vllm"]),
    "hf": ({"model_id": "org/m", "vision": True, "dtype": "bfloat16", "device_map": "auto"},
           "max_images_per_prompt", ["vllm"]),
    "vllm": ({"model_id": "org/m", "max_images_per_prompt": 4, "max_model_len": 8192,
              "trust_remote_code": True}, "device_map", ["hf"]),
    "openai": ({"model_id": "gpt-x", "base_url": "http://localhost:8080/v1",
                "api_key_optional": True, "endpoint": "chat"}, "n_ctx", ["llamacpp"]),
    "openai_batch": ({"model_id": "gpt-x", "batch_dir": "b", "completion_window": "24h"},
                     "endpoint", ["openai"]),
    "ocr_cascade": ({"text_backend": {"backend": "llamacpp", "n_ctx": 2048}},
                    "model_id", ["hf", "llamacpp", "openai", "openai_batch", "vllm"]),
}


def test_every_builtin_backend_declares_its_keys() -> None:
    assert set(CASES) == set(BACKENDS.names())
    for name in BACKENDS.names():
        assert backend_model_keys(name), name


@pytest.mark.parametrize("backend", sorted(CASES))
def test_each_backend_accepts_its_keys_and_names_the_readers_of_others(backend: str) -> None:
    good, foreign, expected = CASES[backend]
    spec = {"backend": backend, "decoding": {"temperature": 0.0}, "shard_size": 10, **good}
    check_model_keys("m", spec, "models.m")  # its own keys and keys no backend owns pass
    assert readers(foreign) == expected
    with pytest.raises(ModelKeyError) as info:
        check_model_keys("m", {**spec, foreign: 1}, "models.m")
    msg = str(info.value)
    assert f"'models.m.{foreign}'" in msg and repr(backend) in msg
    assert f"(read by {', '.join(expected)})" in msg


def test_the_inner_slice_of_a_cascade_is_checked_against_its_own_backend() -> None:
    spec = {"backend": "ocr_cascade",
            "text_backend": {"backend": "llamacpp", "model_file": {"path": "m.gguf"},
                             "vision": False}}
    with pytest.raises(ModelKeyError, match=r"'models.c.text_backend.vision': backend "
                                            r"'llamacpp' does not read 'vision' \(read by hf\)"):
        check_model_keys("c", spec)


def test_schema_defaults_filled_by_validation_pass_but_other_values_do_not() -> None:
    spec = {"backend": "openai", "model_id": "gpt-x", "n_ctx": 4096, "vision": False,
            "tensor_parallel_size": 1, "trust_remote_code": False}
    check_model_keys("m", spec)  # what the schema fills into every entry
    with pytest.raises(ModelKeyError, match="'models.m.n_ctx'"):
        check_model_keys("m", {**spec, "n_ctx": 8192})
    with pytest.raises(ModelKeyError, match="'models.m.n_ctx'"):
        check_model_keys("m", spec, defaults_filled=False)


def test_an_unknown_backend_is_left_to_the_caller() -> None:
    check_model_keys("m", {"backend": "no-such-backend", "n_ctx": 1})  # config names it


def _config(tmp_path: Path, model: dict) -> Path:
    cfg = yaml.safe_load((ROOT / "config" / "paper" / "copyright.yaml").read_text())
    cfg["models"] = {"m": {"studies": ["copyright"], **model}}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_load_config_rejects_max_images_per_prompt_on_hf(tmp_path: Path) -> None:
    path = _config(tmp_path, {"backend": "hf", "vision": True, "model_id": "llava-hf/x",
                              "max_images_per_prompt": 1})
    with pytest.raises(ConfigError, match=r"config key 'models.m.max_images_per_prompt': "
                                          r"backend 'hf' does not read 'max_images_per_prompt' "
                                          r"\(read by vllm\)"):
        load_config(path)


def test_the_paper_example_passes_and_llava_runs_where_its_image_limit_is_read() -> None:
    cfg = load_config(ROOT / "config" / "paper" / "copyright.yaml")
    llava = cfg["models"]["llava-1.5-7b"]
    assert llava["max_images_per_prompt"] == 1
    assert "max_images_per_prompt" in backend_model_keys(llava["backend"])
