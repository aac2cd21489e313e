"""A minimal OpenAI-compatible chat endpoint on 127.0.0.1 that answers from a script.

It is a real HTTP server (the agent's own openai client talks to it over a socket); each
request pops the next scripted reply: (status, body) or ("sleep", seconds) to provoke a timeout.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(content: str, prompt_tokens: int = 11, completion_tokens: int = 7) -> tuple[int, dict[str, Any]]:
    return 200, {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def error(status: int, message: str, headers: dict[str, str] | None = None) -> tuple[Any, ...]:
    body = {"error": {"code": status, "message": message, "type": "server_error"}}
    return (status, body) if headers is None else (status, body, headers)


class Stub:
    def __init__(self, script: list[Any]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []


@contextmanager
def openai_stub(script: list[Any]) -> Iterator[tuple[str, Stub]]:
    stub = Stub(script)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            stub.requests.append(body)
            step = stub.script.pop(0) if stub.script else completion('{"unused": true}')
            if step[0] == "sleep":
                time.sleep(step[1])
                step = completion("{}")
            status, payload, *extra = step
            data = json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (extra[0] if extra else {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", stub
    finally:
        server.shutdown()
        server.server_close()
