"""A minimal asyncio OpenAI-compatible server for throughput benchmarks: every POST to
``/v1/chat/completions`` or ``/v1/completions`` is answered with a fixed, valid response after
a fixed latency. No threads, minimal parsing, so that the client is what gets measured.

    python benchmarks/loopback_server.py --latency 0.2     (prints the base URL)
"""

from __future__ import annotations

import argparse
import asyncio
import json

BODY = json.dumps({
    "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": "bench-model",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "echo"},
                 "text": "echo", "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11},
}).encode()
RESPONSE = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(BODY)).encode() + b"\r\n\r\n" + BODY)


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 latency: float) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            if length:
                await reader.readexactly(length)
            await asyncio.sleep(latency)
            writer.write(RESPONSE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def main(latency: float, port: int) -> None:
    server = await asyncio.start_server(lambda r, w: handle(r, w, latency), "127.0.0.1", port)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    asyncio.run(main(args.latency, args.port))
