"""An OpenAI-compatible chat endpoint on 127.0.0.1 whose replies are a function of the conversation.

The "model" of the verifiers replay tests: ``script(messages)`` writes each reply, so a
multi-turn episode gets replies that fit what it shows (a claim id that exists, an e-mail address
in the window). Plain and streamed (SSE) completions are both served, whichever the caller asks.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Script = Callable[[list[dict[str, Any]]], str]


def text(content: Any) -> str:
    """The text of a message's content (a string, or OpenAI content parts)."""
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


@contextmanager
def scripted_llm(script: Script, requests: list[dict[str, Any]] | None = None) -> Iterator[str]:
    """Serve ``script`` until the context ends; yield the base URL (``http://127.0.0.1:PORT/v1``).

    Each request body is appended to ``requests`` when a list is given.
    """

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self) -> None:
            body = {"object": "list", "data": [{"id": "scripted", "object": "model", "owned_by": "tests"}]}
            self._send(200, json.dumps(body).encode(), "application/json")

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if requests is not None:
                requests.append(request)
            reply = script(request.get("messages", []))
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            model = request.get("model", "scripted")
            if not request.get("stream"):
                body = {
                    "id": "chatcmpl-scripted",
                    "object": "chat.completion",
                    "created": 0,
                    "model": model,
                    "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": reply}}
                    ],
                    "usage": usage,
                }
                self._send(200, json.dumps(body).encode(), "application/json")
                return
            chunk = {"id": "chatcmpl-scripted", "object": "chat.completion.chunk", "created": 0, "model": model}
            events = [
                {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": reply}}]},
                {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": usage},
            ]
            payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
            self._send(200, payload.encode(), "text/event-stream")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
