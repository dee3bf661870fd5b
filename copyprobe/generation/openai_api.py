"""The OpenAI API backend: the official API or any OpenAI-compatible server (vLLM, llama.cpp
server, LiteLLM, ...), over HTTP (httpx2 for single calls, aiohttp for concurrent ones).

Reference: docs/backends.md (and docs/benchmarks.md for the figures).
"""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import socket
import ssl
import threading
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlsplit

import aiohttp
import httpcore2
import httpx2

from copyprobe import __version__ as _copyprobe_version
from copyprobe.generation.base import Backend, BackendError, Completion, Decoding
from copyprobe.generation.limits import default_request_timeout
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
    redact,
    shorten,
)
from copyprobe.generation.logprob_scoring import (
    ScoreRequest,
    ScoringBackend,
    TokenScores,
    score_sequence,
)
from copyprobe.models import ModelFile
from copyprobe.prompt import Prompt

log = logging.getLogger(__name__)

#: what a request through httpx2 can raise besides an HTTP status (mapped by _transport_error)
_TRANSPORT_ERRORS = (httpx2.TransportError, httpx2.InvalidURL)


def _openai_version() -> str:
    """The installed openai SDK's version, which enters the identity (so the cache keys of
    answers stored before the HTTP stack changed stay as they were)."""
    from importlib.metadata import version

    return version("openai")

__all__ = ["OpenAIBackend", "ServerTokenizer", "server_root"]

Endpoint = Literal["chat", "completions"]
_INVALID = object()


