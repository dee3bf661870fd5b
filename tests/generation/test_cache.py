import json
import os
import re
import subprocess
import sys

from copyprobe.generation.base import Decoding
from copyprobe.generation.cache import GenerationCache, cache_key
from copyprobe.prompt import Prompt

P = Prompt("chat", messages=({"role": "user", "content": "hello"},))
ID = {"model_id": "m.gguf", "weights_sha256": "abc", "n_ctx": 4096}


def key(**over):
    args = {"backend": "llamacpp", "identity": ID, "decoding": Decoding(), "prompt": P,
            "sample_index": 0, "images": ()}
    args.update(over)
    return cache_key(**args)


def test_key_is_stable_and_hex():
    assert key() == key()
    assert re.fullmatch(r"[0-9a-f]{64}", key())


def test_key_values_are_pinned():
    # Every stored answer is found by these values: a refactoring that changes them silently
    # re-pays for every cached call. Change them only together with KEY_VERSION.
    assert key() == "b3cfbfbfc8c1148524d8a42d84679da82765ce1ac8966cd73f7be7e4b3979299"
    assert key(prompt=Prompt("completion", text="Call me Ishmael. «Ünïcode»"),
               images=("0" * 64,)) == (
        "8811836be719f6a72474fc2fbd02b8ded4f1e88cbdb901f12b1da3e7fc05bf1f")


def test_every_field_changes_the_key():
    base = key()
    variants = [
        key(backend="openai"),
        key(identity={**ID, "model_id": "other"}),
        key(identity={**ID, "weights_sha256": "abd"}),
        key(identity={**ID, "n_ctx": 2048}),
        key(decoding=Decoding(temperature=0.1)),
        key(decoding=Decoding(top_p=0.9)),
        key(decoding=Decoding(top_k=40)),
        key(decoding=Decoding(repeat_penalty=1.1)),
        key(decoding=Decoding(max_tokens=10)),
        key(decoding=Decoding(seed=1)),
        key(sample_index=1),
        key(prompt=Prompt("chat", messages=({"role": "user", "content": "hello!"},))),
        key(prompt=Prompt("chat", messages=({"role": "system", "content": "hello"},))),
        key(prompt=Prompt("completion", text="hello")),
        key(images=("0" * 64,)),
    ]
    assert len({base, *variants}) == len(variants) + 1


def test_key_independent_of_dict_order():
    assert key(identity=dict(reversed(list(ID.items())))) == key()


def test_cache_roundtrip_and_damaged_entry(tmp_path):
    c = GenerationCache(tmp_path)
    k = key()
    assert c.get(k) is None and k not in c
    c.put(k, {"text": "hi", "prompt_tokens": 3})
    assert c.get(k) == {"text": "hi", "prompt_tokens": 3} and k in c
    path = tmp_path / k[:2] / f"{k}.json"
    path.write_text("{not json")
    assert c.get(k) is None  # damaged entries read as missing and get rewritten
    c.put(k, {"text": "again"})
    assert json.loads(path.read_text()) == {"text": "again"}
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]


def test_parallel_writers_do_not_corrupt(tmp_path):
    # 4 processes write the same 200 keys concurrently: every entry must be valid JSON.
    code = (
        "import sys; from copyprobe.generation.cache import GenerationCache\n"
        "c = GenerationCache(sys.argv[1])\n"
        "for i in range(200): c.put(f'{i:064x}', {'text': 'x' * 1000, 'w': sys.argv[2]})\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, str(tmp_path), str(w)])
             for w in range(4)]
    assert all(p.wait() == 0 for p in procs)
    c = GenerationCache(tmp_path)
    for i in range(200):
        entry = c.get(f"{i:064x}")
        assert entry is not None and entry["text"] == "x" * 1000
    leftovers = [f for d in os.listdir(tmp_path) for f in os.listdir(tmp_path / d)
                 if f.startswith(".tmp-")]
    assert leftovers == []


