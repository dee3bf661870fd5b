"""Training a local model on an insertion plan's members (transformers; full fine-tune or
LoRA through peft), written as a model folder that the ``hf`` backend loads.

The run's key covers everything that changes the weights; a completed run with the same key
is reused, checkpoints under ``OUT/.checkpoints/<key>`` let a killed run resume, and the
model becomes usable only when ``model.yaml`` is written, last (docs/membership.md).
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
import resource
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from copyprobe import __version__
from copyprobe.artifacts import write_json, write_text
from copyprobe.membership.insertion import documents_digest, plan_digest, write_plan
from copyprobe.models import ModelFile, sha256_file
from copyprobe.progress import Progress
from copyprobe.store import content_key

log = logging.getLogger(__name__)

#: the plan, the trained model's files, its config and its record, under the output folder
PLAN, MODEL_DIR, MODEL_YAML, RECORD = "insertion.parquet", "model", "model.yaml", "train.json"


@dataclass(frozen=True)
class TrainSettings:
    """What the run does; every field but ``checkpoint_every`` enters the key."""

    seed: int = 0
    epochs: int = 1
    #: AdamW's learning rate (constant); None: 1e-5 for a full fine-tune, 5e-4 with LoRA
    lr: float | None = None
    lora: bool = False
    lora_rank: int = 4
    lora_alpha: int = 8
    #: each document's first tokens trained on (as membership-score scores its first tokens)
    max_tokens: int = 256
    #: steps between checkpoints (0: none)
    checkpoint_every: int = 25

    @property
    def learning_rate(self) -> float:
        return self.lr if self.lr is not None else (5e-4 if self.lora else 1e-5)

    def keyed(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "checkpoint_every"}
        out["lr"] = self.learning_rate
        if not self.lora:
            out.pop("lora_rank"), out.pop("lora_alpha")
        return out


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return ""


def hf_spec(spec: Mapping[str, Any], key: str) -> dict[str, Any]:
    """The base model's entry as the ``hf`` backend loads it: an ``hf`` entry as it is, any
    other entry with a GGUF ``model_file`` (llama.cpp's) through transformers' GGUF loader."""
    if spec["backend"] == "hf":
        return dict(spec)
    if spec.get("model_file"):
        return {"backend": "hf", "name": spec["name"], "model_file": spec["model_file"],
                "dtype": "float32", "n_threads": spec.get("n_threads"),
                "cache_dir": spec.get("cache_dir"), "decoding": spec.get("decoding")}
    raise ValueError(f"{key}: membership-train fine-tunes with transformers: the base model "
                     f"needs backend hf, or a GGUF model_file (backend {spec['backend']!r} has "
                     "neither)")


def training_order(plan: pd.DataFrame, *, seed: int, epochs: int) -> list[str]:
    """The doc_ids trained on, one step each: every epoch each member ``repeats`` times,
    shuffled with ``seed`` and the epoch."""
    members = plan[plan["member"]]
    once = [d for d, r in zip(members["doc_id"], members["repeats"], strict=True)
            for _ in range(int(r))]
    order: list[str] = []
    for epoch in range(epochs):
        rng = np.random.default_rng([seed, epoch])
        order.extend(once[i] for i in rng.permutation(len(once)))
    return order


#: The optimizer, in the key: torch's fused AdamW rounds differently from its per-tensor loop.
OPTIMIZER = "adamw-fused"


def train_key(identity: Mapping[str, Any], plan: pd.DataFrame, docs: pd.DataFrame,
              settings: TrainSettings, device: str) -> str:
    """The key of a run: base weights, plan, documents, settings, device and versions."""
    return content_key({
        "base": {k: identity.get(k) for k in ("model_id", "revision", "weights_sha256",
                                              "dtype")},
        "plan": plan_digest(plan), "documents": documents_digest(docs),
        "settings": settings.keyed(), "device": device, "optimizer": OPTIMIZER,
        "versions": {"copyprobe": __version__, "torch": _version("torch"),
                     "transformers": _version("transformers"),
                     "peft": _version("peft") if settings.lora else ""},
    })


def file_hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): sha256_file(p)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def completed(out: Path, key: str) -> dict[str, Any] | None:
    """The record of a completed run of ``key`` in ``out`` whose files are all unchanged."""
    import json

    try:
        record = json.loads((out / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if record.get("key") != key or not (out / MODEL_YAML).is_file():
        return None
    if file_hashes(out / MODEL_DIR) != record.get("files"):
        return None
    return record


class _Checkpoints:
    """``root/step-NNNNNN`` folders, each renamed into place when complete; the newest is
    the one a rerun resumes from."""

    def __init__(self, root: Path, key: str) -> None:
        self.root, self.key = root, key

    def latest(self) -> Path | None:
        steps = sorted(self.root.glob("step-*")) if self.root.is_dir() else []
        return steps[-1] if steps else None

    def save(self, step: int, model: Any, optimizer: Any, losses: list[dict[str, Any]]) -> None:
        import torch
        from safetensors.torch import save_file

        tmp = self.root / f".tmp-step-{step:06d}-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        save_file({n: p.detach().contiguous().cpu() for n, p in model.named_parameters()
                   if p.requires_grad}, tmp / "trainable.safetensors")
        torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
        write_json(tmp / "state.json", {"key": self.key, "step": step, "losses": losses})
        os.replace(tmp, self.root / f"step-{step:06d}")
        for old in self.root.glob("step-*"):
            if old.name != f"step-{step:06d}":
                shutil.rmtree(old, ignore_errors=True)

    def load(self, folder: Path, model: Any, optimizer: Any) -> tuple[int, list[dict[str, Any]]]:
        import json

        import torch
        from safetensors.torch import load_file

        state = json.loads((folder / "state.json").read_text(encoding="utf-8"))
        params = dict(model.named_parameters())
        with torch.no_grad():
            for name, tensor in load_file(folder / "trainable.safetensors").items():
                params[name].copy_(tensor)
        optimizer.load_state_dict(torch.load(folder / "optimizer.pt", weights_only=True))
        return int(state["step"]), list(state["losses"])


def _prepare(model: Any, settings: TrainSettings) -> Any:
    """The model with its trainable parameters set: all, or LoRA adapters on every linear
    layer (dropout 0, so a resumed run repeats the same arithmetic)."""
    if not settings.lora:
        return model
    from copyprobe.extras import require

    require("hf", "peft", needed_for="membership-train --lora")
    from peft import LoraConfig, get_peft_model

    return get_peft_model(model, LoraConfig(r=settings.lora_rank, lora_alpha=settings.lora_alpha,
                                            lora_dropout=0.0, target_modules="all-linear",
                                            task_type="CAUSAL_LM"))


def train_model(base_name: str, base_spec: Mapping[str, Any], model_file: ModelFile | None,
                docs: pd.DataFrame, plan: pd.DataFrame, settings: TrainSettings, out: Path, *,
                plan_settings: Mapping[str, Any] | None = None,
                on_step: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Fine-tune the base model on ``plan``'s members (texts from ``docs``) into ``out``
    (``insertion.parquet`` with ``plan_settings`` as provenance, ``model/``, ``train.json``,
    ``model.yaml``), or reuse a completed run of the same key.
    The record's ``outcome`` says which: ``reused``, ``trained`` or ``resumed`` (from
    ``resumed_from_step``). ``on_step(step)`` runs after each step (tests inject faults)."""
    from copyprobe.generation.hf import HFBackend
    from copyprobe.generation.runner import backend_identity

    spec = hf_spec(base_spec, "--model-config")
    identity = backend_identity(spec, model_file)
    device = identity["backend_device"]
    key = train_key(identity, plan, docs, settings, device)
    out = Path(out)
    done = completed(out, key)
    if done is None:
        for name in (MODEL_YAML, RECORD):  # what made the folder a usable model goes first
            (out / name).unlink(missing_ok=True)
    write_plan(plan, out / PLAN, **(plan_settings or {}))
    if done is not None:
        return {**done, "outcome": "reused"}
    for stale in out.glob(".tmp-model-*"):
        shutil.rmtree(stale, ignore_errors=True)
    ckpt_root = out / ".checkpoints"
    for other in (ckpt_root.glob("*") if ckpt_root.is_dir() else []):
        if other.name != key:
            shutil.rmtree(other, ignore_errors=True)
    checkpoints = _Checkpoints(ckpt_root / key, key)

    import torch

    from copyprobe.generation.hf import HFTokenizer

    backend = HFBackend.from_config(spec, model_file)
    tokenizer = HFTokenizer(backend.tokenizer)
    torch.manual_seed(settings.seed)
    model = _prepare(backend.model, settings)
    model.train()
    trained = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=settings.learning_rate, weight_decay=0.0,
                                  fused=all(p.device.type in ("cpu", "cuda") for p in trained))
    texts = dict(zip(docs["doc_id"].astype(str), docs["text"].astype(str), strict=True))
    bos = [backend.tokenizer.bos_token_id] if tokenizer.add_bos else []
    ids = {d: (bos + tokenizer.tokenize(texts[d]))[:settings.max_tokens]
           for d in plan.loc[plan["member"], "doc_id"]}
    order = training_order(plan, seed=settings.seed, epochs=settings.epochs)

    start, losses, resumed_from = 0, [], None
    latest = checkpoints.latest()
    if latest is not None:
        start, losses = checkpoints.load(latest, model, optimizer)
        resumed_from = start
        log.info("membership-train: resuming from the checkpoint at step %d of %d", start,
                 len(order))
    t0 = time.perf_counter()
    with Progress(len(order), f"membership-train {base_name}") as progress:
        progress.update(start)
        for step in range(start, len(order)):
            doc_id = order[step]
            batch = torch.tensor([ids[doc_id]], device=model.device)
            loss = model(input_ids=batch, labels=batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append({"step": step + 1, "epoch": step * settings.epochs // len(order) + 1,
                           "doc_id": doc_id, "tokens": batch.shape[1],
                           "loss": float(loss.detach())})
            if settings.checkpoint_every and (step + 1) % settings.checkpoint_every == 0 \
                    and step + 1 < len(order):
                checkpoints.save(step + 1, model, optimizer, losses)
            progress.update()
            if on_step is not None:
                on_step(step + 1)
    seconds = time.perf_counter() - t0
    here = sum(len(ids[d]) for d in order[start:])  # tokens trained by this process
    peak_mb = (torch.cuda.max_memory_allocated() if device == "cuda"
               else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024) / 2**20

    if settings.lora:
        model = model.merge_and_unload()
    model.eval()
    # a GGUF base is dequantised on loading: the weights are plain tensors, saved as such
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = out / f".tmp-model-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    backend.tokenizer.save_pretrained(tmp)
    shutil.rmtree(out / MODEL_DIR, ignore_errors=True)
    os.replace(tmp, out / MODEL_DIR)
    shutil.rmtree(ckpt_root, ignore_errors=True)

    record = {
        "key": key, "outcome": "trained" if resumed_from is None else "resumed",
        "resumed_from_step": resumed_from, "base_model": base_name,
        "base_identity": identity, "plan_digest": plan_digest(plan),
        "documents_digest": documents_digest(docs), "settings": {**asdict(settings),
                                                                 "lr": settings.learning_rate},
        "device": device, "steps": len(order),
        "tokens_trained": sum(len(ids[d]) for d in order), "steps_this_run": len(order) - start,
        "seconds": round(seconds, 2),
        "tokens_per_second": round(here / seconds, 2) if seconds > 0 else None,
        "peak_memory_mb": round(peak_mb, 1),
        "parameters": int(sum(p.numel() for p in model.parameters())),
        "loss_curve": losses, "files": file_hashes(out / MODEL_DIR),
        "versions": {"copyprobe": __version__, "torch": _version("torch"),
                     "transformers": _version("transformers"), "peft": _version("peft")},
    }
    write_json(out / RECORD, record)
    write_text(out / MODEL_YAML, model_yaml(base_name, spec, out, record))
    return record


def model_yaml(base_name: str, spec: Mapping[str, Any], out: Path,
               record: Mapping[str, Any]) -> str:
    """The trained model's entry (``hf`` backend; the model folder as ``./model``, relative
    to model.yaml's own folder, so that the folder can be moved or copied whole), with the
    base entry's decoding: the trained model answers as its base was set to."""
    entry: dict[str, Any] = {"backend": "hf", "model_id": f"./{MODEL_DIR}", "dtype": "float32"}
    for k in ("n_threads", "device_map", "batch_size"):
        if spec.get(k) is not None:
            entry[k] = spec[k]
    decoding = {k: v for k, v in (spec.get("decoding") or {}).items() if v is not None}
    if decoding:
        entry["decoding"] = decoding
    head = (f"# {base_name} fine-tuned by copyprobe membership-train on the members of "
            f"insertion.parquet\n# (plan {record['plan_digest'][:16]}, run "
            f"{record['key'][:16]}; train.json holds the settings and the loss curve)\n")
    return head + yaml.safe_dump({f"{base_name}-inserted": entry}, sort_keys=False)
