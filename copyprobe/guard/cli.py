"""The guard's commands, a group of their own: ``copyprobe guard <command>``.

    copyprobe guard serve --upstream URL [--config guard.yaml] [--host H] [--port P]
"""

from __future__ import annotations

import argparse
from typing import Any


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add the ``guard`` group to the top-level subparsers."""
    g = sub.add_parser("guard", help="the copyright guard (CopyGuard): serve it as a proxy",
                       description="The copyright guard's commands.")
    gsub = g.add_subparsers(dest="guard_command", required=True, metavar="COMMAND",
                            title="commands")
    add_serve(gsub)


def cmd_serve(args: argparse.Namespace) -> dict[str, Any]:
    import json
    import logging
    import os
    import signal
    import sys

    from copyprobe.guard.serve import ProxySettings, load_guard_config, make_server

    block = load_guard_config(args.config) if args.config else {}
    settings = ProxySettings(
        upstream=args.upstream, guard=block, host=args.host, port=args.port,
        max_body_bytes=args.max_body_bytes, upstream_key_env=args.upstream_key_env,
        upstream_timeout=args.upstream_timeout, client_timeout=args.client_timeout,
        log_prompts=args.log_prompts,
        speculative=args.speculative, cache_dir=args.cache_dir)
    logger = logging.getLogger("copyprobe.guard.serve")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    server = make_server(settings)
    host, port = server.server_address[:2]
    logger.info(json.dumps({"event": "start", "url": f"http://{host}:{port}/v1",
                            "upstream": settings.upstream, "guard": server.guard.digest,
                            "upstream_key_env": settings.upstream_key_env,
                            "upstream_key_set": bool(os.environ.get(settings.upstream_key_env)),
                            "log_prompts": settings.log_prompts,
                            "speculative": settings.speculative}))

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    logger.info(json.dumps({"event": "stop", "requests": server.requests_served}))
    return {"stopped": True, "requests": server.requests_served}


def add_serve(sub: argparse._SubParsersAction) -> None:
    """``guard serve``: the OpenAI-compatible proxy (copyprobe.guard.serve)."""
    from copyprobe.cli import HelpFormatter  # every option's help shows its default
    from copyprobe.guard.serve import DEFAULT_MAX_BODY

    s = sub.add_parser(
        "serve", formatter_class=HelpFormatter,
        help="an OpenAI-compatible proxy that applies the guard in front of a model",
        description="Serve POST /v1/chat/completions (streaming and not, text and image parts) "
                    "in front of any OpenAI-compatible upstream: every request is checked by "
                    "the guard and forwarded as is, with the reminder, or blocked. GET /health "
                    "reports the guard; logs are JSON lines on stderr.")
    s.add_argument("--upstream", required=True,
                   help="the upstream's base URL, e.g. http://127.0.0.1:8080/v1")
    s.add_argument("--config", help="a YAML file with the guard block (a 'guard:' mapping or "
                                    "the block itself); default: every check with defaults")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on")
    s.add_argument("--port", type=int, default=8000, help="port to listen on (0: a free one)")
    s.add_argument("--upstream-key-env", default="OPENAI_API_KEY",
                   help="NAME of the environment variable holding the upstream's API key "
                        "(unset: no key is sent)")
    s.add_argument("--upstream-timeout", type=float, default=300.0,
                   help="seconds to wait for the upstream's answer")
    s.add_argument("--client-timeout", type=float, default=120.0,
                   help="seconds a client may stay silent (idle keep-alive, a stalled body) "
                        "before its connection is closed")
    s.add_argument("--max-body-bytes", type=int, default=DEFAULT_MAX_BODY,
                   help="larger request bodies get 413")
    s.add_argument("--log-prompts", action="store_true",
                   help="include the request's messages in the log (off: never logged)")
    s.add_argument("--speculative", action="store_true",
                   help="send non-streaming requests upstream while the checks run; used "
                        "as is on pass, discarded on remind")
    s.add_argument("--cache-dir", default=".cache/copyprobe/guard",
                   help="where the checks cache OCR, search and verdicts")
    s.set_defaults(func=cmd_serve)
