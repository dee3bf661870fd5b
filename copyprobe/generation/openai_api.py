"""The OpenAI API backend: the official API or any OpenAI-compatible server (vLLM, llama.cpp
server, LiteLLM, ...), over the one HTTP stack of model-server calls (server_http).

Reference: docs/backends.md (and docs/benchmarks.md for the figures).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

from copyprobe import __version__ as _copyprobe_version
from copyprobe.generation.base import Backend, BackendError, Completion, Decoding
from copyprobe.generation.limits import (
    REMOTE_CONCURRENCY,
    VLLM_MIN_MAX_NUM_SEQS,
    default_request_timeout,
    vllm_kv_capacity,
)
from copyprobe.generation.openai_protocol import (
    DEFAULT_BASE_URL,
    NO_PROMPT_LOGPROBS,
    json_or_text,
    map_status_error,
    normalize_base_url,
    prepare_messages,
    read_choice,
    read_echo_scores,
    read_key,
)
from copyprobe.generation.logprob_scoring import (
    ScoreRequest,
    ScoringBackend,
    TokenScores,
    score_sequence,
)
from copyprobe.generation.server_http import ServerClient
from copyprobe.models import ModelFile
from copyprobe.prompt import Prompt

log = logging.getLogger(__name__)

#: The ``openai`` entry of the identity: the openai SDK's version when copyprobe stopped
#: using the SDK, kept so the cache keys of stored answers stay as they were (docs/backends.md)
OPENAI_IDENTITY = "3.63.0"

__all__ = ["OpenAIBackend", "ServerTokenizer", "server_root"]

Endpoint = Literal["chat", "completions"]
_INVALID = object()


class OpenAIBackend(Backend, ScoringBackend):
    """One model behind the OpenAI API or an OpenAI-compatible server."""

    name = "openai"
    supports_async = True
    default_score_path = "server_echo"
    score_paths = ("server_echo",)
    #: prompts per scoring request (``prompt`` as a list of token-id lists)
    max_score_batch = 16

    def __init__(self, *, model_id: str, base_url: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", api_key_optional: bool = False,
                 request_timeout: float = 120.0, endpoint: str = "auto",
                 max_tokens_param: str = "max_tokens",
                 server_sampling_params: bool = False, echo_logprobs: bool = False) -> None:
        if not model_id:
            raise BackendError("the openai backend needs model_id", permanent=True,
                               error_class="ConfigError")
        if endpoint not in ("auto", "chat", "completions"):
            raise BackendError(f"endpoint must be auto, chat or completions, got {endpoint!r}",
                               permanent=True, error_class="ConfigError")
        if max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise BackendError("max_tokens_param must be max_tokens or max_completion_tokens",
                               permanent=True, error_class="ConfigError")
        if not request_timeout or request_timeout <= 0:
            raise BackendError("request_timeout must be positive", permanent=True,
                               error_class="ConfigError")
        self.model_id = model_id
        self.base_url = normalize_base_url(base_url)  # safe to show (no userinfo / query)
        self._client_base_url = base_url or DEFAULT_BASE_URL
        self.api_key_env = api_key_env
        self.request_timeout = float(request_timeout)
        self.endpoint = endpoint
        self.max_tokens_param = max_tokens_param
        self.server_sampling_params = server_sampling_params
        self.echo_logprobs = echo_logprobs
        self._tokenizer: ServerTokenizer | None = None
        if base_url and "@" in urlsplit(base_url).netloc:  # user:password@host
            raise BackendError(f"base_url {self.base_url} carries credentials (user:password@); "
                               f"put the key in the variable named by api_key_env instead",
                               permanent=True, error_class="ConfigError")
        self._api_key = read_key(api_key_env, api_key_optional, self.base_url)
        self._client = ServerClient(self._client_base_url, timeout=self.request_timeout,
                                    headers=self._headers(), key=self._key)

    def __repr__(self) -> str:
        return f"OpenAIBackend(model_id={self.model_id!r}, base_url={self.base_url!r})"

    # -- config ------------------------------------------------------------------------------
    @classmethod
    def identity_from_config(cls, spec: Mapping[str, Any],
                             model_file: ModelFile | None) -> dict[str, Any]:
        if not spec.get("model_id"):
            raise BackendError("the openai backend needs model_id", permanent=True,
                               error_class="ConfigError")
        identity = {
            "model_id": spec["model_id"],
            "base_url": normalize_base_url(spec.get("base_url")),
            "revision": spec.get("revision", ""),
            "openai": OPENAI_IDENTITY,
        }
        if spec.get("server_sampling_params"):
            identity["server_sampling_params"] = True
        return identity

    @classmethod
    def from_config(cls, spec: Mapping[str, Any], model_file: ModelFile | None) -> OpenAIBackend:
        return cls(model_id=spec.get("model_id", ""), base_url=spec.get("base_url"),
                   api_key_env=spec.get("api_key_env", "OPENAI_API_KEY"),
                   api_key_optional=bool(spec.get("api_key_optional", False)),
                   request_timeout=float(
                       spec["request_timeout"] if spec.get("request_timeout") is not None
                       else default_request_timeout(
                           int((spec.get("decoding") or {}).get("max_tokens") or 0))),
                   endpoint=spec.get("endpoint") or "auto",
                   max_tokens_param=spec.get("max_tokens_param", "max_tokens"),
                   server_sampling_params=bool(spec.get("server_sampling_params", False)),
                   echo_logprobs=bool(spec.get("echo_logprobs", False)))

    # -- client ------------------------------------------------------------------------------
    def _sync_client(self) -> ServerClient:
        """The server's HTTP client (server_http: aiohttp, TLS, proxies, timeouts)."""
        return self._client

    def _key(self) -> str:
        return self._api_key

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}",
                "User-Agent": f"copyprobe/{_copyprobe_version}"}

    def _url(self, endpoint: Endpoint) -> str:
        return (self._client_base_url.rstrip("/")
                + ("/chat/completions" if endpoint == "chat" else "/completions"))

    # -- requests ----------------------------------------------------------------------------
    def _endpoint_for(self, prompt: Prompt) -> Endpoint:
        wanted: Endpoint = "chat" if prompt.format == "chat" else "completions"
        if self.endpoint not in ("auto", wanted):
            raise BackendError(f"a {prompt.format} prompt cannot be sent to the "
                               f"{self.endpoint} endpoint", permanent=True,
                               error_class="ConfigError")
        return wanted

    def request_params(self, prompt: Prompt, decoding: Decoding,
                       sample_index: int = 0) -> tuple[Endpoint, dict[str, Any]]:
        """(endpoint, keyword arguments of ``create``) for one request."""
        endpoint = self._endpoint_for(prompt)
        params: dict[str, Any] = {
            "model": self.model_id,
            "temperature": decoding.temperature,
            "top_p": decoding.top_p,
            "seed": decoding.seed + sample_index,
        }
        extra: dict[str, Any] = {}
        if self.server_sampling_params:
            # llama.cpp's server defaults differ from its Python API (repeat_penalty 1.1,
            # top_k 40, min_p 0.05): pin them so both give the same greedy output.
            extra.update(top_k=decoding.top_k, repeat_penalty=decoding.repeat_penalty,
                         min_p=0.0)
        else:
            if decoding.top_k:
                extra["top_k"] = decoding.top_k
            if decoding.repeat_penalty != 1.0:
                extra["repeat_penalty"] = decoding.repeat_penalty
        if endpoint == "chat":
            params["messages"] = prepare_messages(prompt)
            params[self.max_tokens_param] = decoding.max_tokens
        else:
            params["prompt"] = prompt.text
            params["max_tokens"] = decoding.max_tokens
        if extra:
            params["extra_body"] = extra
        return endpoint, params

    def _where(self, endpoint: Endpoint) -> str:
        """The model and the endpoint's URL (normalised: no credentials, no query)."""
        path = "/chat/completions" if endpoint == "chat" else "/completions"
        return f"{self.model_id} at {self.base_url}{path}"

    def _parse(self, endpoint: Endpoint, status: int, content: bytes,
               headers: Mapping[str, str] | None = None) -> Completion:
        where = self._where(endpoint)

        def malformed(why: str) -> BackendError:
            return BackendError(f"{where}: HTTP {status} answer {why}",
                                error_class="MalformedResponse", status_code=status)

        try:
            obj: Any = json.loads(content)
        except (ValueError, UnicodeDecodeError):
            obj = _INVALID
        if obj is _INVALID:  # raised outside the except block: no chained decoder error
            raise malformed("is not valid JSON")
        if not isinstance(obj, dict):
            raise malformed("is not a JSON object")
        choices = obj.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            if isinstance(obj.get("error"), Mapping):
                mapped = map_status_error(400, obj, headers, key=self._api_key, where=where)
                if mapped.permanent and mapped.error_class != "BadRequestError":
                    mapped.status_code = status
                    raise mapped
                raise malformed(f"carries an error ({mapped})")
            raise malformed("has no choices")
        return read_choice(obj, chat=endpoint == "chat", where=where, status=status)

    def _body(self, prompt: Prompt, decoding: Decoding, sample_index: int) -> tuple[
            Endpoint, dict[str, Any]]:
        """(endpoint, JSON body): the parameters with ``extra_body`` merged in, as sent."""
        endpoint, params = self.request_params(prompt, decoding, sample_index)
        body = {k: v for k, v in params.items() if k != "extra_body"}
        body.update(params.get("extra_body") or {})
        return endpoint, body

    def generate(self, prompt: Prompt, decoding: Decoding, sample_index: int = 0) -> Completion:
        """One request, synchronously (on the client's private event loop)."""
        return self._client.run(self.agenerate(prompt, decoding, sample_index))

    async def agenerate(self, prompt: Prompt, decoding: Decoding,
                        sample_index: int = 0) -> Completion:
        """The JSON body of :meth:`request_params` posted to the endpoint; errors mapped from
        the transport (server_http) or the status and body (``map_status_error``)."""
        endpoint, body = self._body(prompt, decoding, sample_index)
        where = self._where(endpoint)
        try:
            answer = await self._client.request("POST", self._url(endpoint), json=body,
                                                where=where)
        except BackendError as exc:
            log.debug("%s", exc)
            raise
        return self._parse(endpoint, answer.status, answer.content, answer.headers)

    # -- scoring (echo + prompt log-probs) ------------------------------------------------------
    @classmethod
    def tokenizer_from_config(cls, spec: Mapping[str, Any],
                              model_file: ModelFile | None) -> ServerTokenizer:
        """The served model's tokenizer, through the server's ``/tokenize`` and
        ``/detokenize`` (see :class:`ServerTokenizer`); close it when done."""
        return cls.from_config(spec, model_file).server_tokenizer()

    @staticmethod
    def server_concurrency(base_url: str) -> tuple[int | None, str]:
        """What a server on this machine says it takes at once (:func:`server_concurrency`)."""
        return server_concurrency(base_url)

    def server_tokenizer(self) -> ServerTokenizer:
        if self._tokenizer is None:
            self._tokenizer = ServerTokenizer(self)
        return self._tokenizer

    def tokenize(self, text: str) -> list[int]:
        return self.server_tokenizer().tokenize(text)

    def detokenize(self, ids: Sequence[int]) -> str:
        return self.server_tokenizer().detokenize(ids)

    def post_json(self, url: str, body: Mapping[str, Any]) -> Any:
        """POST ``body`` to ``url`` (a URL of this server) and return the answer's JSON; errors
        are classified as for generation (``map_status_error``, transport errors)."""
        where = f"{self.model_id} at {normalize_base_url(url)}"
        try:
            answer = self._client.call("POST", url, json=dict(body), where=where)
        except BackendError as exc:
            log.debug("%s", exc)
            raise
        obj = json_or_text(answer.content)
        if not isinstance(obj, dict):
            raise BackendError(f"{where}: HTTP {answer.status} answer is not a JSON "
                               "object", error_class="MalformedResponse",
                               status_code=answer.status)
        return obj

    #: ``max_tokens`` of a scoring request: 0 (vLLM echoes the prompt only); 1 once a server
    #: has refused 0 with an HTTP 400 naming ``max_tokens``
    _echo_max_tokens = 0

    def _score_request(self, seqs: list[tuple[list[int], int]]) -> list[TokenScores | BackendError]:
        """One ``/v1/completions`` request scoring ``seqs`` (token-id prompts)."""
        url = self._url("completions")
        where = self._where("completions")
        body = {"model": self.model_id, "prompt": [ids for ids, _ in seqs], "echo": True,
                "logprobs": 1, "max_tokens": self._echo_max_tokens, "temperature": 0.0}
        try:
            try:
                answer = self.post_json(url, body)
            except BackendError as exc:
                if not (exc.status_code == 400 and body["max_tokens"] == 0
                        and "max_tokens" in str(exc)):
                    raise
                # a server that wants at least one new token: the extra entry is ignored
                self._echo_max_tokens = body["max_tokens"] = 1
                answer = self.post_json(url, body)
        except BackendError as exc:
            if exc.status_code == 400 and "echo" in str(exc).lower():
                # llama.cpp's server: "Only no echo is supported"
                exc = BackendError(f"{exc}; the server does not return prompt log-probs, "
                                   "which echo_logprobs: true needs", permanent=True,
                                   error_class=NO_PROMPT_LOGPROBS, status_code=400)
            return [exc] * len(seqs)
        choices = answer.get("choices")
        if not isinstance(choices, list) or len(choices) != len(seqs) or \
                not all(isinstance(c, dict) for c in choices):
            error = BackendError(f"{where}: answer has {len(choices or [])} choices for "
                                 f"{len(seqs)} prompts", error_class="MalformedResponse")
            return [error] * len(seqs)
        choices = sorted(choices, key=lambda c: c.get("index", 0))
        out: list[TokenScores | BackendError] = []
        for (ids, start), choice in zip(seqs, choices, strict=True):
            try:
                out.append(read_echo_scores(choice, ids, start, where=where))
            except BackendError as exc:
                out.append(exc)
        return out

    def score_batch(self, requests: Sequence[ScoreRequest], *,
                    path: str | None = None) -> list[TokenScores | BackendError]:
        """Score through the server's ``/v1/completions`` with ``echo`` and ``logprobs``
        (docs/backends.md, the `openai` backend); needs ``echo_logprobs: true``."""
        path = path or self.default_score_path
        if path not in self.score_paths:
            raise BackendError(f"the openai backend scores by path server_echo, not {path!r}",
                               permanent=True, error_class="ConfigError")
        if not self.echo_logprobs:
            raise BackendError(f"{self._where('completions')}: scoring needs a server that "
                               "returns the prompt's log-probs; set echo_logprobs: true for "
                               "one that does (vLLM's server)", permanent=True,
                               error_class="ConfigError")
        results: list[TokenScores | BackendError | None] = [None] * len(requests)
        todo: list[tuple[int, tuple[list[int], int]]] = []
        for i, request in enumerate(requests):
            try:
                todo.append((i, score_sequence(request, self.server_tokenizer())))
            except BackendError as exc:
                results[i] = exc
        if todo:
            outs = self._score_request([seq for _, seq in todo])
            if len(todo) > 1 and all(isinstance(o, BackendError) and o.permanent and
                                     o.error_class != NO_PROMPT_LOGPROBS for o in outs):
                # one bad prompt (too long) rejects the whole request: score one by one
                outs = [self._score_request([seq])[0] for _, seq in todo]
            for (i, _), out in zip(todo, outs, strict=True):
                results[i] = out
        return [r if r is not None else BackendError("no result", permanent=True)
                for r in results]

    # -- cleanup -----------------------------------------------------------------------------
    async def aclose(self) -> None:
        """Close the session of the running loop (call from the loop that used it)."""
        await self._client.aclose()

    def close(self) -> None:
        self._client.close()


