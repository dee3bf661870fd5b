"""A loopback server that answers like vLLM's OpenAI-compatible server, backed by a real model
(llama-cpp-python with the logits of every position), for the scoring tests.

It implements the parts of vLLM's server that scoring uses, in vLLM's documented shapes
(vllm/entrypoints/openai/completion/protocol.py and serving.py, serve/tokenize/protocol.py):

``POST /v1/completions``
    ``prompt``: a string, a list of token ids, or a list of either (one choice per prompt, in
    order). With ``echo: true``, ``logprobs: N`` and ``max_tokens: 0`` the answer echoes the
    prompt only; ``max_tokens: 1`` appends the greedy next token. ``choices[i].logprobs`` holds
    ``tokens``, ``token_logprobs`` (the first is null), ``top_logprobs`` (per position a dict of
    decoded token -> log-prob: the position's own token and the top N; null first) and
    ``text_offset``; ``choices[i].prompt_logprobs`` holds vLLM's raw prompt log-probs (null
    first, then per position ``{token_id: {logprob, rank, decoded_token}}``). A log-prob of
    -inf is sent as -9999.0, as vLLM clamps it. Text prompts get the model's BOS when its
    tokenizer adds one (``add_special_tokens``, default true); token prompts are used as sent.
``POST /tokenize``
    ``{"prompt": text, "add_special_tokens": true}`` or ``{"messages": [...],
    "add_generation_prompt": true, "continue_final_message": false}`` (the model's chat
    template, rendered with Jinja as transformers does) -> ``{count, max_model_len, tokens,
    token_strs}``.
``POST /detokenize``
    ``{"tokens": [...]}`` -> ``{"prompt": text}``.
``GET /v1/models``, ``GET /metrics``
    vLLM's ``ModelCard`` (``owned_by: "vllm"``, ``max_model_len``: ``n_ctx``, a
    ``ModelPermission``; entrypoints/openai/engine/protocol.py, models/serving.py) and its
    Prometheus text: the scheduler gauges and ``vllm:cache_config_info`` with the CacheConfig
    fields as labels (v1/metrics/loggers.py ``log_metrics_info``); ``num_gpu_blocks = None``
    leaves that line out (stats off).

The numbers are computed by the model in one pass over the whole sequence
(``Llama.eval``, then log-softmax of every position's logits), so a test can compare a client's
log-probs with llama.cpp's own.

Test controls: ``prompt_logprobs = False`` makes it answer like llama.cpp's server (log-probs
of the generated token only, no ``prompt_logprobs``: llama.cpp #27174); ``min_max_tokens = 1``
refuses ``max_tokens: 0`` with HTTP 400 (as servers that must generate do); ``vllm_fields =
False`` leaves out vLLM's own ``prompt_logprobs`` field (the OpenAI-format ``logprobs`` only);
``tokenizer_api = "llama.cpp"`` answers ``/tokenize`` and ``/detokenize`` as llama.cpp's server
does (``content`` in and out: a vLLM-shaped request gets no tokens), ``"none"`` with 404 (as
OpenAI's API); ``fail_next(status, n, path)`` answers the next ``n`` requests (to ``path``)
with that status; ``requests`` records ``(path, body)`` of every request.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from server_thread import ServerThread  # noqa: E402

__all__ = ["VLLMLikeServer"]

#: vLLM sends -inf log-probs as this value
CLAMP = -9999.0


class VLLMLikeServer(ServerThread):
    """Serve ``model_path`` on 127.0.0.1 (an ephemeral port); ``base_url`` ends in ``/v1``."""

    def __init__(self, model_path: str | Path, *, model_name: str = "loopback",
                 n_ctx: int = 2048, n_threads: int = 2) -> None:
        from llama_cpp import Llama

        self.llm = Llama(str(model_path), logits_all=True, n_ctx=n_ctx, n_threads=n_threads,
                         verbose=False)
        self.model_name = model_name
        self.n_ctx = n_ctx
        self.prompt_logprobs = True
        self.vllm_fields = True
        self.tokenizer_api = "vllm"
        self.min_max_tokens = 0
        self.num_gpu_blocks: int | None = 96
        self.block_size = 16
        self.requests: list[tuple[str, Any]] = []
        self._faults: deque[tuple[int, str | None]] = deque()
        self._lock = threading.Lock()

    # -- controls ------------------------------------------------------------------------------
    def fail_next(self, status: int, n: int = 1, path: str | None = None) -> None:
        """Answer the next ``n`` requests (to ``path``, if given) with HTTP ``status``."""
        self._faults.extend([(status, path)] * n)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}/v1"

    def _make_server(self) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.owner = self  # type: ignore[attr-defined]
        return server

    # -- what vLLM reports about itself ----------------------------------------------------------
    def models(self) -> dict[str, Any]:
        created = int(time.time())
        permission = {"id": f"modelperm-{uuid.uuid4().hex}", "object": "model_permission",
                      "created": created, "allow_create_engine": False, "allow_sampling": True,
                      "allow_logprobs": True, "allow_search_indices": False, "allow_view": True,
                      "allow_fine_tuning": False, "organization": "*", "group": None,
                      "is_blocking": False}
        return {"object": "list", "data": [
            {"id": self.model_name, "object": "model", "created": created, "owned_by": "vllm",
             "root": self.model_name, "parent": None, "max_model_len": self.n_ctx,
             "permission": [permission]}]}

    def metrics(self) -> str:
        labels = f'model_name="{self.model_name}",engine="0"'
        lines = ["# HELP vllm:num_requests_running Number of requests in model execution "
                 "batches.", "# TYPE vllm:num_requests_running gauge",
                 f"vllm:num_requests_running{{{labels}}} 0.0",
                 "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
                 "# TYPE vllm:num_requests_waiting gauge",
                 f"vllm:num_requests_waiting{{{labels}}} 0.0"]
        if self.num_gpu_blocks is not None:
            info = {"block_size": self.block_size, "gpu_memory_utilization": 0.9,
                    "swap_space": 4, "cache_dtype": "auto", "is_attention_free": False,
                    "num_gpu_blocks_override": None, "sliding_window": None,
                    "enable_prefix_caching": True, "prefix_caching_hash_algo": "builtin",
                    "cpu_offload_gb": 0, "calculate_kv_scales": False,
                    "num_gpu_blocks": self.num_gpu_blocks, "num_cpu_blocks": None,
                    "engine": 0}
            pairs = ",".join(f'{k}="{v}"' for k, v in info.items())
            lines += ["# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig",
                      "# TYPE vllm:cache_config_info gauge", f"vllm:cache_config_info{{{pairs}}} 1.0"]
        return "\n".join(lines) + "\n"

    # -- the model -------------------------------------------------------------------------------
    def piece(self, token: int) -> str:
        return self.llm.detokenize([token], special=True).decode("utf-8", errors="replace")

    def text_ids(self, text: str, add_special: bool) -> list[int]:
        add_bos = add_special and bool(self.llm._model.add_bos_token())
        return self.llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)

    def chat_ids(self, messages: list[dict[str, Any]], add_generation_prompt: bool,
                 continue_final_message: bool) -> list[int]:
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        template = self.llm.metadata["tokenizer.chat_template"]
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        text = env.from_string(template).render(
            messages=messages, add_generation_prompt=add_generation_prompt,
            bos_token=self.piece(self.llm.token_bos()), eos_token=self.piece(self.llm.token_eos()))
        if continue_final_message:  # as transformers: cut after the final message's content
            final = messages[-1]["content"]
            text = text[:text.rindex(final) + len(final)]
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    def logprobs(self, ids: list[int]) -> np.ndarray:
        """Row i: the log-probabilities of the token after ids[:i+1] (one pass)."""
        from llama_cpp import Llama

        with self._lock:
            self.llm.reset()
            self.llm.eval(ids)
            logits = np.array(self.llm.scores[:len(ids)], dtype=np.float32)
        return Llama.logits_to_logprobs(logits)

    def completion_choice(self, index: int, ids: list[int], text: str | None,
                          body: dict[str, Any]) -> dict[str, Any]:
        top_n = body.get("logprobs")
        max_tokens = body.get("max_tokens", 16)
        if max_tokens < self.min_max_tokens:
            raise ValueError(f"max_tokens must be at least {self.min_max_tokens}, got "
                             f"{max_tokens}.")
        if not body.get("echo") or top_n is None or max_tokens not in (0, 1):
            raise ValueError("this test server answers echo + logprobs with max_tokens 0 or 1")
        lp = self.logprobs(ids)
        out_ids = list(ids)
        if max_tokens == 1:
            out_ids.append(int(np.argmax(lp[-1])))
        entries: list[dict[int, dict[str, Any]] | None] = [None]
        for i in range(1, len(out_ids)):
            row = lp[i - 1]
            tok = out_ids[i]
            best = np.argpartition(-row, top_n)[:top_n] if top_n else []
            order = sorted(best, key=lambda t: -row[t])
            entry = {tok: self._logprob(row, tok)}
            for t in order:
                entry.setdefault(int(t), self._logprob(row, int(t)))
            entries.append(entry)
        prompt_text = text if text is not None else "".join(self.piece(t) for t in ids)
        generated = "".join(self.piece(t) for t in out_ids[len(ids):])
        if self.prompt_logprobs:
            shown, shown_ids, prompt_lps = entries, out_ids, entries[:len(ids)]
        else:  # llama.cpp's server: the generated token's log-probs only, if any
            shown, shown_ids, prompt_lps = entries[len(ids):], out_ids[len(ids):], None
        tokens, token_lps, tops, offsets = [], [], [], []
        offset = 0
        for tok, entry in zip(shown_ids, shown, strict=True):
            piece = self.piece(tok)
            tokens.append(piece)
            offsets.append(offset)
            offset += len(piece)
            if entry is None:
                token_lps.append(None)
                tops.append(None)
            else:
                token_lps.append(entry[tok]["logprob"])
                tops.append({e["decoded_token"]: e["logprob"] for e in entry.values()})
        choice = {
            "index": index,
            "text": prompt_text + generated if self.prompt_logprobs else generated,
            "logprobs": {"text_offset": offsets, "token_logprobs": token_lps, "tokens": tokens,
                         "top_logprobs": tops},
            "finish_reason": "length", "stop_reason": None,
            "prompt_logprobs": None if prompt_lps is None else [
                None if e is None else {str(k): v for k, v in e.items()} for e in prompt_lps],
            "prompt_token_ids": None,
        }
        if not self.vllm_fields:
            for key in ("stop_reason", "prompt_logprobs", "prompt_token_ids"):
                del choice[key]
        return choice

    def _logprob(self, row: np.ndarray, tok: int) -> dict[str, Any]:
        value = float(row[tok])
        return {"logprob": value if value > CLAMP else CLAMP,
                "rank": int(np.sum(row > row[tok])) + 1, "decoded_token": self.piece(tok)}

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        prompt = body.get("prompt")
        add_special = body.get("add_special_tokens", True)
        if isinstance(prompt, str) or (isinstance(prompt, list) and prompt
                                       and all(isinstance(t, int) for t in prompt)):
            prompts = [prompt]
        elif isinstance(prompt, list) and prompt:
            prompts = prompt
        else:
            raise ValueError("Either prompt or prompt_embeds must be provided and non-empty.")
        choices = []
        n_prompt = 0
        for i, p in enumerate(prompts):
            if isinstance(p, str):
                ids, text = self.text_ids(p, add_special), p
            else:
                ids, text = [int(t) for t in p], None
            if len(ids) + body.get("max_tokens", 16) > self.n_ctx:
                raise ValueError(f"This model's maximum context length is {self.n_ctx} tokens.")
            choices.append(self.completion_choice(i, ids, text, body))
            n_prompt += len(ids)
        n_gen = len(choices) * body.get("max_tokens", 16)
        return {"id": f"cmpl-{len(self.requests)}", "object": "text_completion",
                "created": int(time.time()), "model": self.model_name, "choices": choices,
                "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_gen,
                          "total_tokens": n_prompt + n_gen}}

    def tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.tokenizer_api == "llama.cpp":  # tools/server/README.md: content -> tokens
            ids = self.text_ids(body["content"], body.get("add_special", False)) \
                if "content" in body else []
            return {"tokens": ids}
        if "messages" in body:
            if body.get("continue_final_message") and body.get("add_generation_prompt", True):
                raise ValueError("Cannot set both `continue_final_message` and "
                                 "`add_generation_prompt` to True.")
            ids = self.chat_ids(body["messages"], body.get("add_generation_prompt", True),
                                bool(body.get("continue_final_message")))
        else:
            ids = self.text_ids(body["prompt"], body.get("add_special_tokens", True))
        return {"count": len(ids), "max_model_len": self.n_ctx, "tokens": ids,
                "token_strs": [self.piece(t) for t in ids] if body.get("return_token_strs")
                else None}

    def detokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        ids = [int(t) for t in body["tokens"]]
        text = self.llm.detokenize(ids).decode("utf-8", errors="replace")
        return {"content": text} if self.tokenizer_api == "llama.cpp" else {"prompt": text}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _send(self, status: int, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str) -> None:
        self._send(status, {"error": {"message": message, "type": "BadRequestError",
                                      "param": None, "code": status}})

    def do_GET(self) -> None:  # noqa: N802
        owner: VLLMLikeServer = self.server.owner  # type: ignore[attr-defined]
        if self.path.rstrip("/") == "/v1/models":
            self._send(200, owner.models())
        elif self.path.rstrip("/") == "/metrics":
            data = owner.metrics().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        else:
            self._error(404, "Not Found")

    def do_POST(self) -> None:  # noqa: N802
        owner: VLLMLikeServer = self.server.owner  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        owner.requests.append((self.path, body))
        if owner._faults and owner._faults[0][1] in (None, self.path):
            status, _ = owner._faults.popleft()
            self._error(status, f"injected HTTP {status}")
            return
        routes = {"/v1/completions": owner.completions, "/tokenize": owner.tokenize,
                  "/detokenize": owner.detokenize}
        handler = routes.get(self.path)
        if handler is None or (owner.tokenizer_api == "none"
                               and self.path != "/v1/completions"):
            self._error(404, "Not Found")
            return
        try:
            answer = handler(body)
        except (ValueError, KeyError, TypeError) as exc:
            self._error(400, str(exc))
            return
        self._send(200, answer)