def test_a_paid_answer_cached_by_an_earlier_version_is_still_hit(tmp_path):
    # An entry exactly as GenerationCache wrote it before copyprobe.store existed (same key,
    # path and bytes): a run finds it and sends nothing.
    import pandas as pd

    from copyprobe.generation.runner import run_generation

    prompt = Prompt("chat", messages=({"role": "user", "content": "Continue: Déjà vu"},))
    identity = {"model_id": "gpt-4o-mini-2024-07-18", "base_url": "https://api.openai.com/v1",
                "revision": ""}
    decoding = Decoding(temperature=0.0, max_tokens=64, seed=0)
    k = cache_key(backend="openai", identity=identity, decoding=decoding, prompt=prompt)
    record = {"text": "paid for once", "prompt_tokens": 9, "completion_tokens": 3,
              "finish_reason": "stop", "latency_s": 0.5, "created_at": "2026-11-01T00:00:00+00:00"}
    old = tmp_path / k[:2] / f"{k}.json"
    old.parent.mkdir(parents=True)
    old.write_bytes(json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8"))
    assert cache_key(backend="openai", identity=identity, decoding=decoding, prompt=prompt,
                     sample_index=1, images=("ab" * 32,)) == (
        "1e27ab358e53c640d8ac3e96b597fb083bbe3a18a37cbd3b428900a78f7784c5")  # the old code's

    def no_backend():
        raise AssertionError("a cached request must not load or call the backend")

    prompts = pd.DataFrame([{"request_id": "r1", "status": "ready", "prompt": prompt.to_json(),
                             "reference": None}])
    df, summary = run_generation(prompts, model="api", backend_name="openai",
                                 identity=identity, backend_factory=no_backend,
                                 decoding=decoding, cache=GenerationCache(tmp_path))
    assert summary.cache_hits == 1 and summary.model_calls == 0
    assert df["text"].tolist() == ["paid for once"] and df["from_cache"].tolist() == [True]


def test_keys_made_before_the_module_renames_still_find_their_answers(tmp_path):
    # Values computed by the code before the scoring modules and the copyright prompts moved
    # (a guarded model's generation key, through its config slice; a log-prob scoring key): a
    # cached answer stored then is served without a model call.
    import pandas as pd

    from copyprobe.generation.logprob_runner import score_key
    from copyprobe.generation.logprob_scoring import ScoreRequest
    from copyprobe.generation.runner import backend_identity, run_generation

    spec = {"name": "g", "backend": "openai", "model_id": "gpt-4o-mini-2024-07-18",
            "guard": {"policy": "block"}, "cache_dir": str(tmp_path)}
    identity = backend_identity(spec, None)
    prompt = Prompt("chat", messages=({"role": "user",
                                       "content": "Recite the opening of a book."},))
    decoding = Decoding(temperature=0.2, max_tokens=512)
    k = cache_key(backend="openai", identity=identity, decoding=decoding, prompt=prompt)
    assert k == "944a084b87a986adf4f40d956a6af9fa814814ebdf838e8e5fc640ba8afc53c8"
    assert score_key(backend="llamacpp",
                     identity={"model_id": "m.gguf", "weights_sha256": "abc", "n_ctx": 512},
                     request=ScoreRequest(context_ids=(1, 2, 3), target_ids=(4, 5)),
                     path="tokens") == (
        "ca97f4443958d83db240a5ae53b7aaeb69087d2b27723f7301fefee68a74ff25")
    record = {"text": "cached before", "prompt_tokens": 9, "completion_tokens": 2,
              "finish_reason": "stop", "latency_s": 0.5, "created_at": "2026-11-01T00:00:00+00:00"}
    old = tmp_path / k[:2] / f"{k}.json"
    old.parent.mkdir(parents=True)
    old.write_bytes(json.dumps(record, ensure_ascii=False, sort_keys=True).encode("utf-8"))

    def no_backend():
        raise AssertionError("a cached request must not load or call the backend")

    prompts = pd.DataFrame([{"request_id": "r1", "status": "ready", "prompt": prompt.to_json(),
                             "reference": None}])
    df, summary = run_generation(prompts, model="g", backend_name="openai", identity=identity,
                                 backend_factory=no_backend, decoding=decoding,
                                 cache=GenerationCache(tmp_path))
    assert summary.cache_hits == 1 and summary.model_calls == 0
    assert df["text"].tolist() == ["cached before"]
