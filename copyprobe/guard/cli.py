"""The guard's commands, a group of its own: ``copyprobe guard <command>``.

Reference: docs/guard.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def read_queries(path: str) -> list[tuple[str, str | None]]:
    """``(query, label)`` pairs from a file: a JSON file in the released seeds format
    ``{task: [query, ...]}`` (label: the task, released names mapped to ours) or a JSON list of
    strings; any other file (``-``: standard input) holds one query per non-blank line."""
    from copyprobe.copyright.queries import TASK_ALIASES

    if path == "-":
        text, where = sys.stdin.read(), "standard input"
    else:
        where = path
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise SystemExit(f"copyprobe: {path}: cannot read queries ({exc.strerror})") from None
    if path.endswith(".json"):
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"copyprobe: {where}: not JSON ({exc})") from None
        if isinstance(raw, list) and all(isinstance(q, str) for q in raw):
            return [(q, None) for q in raw]
        if isinstance(raw, dict) and all(isinstance(v, list) and all(isinstance(q, str) for q in v)
                                         for v in raw.values()):
            return [(q, TASK_ALIASES.get(t, t)) for t, qs in raw.items() for q in qs]
        raise SystemExit(f"copyprobe: {where}: expected a list of queries or "
                         "{task: [query, ...]}")
    return [(line.strip(), None) for line in text.splitlines() if line.strip()]


def _model_entry(path: str) -> dict[str, Any]:
    import yaml

    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SystemExit(f"copyprobe: {path}: cannot read model config ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise SystemExit(f"copyprobe: {path}: not YAML or JSON ({exc})") from None
    if not isinstance(raw, dict) or "backend" not in raw:
        raise SystemExit(f"copyprobe: {path}: a model config is one model entry with a "
                         "'backend' (e.g. backend: openai, model_id, base_url, api_key_env)")
    return raw


def cmd_classify_query(args: argparse.Namespace) -> None:
    from copyprobe.guard.risk import risk_analyzer

    if args.file and args.text:
        raise SystemExit("copyprobe: give queries as TEXT or with --file, not both")
    pairs = read_queries(args.file) if args.file else [(t, None) for t in args.text]
    if not pairs:
        raise SystemExit("copyprobe: no query: give TEXT or --file FILE")
    blank = [i for i, (q, _) in enumerate(pairs, start=1) if not q.strip()]
    if blank:
        raise SystemExit(f"copyprobe: query {blank[0]} is empty")
    spec: dict[str, Any] = {"analyzer": args.analyzer}
    if args.analyzer == "llm":
        if not args.model_config:
            raise SystemExit("copyprobe: --analyzer llm needs --model-config FILE")
        spec.update(model=_model_entry(args.model_config), cache_dir=args.cache_dir)
    elif args.model_config:
        raise SystemExit("copyprobe: --model-config applies to --analyzer llm")
    analyzer = risk_analyzer(spec)
    findings = analyzer.classify_many([q for q, _ in pairs])
    for (query, label), f in zip(pairs, findings, strict=True):
        row: dict[str, Any] = {"query": query, "risk": f.risk, "task": f.task,
                               "component": f.component, "score": f.score}
        if label is not None:
            row["label"] = label
        row["detail"] = f.detail
        sys.stdout.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
    sys.stdout.flush()


def add_commands(sub: argparse._SubParsersAction) -> None:
    from copyprobe.guard.risk import RISK_ANALYZERS

    g = sub.add_parser("guard", help="the copyright guard's commands (classify-query, serve)",
                       description="The copyright guard: check requests before a model "
                                   "answers them.")
    group = g.add_subparsers(dest="guard_command", required=True, metavar="COMMAND",
                             title="guard commands")
    c = group.add_parser("classify-query",
                         help="classify requests as infringing or benign, with their task",
                         description="Classify each query: which task it asks for "
                                     "(repetition, extraction, paraphrase, translation, "
                                     "summary, author, comment, background, other) and its "
                                     "risk (infringing or benign). Prints one JSON object per "
                                     "query (JSON lines) with query, risk, task, component "
                                     "(rules, embedding or llm), score and detail.")
    c.add_argument("text", nargs="*", metavar="TEXT",
                   help="the queries, one per argument (quote each)")
    c.add_argument("--file", help="queries: one per line, a JSON list, or a seeds.json "
                                  "{task: [query, ...]} (its task is printed as 'label'); "
                                  "'-' reads standard input")
    c.add_argument("--analyzer", default="rules", choices=RISK_ANALYZERS.names(),
                   help="rules: offline rules with an embedding fallback; llm: a chat model "
                        "(needs --model-config), falling back to rules")
    c.add_argument("--model-config", help="with --analyzer llm: a YAML or JSON file holding "
                                          "one model entry (backend, model_file or model_id/"
                                          "base_url, api_key_env, decoding)")
    c.add_argument("--cache-dir", default=".cache/copyprobe",
                   help="where the llm analyzer's model calls are cached")
    c.set_defaults(func=cmd_classify_query)
    add_serve(group)


def cmd_serve(args: argparse.Namespace) -> dict[str, Any]:
    import json
    import os
    import signal

    from copyprobe.guard.serve import ProxySettings, configure_logging, load_guard_config, log, run

    block = load_guard_config(args.config) if args.config else {}
    settings = ProxySettings(
        upstream=args.upstream, guard=block, host=args.host, port=args.port,
        max_body_bytes=args.max_body_bytes, upstream_key_env=args.upstream_key_env,
        upstream_timeout=args.upstream_timeout, client_timeout=args.client_timeout,
        log_prompts=args.log_prompts, speculative=args.speculative, cache_dir=args.cache_dir,
        span_index=args.span_index, workers=args.workers, index_reload=args.index_reload)
    configure_logging()

    def started(host: str, port: int, digest: str) -> None:
        log.info(json.dumps({"event": "start", "url": f"http://{host}:{port}/v1",
                             "upstream": settings.upstream, "guard": digest,
                             "upstream_key_env": settings.upstream_key_env,
                             "upstream_key_set": bool(os.environ.get(settings.upstream_key_env)),
                             "log_prompts": settings.log_prompts,
                             "speculative": settings.speculative, "workers": settings.workers,
                             "span_index": settings.span_index,
                             "index_reload": settings.index_reload}))

    # uvicorn handles SIGINT/SIGTERM and raises them again once it has stopped: then they
    # only end this function
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    try:
        served = run(settings, started)
    except KeyboardInterrupt:
        served = None
    log.info(json.dumps({"event": "stop", "requests": served}))
    return {"stopped": True, "requests": served}


def add_serve(sub: argparse._SubParsersAction) -> None:
    """``guard serve``: the OpenAI-compatible proxy (copyprobe.guard.serve)."""
    from copyprobe.cli_help import HelpFormatter  # every option's help shows its default
    from copyprobe.guard.serve import DEFAULT_MAX_BODY
    from copyprobe.guard.served_index import RELOAD_MODES

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
    s.add_argument("--workers", type=int, default=1,
                   help="worker processes serving requests (each with its own guard and "
                        "upstream connections; the checks and the relay use one core each)")
    s.add_argument("--index-reload", choices=RELOAD_MODES, default="reload",
                   help="a --span-index folder rebuilt under the running proxy: serve the new "
                        "build from the next request on (reload), or keep serving the one "
                        "opened at start (keep; /health then reports it degraded)")
    s.add_argument("--span-index", metavar="DIR",
                   help="the protected materials' span index (copyprobe index build ... --out "
                        "DIR): answers are checked against it, with the config's 'output' "
                        "settings (min_words, action) or their defaults (12 words, block); "
                        "off when not given")
    s.set_defaults(func=cmd_serve)