def server_root(base_url: str) -> str:
    """The server's root URL, where vLLM serves ``/tokenize`` and ``/detokenize``: the base
    URL without a trailing ``/v1``."""
    url = base_url.rstrip("/")
    return url[:-3] if url.endswith("/v1") else url


class ServerTokenizer:
    """A served model's tokenizer through vLLM's ``POST /tokenize`` (``{"prompt": text,
    "add_special_tokens": bool}`` or ``{"messages": [...], "add_generation_prompt": bool,
    "continue_final_message": bool}`` -> ``{"tokens": [...], "count": n, ...}``) and ``POST
    /detokenize`` (``{"tokens": [...]}`` -> ``{"prompt": text}``), at the server's root (the
    base URL without ``/v1``). ``add_bos`` and ``bos_ids`` are read from the server: the tokens
    that ``add_special_tokens`` puts before a text's own.

    A server without these endpoints is a permanent ``TokenizerUnavailable`` naming what is
    expected: OpenAI's API has none; llama.cpp's server has ``/tokenize`` but takes
    ``content`` (it answers vLLM's ``prompt`` with no tokens) and its ``/detokenize`` answers
    ``content``."""

    def __init__(self, backend: OpenAIBackend) -> None:
        self._backend = backend
        self._root = server_root(backend._client_base_url)
        self._bos: list[int] | None = None

    def _post(self, path: str, body: dict[str, Any], key: str) -> Any:
        url = self._root + path
        try:
            answer = self._backend.post_json(url, {"model": self._backend.model_id, **body})
        except BackendError as exc:
            if exc.status_code in (404, 405, 501):
                raise self._unavailable(f"{path} answered HTTP {exc.status_code}") from None
            raise
        if key not in answer:
            raise self._unavailable(f"{path} answered without {key!r} (keys: "
                                    f"{sorted(answer)[:5]})")
        return answer[key]

    def _unavailable(self, why: str) -> BackendError:
        return BackendError(
            f"{self._backend.model_id} at {normalize_base_url(self._root)}: {why}; scoring "
            "through a server needs vLLM's /tokenize and /detokenize at the server's root "
            "(POST {prompt} -> {tokens}; llama.cpp's server takes {content} and OpenAI's API "
            "has none)", permanent=True, error_class="TokenizerUnavailable")

    def _ids(self, body: dict[str, Any], nonempty: bool) -> list[int]:
        ids = self._post("/tokenize", body, "tokens")
        if not isinstance(ids, list) or not all(isinstance(t, int) for t in ids):
            raise self._unavailable("/tokenize answered tokens that are not token ids")
        if nonempty and not ids:
            raise self._unavailable("/tokenize answered no tokens for a non-empty text")
        return ids

    def tokenize(self, text: str, *, special: bool = False) -> list[int]:
        """The ids of ``text``; ``special``: with the tokens the model's tokenizer adds (BOS)."""
        return self._ids({"prompt": text, "add_special_tokens": special}, bool(text))

    def tokenize_chat(self, messages: list[dict[str, Any]], *,
                      add_generation_prompt: bool = False,
                      continue_final_message: bool = False) -> list[int]:
        """The ids of ``messages`` under the served model's chat template."""
        return self._ids({"messages": messages, "add_generation_prompt": add_generation_prompt,
                          "continue_final_message": continue_final_message}, True)

    def detokenize(self, ids: Sequence[int]) -> str:
        text = self._post("/detokenize", {"tokens": list(ids)}, "prompt")
        if not isinstance(text, str):
            raise self._unavailable("/detokenize answered a prompt that is not text")
        return text

    @property
    def bos_ids(self) -> list[int]:
        if self._bos is None:
            probe = "Hello"
            plain = self.tokenize(probe)
            full = self.tokenize(probe, special=True)
            cut = len(full) - len(plain)
            self._bos = full[:cut] if cut > 0 and full[cut:] == plain else []
        return self._bos

    @property
    def add_bos(self) -> bool:  # type: ignore[override]
        return bool(self.bos_ids)

    def close(self) -> None:
        self._backend.close()


