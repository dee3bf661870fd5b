"""``copyprobe guard serve``: the guard as an OpenAI-compatible HTTP proxy.

:func:`make_server` (one process, e.g. in a test's thread) and :func:`run` (``--workers N``
processes, each building its app with :func:`app_from_env`) serve the ASGI application of
:mod:`copyprobe.guard.proxy_app` with uvicorn; settings and request validation are in
:mod:`copyprobe.guard.proxy_request`. Routes, limits, errors, headers, logs and measurements:
docs/guard.md ("copyprobe guard serve").
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from copyprobe.guard.proxy_request import (DEFAULT_MAX_BODY, SETTINGS_ENV, ProxySettings,
                                           log)

__all__ = ["DEFAULT_MAX_BODY", "ProxyServer", "ProxySettings", "app_from_env",
           "configure_logging", "load_guard_config", "make_server", "run"]


# -- serving ----------------------------------------------------------------------------------

def configure_logging() -> None:
    """The request log as JSON lines on stderr (the command's and each worker's)."""
    if any(getattr(h, "copyguard", False) for h in log.handlers):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    handler.copyguard = True  # type: ignore[attr-defined]
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


def _uvicorn_config(app: Any, settings: ProxySettings, **kw: Any) -> Any:
    import uvicorn

    # uvicorn's own logging stays off (log_config=None: warnings only): the proxy logs one
    # JSON line per request itself
    return uvicorn.Config(app, host=settings.host, port=settings.port, log_config=None,
                          access_log=False, server_header=False, lifespan="on",
                          timeout_keep_alive=settings.client_timeout, backlog=2048,
                          timeout_graceful_shutdown=5, **kw)


class ProxyServer:
    """The proxy bound to ``settings.host:port`` (port 0: a free one, in ``server_address``)
    and served by uvicorn in this process: :meth:`serve_forever` (a thread of its own, or the
    main thread, which then stops on SIGINT/SIGTERM), :meth:`shutdown`, :meth:`server_close`.
    Building it builds the guard: a component that cannot be built stops it here."""

    def __init__(self, settings: ProxySettings, guard: Any = None) -> None:
        import uvicorn

        from copyprobe.guard.proxy_app import Proxy

        self.proxy = Proxy(settings, guard)
        config = _uvicorn_config(self.proxy.app, settings)
        self.socket = config.bind_socket()
        self.socket.listen(config.backlog)  # clients connect (and wait) from now on
        self.server_address = self.socket.getsockname()[:2]
        self.server = uvicorn.Server(config)
        self._running = threading.Event()
        self._stopped = threading.Event()

    @property
    def guard(self) -> Any:
        return self.proxy.guard

    @property
    def requests_served(self) -> int:
        return self.proxy.requests_served

    def serve_forever(self, poll_interval: float | None = None) -> None:
        self._running.set()
        try:
            self.server.run(sockets=[self.socket])
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        self.server.should_exit = True
        if self._running.is_set():
            self._stopped.wait(30)

    def server_close(self) -> None:
        self.socket.close()
        self.proxy.close()


def make_server(settings: ProxySettings, guard: Any = None) -> ProxyServer:
    """A bound proxy in this process (``guard``: one built by the caller, with components of
    its own); call ``serve_forever()`` to serve."""
    return ProxyServer(settings, guard)


def app_from_env() -> Any:
    """The ASGI application of a worker process, from the settings in :data:`SETTINGS_ENV`
    (uvicorn's factory for ``--workers`` > 1)."""
    from copyprobe.guard.proxy_app import Proxy

    configure_logging()
    raw = json.loads(os.environ[SETTINGS_ENV])
    return Proxy(ProxySettings(**raw)).app


def run(settings: ProxySettings, started: Callable[[str, int, str], None]) -> int | None:
    """Serve until SIGINT/SIGTERM; ``started(host, port, guard_digest)`` once listening.
    The requests served (None with several workers: each counts its own in its log)."""
    if settings.workers == 1:
        server = ProxyServer(settings)
        try:
            started(*server.server_address, server.guard.digest)
            server.serve_forever()
        finally:
            server.server_close()
        return server.requests_served
    from uvicorn.supervisors import Multiprocess

    from copyprobe.guard.proxy_app import Proxy

    probe = Proxy(settings)  # a component that cannot be built stops the command here
    digest = probe.guard.digest
    probe.close()
    os.environ[SETTINGS_ENV] = settings.to_json()
    config = _uvicorn_config("copyprobe.guard.serve:app_from_env", settings, factory=True,
                             workers=settings.workers)
    sock = config.bind_socket()
    sock.listen(config.backlog)
    try:
        started(*sock.getsockname()[:2], digest)
        Multiprocess(config, sockets=[sock]).run()
    finally:
        sock.close()
    return None


def load_guard_config(path: str | Path) -> dict[str, Any]:
    """The guard block of a YAML file: its ``guard:`` mapping, or the whole file."""
    import yaml

    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{p}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{p}: not valid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{p}: expected a mapping (the guard block), got {type(data).__name__}")
    block = data.get("guard", data)
    if not isinstance(block, dict):
        raise ValueError(f"{p}: 'guard' must be a mapping")
    return block
