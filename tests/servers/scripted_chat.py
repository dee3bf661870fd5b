"""An OpenAI-compatible chat server whose answers a test scripts (stdlib only).

It is :class:`fault_server.FaultServer` (same routes, recording, faults and documented response
format) with the answer text chosen by ``answer(body) -> str``, a function of the request's
parsed JSON body (its messages, ``seed``, ``temperature``, ...), instead of the echo. Use::

    with ScriptedChatServer(lambda body: "Copy the text in the image.") as srv:
        ...  # srv.base_url, srv.total_requests, srv.requests
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_server import FaultServer  # noqa: E402

__all__ = ["ScriptedChatServer"]


class ScriptedChatServer(FaultServer):
    def __init__(self, answer: Callable[[dict[str, Any]], str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.answer = answer

    def response_for(self, path: str, body: Any) -> dict[str, Any]:
        response = super().response_for(path, body)
        text = self.answer(body)
        choice = response["choices"][0]
        if "message" in choice:
            choice["message"]["content"] = text
        else:
            choice["text"] = text
        usage = response["usage"]
        usage["completion_tokens"] = len(text.split())
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return response