def _certificate_error(exc: BaseException) -> ssl.SSLCertVerificationError | None:
    """The certificate verification failure behind ``exc`` (its cause or context chain, or
    aiohttp's ``certificate_error``), if any."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, ssl.SSLCertVerificationError):
            return e
        todo += [e.__cause__, e.__context__, getattr(e, "certificate_error", None)]
    return None


def _env_proxy(url: str) -> str | None:
    """The proxy the environment (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``) names for
    ``url``, or None."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    if parts.hostname and urllib.request.proxy_bypass_environment(parts.hostname, proxies):
        return None
    return proxies.get(parts.scheme.lower())




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
        self._lock = threading.Lock()
        self._client: httpx2.Client | None = None
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

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
            "openai": _openai_version(),
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

    # -- clients -----------------------------------------------------------------------------
    def _sync_client(self) -> httpx2.Client:
        """httpx2 (the guard proxy's and the openai SDK's stack): TLS from its trust store
        (``SSL_CERT_FILE`` / ``SSL_CERT_DIR``, else the system's), ``HTTP(S)_PROXY`` /
        ``NO_PROXY`` from the environment."""
        with self._lock:
            if self._client is None:
                self._client = httpx2.Client(
                    base_url=self._client_base_url,
                    timeout=httpx2.Timeout(self.request_timeout,
                                           connect=min(10.0, self.request_timeout)),
                    headers=self._headers())
            return self._client

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}",
                "User-Agent": f"copyprobe/{_copyprobe_version}"}

    def _async_session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session_loop is not loop or self._session.closed:
            # connections of a session made in another (finished) loop cannot be reused.
            # TLS: httpx2's trust store, so both paths accept the same certificates
            # (loading it costs ~60 ms, so only for https; True: aiohttp's default context,
            # should a redirect lead to https)
            tls: ssl.SSLContext | bool = (
                httpcore2.default_ssl_context()
                if urlsplit(self._client_base_url).scheme.lower() == "https" else True)
            self._session = aiohttp.ClientSession(
                headers=self._headers(),
                timeout=aiohttp.ClientTimeout(total=None,
                                              connect=min(10.0, self.request_timeout),
                                              sock_read=self.request_timeout),
                # no pool limit: the runner bounds the requests in flight
                connector=aiohttp.TCPConnector(limit=0, ssl=tls),
                # HTTP(S)_PROXY / NO_PROXY as httpx2 honours them, read once here:
                # aiohttp's trust_env would look them up in a thread for every request
                proxy=_env_proxy(self._client_base_url))
            self._session_loop = loop
        return self._session

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

    def _unreachable(self, where: str, cause: str, exc: BaseException) -> BackendError:
        detail = shorten(redact(f"{type(exc).__name__}: {exc}", self._api_key))
        return BackendError(f"{where}: cannot connect: {cause} ({detail})",
                            error_class="ConnectionError", unreachable=True)

    def _tls_error(self, cert_error: ssl.SSLCertVerificationError, where: str) -> BackendError:
        inner = getattr(cert_error, "certificate_error", cert_error)  # aiohttp wraps it
        detail = shorten(redact(str(getattr(inner, "verify_message", None) or inner),
                                 self._api_key))
        return BackendError(f"{where}: the server's TLS certificate is not "
                            f"trusted ({detail}); if it is signed by a private CA, set "
                            "SSL_CERT_FILE to that CA's bundle", permanent=True,
                            error_class="TLSError")

    def _connect_failure(self, exc: BaseException) -> str | None:
        """Why no connection could be made, in words, when ``exc`` (or an exception in its
        chain) says so; None when a connection was made (or it is not known)."""
        chain: list[BaseException] = []
        todo: list[BaseException | None] = [exc]
        while todo:
            e = todo.pop()
            if e is None or any(e is seen for seen in chain):
                continue
            chain.append(e)
            todo += [e.__cause__, e.__context__, getattr(e, "os_error", None)]
        errnos = {getattr(e, "errno", None) for e in chain}
        if any(isinstance(e, ConnectionRefusedError) for e in chain) or \
                errno.ECONNREFUSED in errnos:
            return "connection refused"
        if any(isinstance(e, aiohttp.ClientConnectorDNSError | socket.gaierror) for e in chain):
            return "host name not found"
        if errnos & {errno.EHOSTUNREACH, errno.ENETUNREACH}:
            return "no route to host"
        if any(isinstance(e, aiohttp.ConnectionTimeoutError | httpx2.ConnectTimeout)
               for e in chain):
            return f"no connection within {min(10.0, self.request_timeout):g} s"
        for e in chain:
            if isinstance(e, aiohttp.ClientConnectorError | httpx2.ConnectError):
                return str(getattr(e, "strerror", None) or e)
        return None

    def _map_aiohttp_error(self, exc: BaseException, endpoint: Endpoint) -> BackendError:
        where = self._where(endpoint)
        if (cert_error := _certificate_error(exc)) is not None:
            return self._tls_error(cert_error, self._where(endpoint))
        if (cause := self._connect_failure(exc)) is not None:
            return self._unreachable(where, cause, exc)
        if isinstance(exc, TimeoutError):  # aiohttp's read timeouts
            return BackendError(f"{where}: no answer within {self.request_timeout:g} s",
                                error_class="Timeout")
        detail = shorten(redact(f"{type(exc).__name__}: {exc}", self._api_key))
        if isinstance(exc, aiohttp.InvalidURL):
            return BackendError(f"{where}: invalid URL ({detail})", permanent=True,
                                error_class="ConfigError")
        # refused, reset, dropped or truncated answers, unreadable HTTP
        return BackendError(f"{where}: connection failed ({detail})",
                            error_class="ConnectionError")

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

    def _answer(self, endpoint: Endpoint, response: httpx2.Response | None,
                error: BackendError | None) -> Completion:
        if error is None and response is not None and not 200 <= response.status_code < 300:
            error = map_status_error(response.status_code, json_or_text(response.content),
                                     response.headers, key=self._api_key,
                                     where=self._where(endpoint))
        if error is not None:
            # raised outside the except block: no __context__ pointing at the transport's
            # exception, whose request object carries the Authorization header
            log.debug("%s", error)
            raise error
        assert response is not None
        return self._parse(endpoint, response.status_code, response.content, response.headers)

    def generate(self, prompt: Prompt, decoding: Decoding, sample_index: int = 0) -> Completion:
        endpoint, body = self._body(prompt, decoding, sample_index)
        response, error = None, None
        try:
            response = self._sync_client().post(self._url(endpoint), json=body)
        except _TRANSPORT_ERRORS as exc:
            error = self._transport_error(exc, self._where(endpoint))
        return self._answer(endpoint, response, error)

    async def agenerate(self, prompt: Prompt, decoding: Decoding,
                        sample_index: int = 0) -> Completion:
        """The concurrent path: the same JSON body as :meth:`generate`, posted with aiohttp
        (see the module notes). Errors are mapped from the status and body exactly as for the
        synchronous path."""
        endpoint, body = self._body(prompt, decoding, sample_index)
        session = self._async_session()
        error: BackendError | None = None
        try:
            async with session.post(self._url(endpoint), json=body) as response:
                content = await response.read()
                status, headers = response.status, response.headers
        except (TimeoutError, aiohttp.ClientError) as exc:
            error = self._map_aiohttp_error(exc, endpoint)
        if error is None and not 200 <= status < 300:
            error = map_status_error(status, json_or_text(content), headers,
                                     key=self._api_key, where=self._where(endpoint))
        if error is not None:
            log.debug("%s", error)
            raise error
        return self._parse(endpoint, status, content, headers)

    # -- scoring (echo + prompt log-probs) ------------------------------------------------------
    @classmethod
    def tokenizer_from_config(cls, spec: Mapping[str, Any],
                              model_file: ModelFile | None) -> ServerTokenizer:
        """The served model's tokenizer, through the server's ``/tokenize`` and
        ``/detokenize`` (see :class:`ServerTokenizer`); close it when done."""
        return cls.from_config(spec, model_file).server_tokenizer()

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
        error: BackendError | None = None
        try:
            response = self._sync_client().post(url, json=dict(body))
        except _TRANSPORT_ERRORS as exc:
            error = self._transport_error(exc, where)
        if error is None and not 200 <= response.status_code < 300:
            error = map_status_error(response.status_code, json_or_text(response.content),
                                     response.headers, key=self._api_key, where=where)
        if error is not None:
            log.debug("%s", error)
            raise error
        obj = json_or_text(response.content)
        if not isinstance(obj, dict):
            raise BackendError(f"{where}: HTTP {response.status_code} answer is not a JSON "
                               "object", error_class="MalformedResponse",
                               status_code=response.status_code)
        return obj

    def _transport_error(self, exc: BaseException, where: str) -> BackendError:
        if (cert_error := _certificate_error(exc)) is not None:
            return self._tls_error(cert_error, where)
        if (cause := self._connect_failure(exc)) is not None:
            return self._unreachable(where, cause, exc)
        if isinstance(exc, httpx2.TimeoutException):
            return BackendError(f"{where}: no answer within {self.request_timeout:g} s",
                                error_class="Timeout")
        detail = shorten(redact(f"{type(exc).__name__}: {exc}", self._api_key))
        if isinstance(exc, httpx2.InvalidURL | httpx2.UnsupportedProtocol):
            return BackendError(f"{where}: invalid URL ({detail})", permanent=True,
                                error_class="ConfigError")
        # refused, reset, dropped or truncated answers, unreadable HTTP
        return BackendError(f"{where}: connection failed ({detail})",
                            error_class="ConnectionError")

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
        (see the module notes); needs ``echo_logprobs: true``."""
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
        """Close the aiohttp session (call from the loop that used it)."""
        session, self._session, self._session_loop = self._session, None, None
        if session is not None:
            await session.close()

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            client.close()
        session, loop = self._session, self._session_loop
        self._session = self._session_loop = None
        if session is None or loop is None or session.closed:
            return
        if loop.is_closed():
            # its loop is gone, so the session cannot be closed by awaiting; let it go
            # (aiohttp warns about its connector when it is collected)
            session.detach()
        elif loop.is_running():
            loop.call_soon_threadsafe(lambda: loop.create_task(session.close()))
        else:
            loop.run_until_complete(session.close())


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
