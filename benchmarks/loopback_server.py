"""A minimal asyncio OpenAI-compatible server for throughput benchmarks: every POST to
``/v1/chat/completions`` or ``/v1/completions`` is answered with a fixed, valid response after
a fixed latency. No threads, minimal parsing, so that the client is what gets measured.

A request with ``"stream": true`` is answered with server-sent events (chunked): a role
chunk, the answer in deltas of ``--chunk-chars`` characters (``--chunk-delay`` seconds apart),
a chunk with ``finish_reason: "stop"``, then ``data: [DONE]`` (and, ``--tail-delay`` seconds
later, the chunked body's terminator: what a server that ends its stream late sends).
``--answer`` (or ``--answer-file``) sets the answer text of both kinds (default ``"echo"``).

    python benchmarks/loopback_server.py --latency 0.2     (prints the base URL)
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path

BASE = {"id": "chatcmpl-bench", "created": 0, "model": "bench-model"}


def response(answer: str) -> bytes:
    body = json.dumps({
        **BASE, "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                     "text": answer, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": len(answer.split()),
                  "total_tokens": 10 + len(answer.split())},
    }).encode()
    return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)


def _event(delta: dict, finish: str | None = None) -> bytes:
    data = b"data: " + json.dumps({**BASE, "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": delta, "finish_reason": finish}]}).encode() + b"\n\n"
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def stream_chunks(answer: str, chunk_chars: int) -> list[bytes]:
    """The chunked-encoding pieces of a streamed answer (headers first)."""
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    parts = [head + _event({"role": "assistant", "content": ""})]
    parts += [_event({"content": answer[i:i + chunk_chars]})
              for i in range(0, len(answer), chunk_chars)]
    done = b"data: [DONE]\n\n"
    parts.append(_event({}, "stop") + f"{len(done):x}\r\n".encode() + done + b"\r\n0\r\n\r\n")
    return parts


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 latency: float, answer: str, chunk_chars: int, chunk_delay: float,
                 tail_delay: float = 0.0) -> None:
    plain = response(answer)
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length) if length else b""
            await asyncio.sleep(latency)
            if b'"stream"' in body and json.loads(body).get("stream"):
                parts = stream_chunks(answer, chunk_chars)
                if tail_delay:  # the terminator (b"0\r\n\r\n") on its own, later
                    parts[-1:] = [parts[-1][:-5], None, parts[-1][-5:]]
                for part in parts:
                    if part is None:
                        await asyncio.sleep(tail_delay)
                        continue
                    writer.write(part)
                    await writer.drain()
                    if chunk_delay:
                        await asyncio.sleep(chunk_delay)
            else:
                writer.write(plain)
                await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(latency: float, port: int, answer: str = "echo", chunk_chars: int = 4,
               chunk_delay: float = 0.0, tail_delay: float = 0.0) -> None:
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, latency, answer, chunk_chars, chunk_delay, tail_delay),
        "127.0.0.1", port)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--answer", default="echo", help="the answer text")
    ap.add_argument("--answer-file", help="a UTF-8 file holding the answer text")
    ap.add_argument("--chunk-chars", type=int, default=4,
                    help="characters per streamed delta")
    ap.add_argument("--chunk-delay", type=float, default=0.0,
                    help="seconds between streamed deltas")
    ap.add_argument("--tail-delay", type=float, default=0.0,
                    help="seconds between a stream's [DONE] and the end of its body")
    args = ap.parse_args()
    text = (Path(args.answer_file).read_text(encoding="utf-8") if args.answer_file
            else args.answer)
    asyncio.run(main(args.latency, args.port, text, args.chunk_chars, args.chunk_delay,
                     args.tail_delay))