# -- the capacity of a server on this machine (limits.default_concurrency) ----------------
def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def _get(client: ServerClient, url: str) -> bytes:
    """GET a loopback URL (is_local_url) through ``client`` (no proxy, no credentials); a
    failure or a status outside 2xx is a BackendError."""
    return client.call("GET", url, where=url).content


def server_concurrency(base_url: str, timeout: float = 2.0) -> tuple[int | None, str]:
    """The requests a server on this machine takes at once, as it reports them, and how it
    says so: llama.cpp's ``GET /props`` ``total_slots``; for vLLM (``owned_by: "vllm"`` in
    ``GET /v1/models``) the full-length requests its KV cache holds (``vllm:cache_config_info``
    in ``/metrics`` over ``max_model_len``: vLLM's own "maximum concurrency"), at most
    :data:`VLLM_MIN_MAX_NUM_SEQS`, else 8. (None, why) for any other server. See
    docs/backends.md."""
    with ServerClient(base_url, timeout=timeout, connect_timeout=timeout,
                      proxy=False) as client:
        return _probe(client, base_url)


def _probe(client: ServerClient, base_url: str) -> tuple[int | None, str]:
    parts = urlsplit(base_url)
    root = f"{parts.scheme}://{parts.netloc}"
    try:
        slots = _positive_int(json.loads(_get(client, f"{root}/props")).get("total_slots"))
    except (BackendError, ValueError, AttributeError):
        slots = None
    if slots:
        return slots, f"llama.cpp's /props reports {slots} slot(s)"
    try:
        cards = json.loads(_get(client, f"{base_url.rstrip('/')}/models")).get("data") or []
        card = next(c for c in cards if isinstance(c, dict) and c.get("owned_by") == "vllm")
    except (BackendError, ValueError, AttributeError, StopIteration):
        return None, "it reports no slot count (llama.cpp's /props) and is not vLLM"
    max_len = _positive_int(card.get("max_model_len"))
    try:
        capacity = vllm_kv_capacity(_get(client, f"{root}/metrics").decode("utf-8", "replace"))
    except BackendError:
        capacity = None
    if not max_len or not capacity:  # vLLM batches at least 128 sequences by its defaults
        return REMOTE_CONCURRENCY, (f"vLLM, whose /metrics gives no KV cache size: "
                                    f"{REMOTE_CONCURRENCY}, below the {VLLM_MIN_MAX_NUM_SEQS} "
                                    "sequences it batches by default")
    n = max(1, min(VLLM_MIN_MAX_NUM_SEQS, capacity // max_len))
    return n, (f"vLLM's KV cache holds {capacity} tokens, {capacity // max_len} request(s) of "
               f"max_model_len {max_len}, capped at {VLLM_MIN_MAX_NUM_SEQS}")
