"""An in-memory model behind an OpenAI-compatible endpoint on 127.0.0.1, for the ``llm`` agent.

The benchmark runner evaluates models through the ``llm`` agent, which talks to an endpoint;
serving the model being trained this way evaluates it with exactly the agent, prompts, parsing and
runner used for any other model. It answers ``GET /v1/models`` and ``POST /v1/chat/completions``
(one request at a time; ``response_format`` is ignored; a request ending in an assistant message, a
prefill, is answered with the whole reply, that message included). Greedy at temperature 0; at a higher
temperature the request's ``seed`` seeds torch before sampling, so a run can be replayed.
``serve`` puts any completer behind the same routes: multi-step training serves its episode
recorder (``rollout.EpisodeRecorder``) this way, so the runner plays training episodes too.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from integrity_gym.train.model import render


class Completer(Protocol):
    """What the endpoint asks for each chat request: ``(text, prompt tokens, new tokens, finish reason)``."""

    def complete(self, body: dict[str, Any]) -> tuple[str, int, int, str]:
        """Answer one ``/chat/completions`` request body."""
        ...


class _Generator:
    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.torch = importlib.import_module("torch")
        self.lock = threading.Lock()

    def complete(self, body: dict[str, Any]) -> tuple[str, int, int, str]:
        torch, tok = self.torch, self.tokenizer
        messages = body["messages"]
        prompt = render(tok, messages)
        inputs = tok(prompt, return_tensors="pt", add_special_tokens=False).to(self.model.device)
        temperature = float(body.get("temperature") or 0.0)
        kwargs: dict[str, Any] = {
            "max_new_tokens": int(body.get("max_tokens") or 256),
            "pad_token_id": tok.pad_token_id,
        }
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=temperature, top_k=0, top_p=1.0)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        # float32: at batch size 1 on CPU, bf16 autocast made greedy decoding slower, not faster.
        with self.lock, torch.inference_mode():
            if temperature > 0:
                torch.manual_seed(int(body.get("seed") or 0))
            out = self.model.generate(**inputs, **kwargs)
        new = out[0, inputs["input_ids"].shape[1] :]
        text = tok.decode(new, skip_special_tokens=True)
        if messages[-1]["role"] == "assistant":  # the whole reply, as the rollout's recorder answers
            text = messages[-1]["content"] + text
        finish = "stop" if len(new) and int(new[-1]) == tok.eos_token_id else "length"
        return text, int(inputs["input_ids"].shape[1]), len(new), finish


def _handler(gen: Completer, name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "igym"}]})
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            try:
                text, n_prompt, n_new, finish = gen.complete(body)
            except Exception as exc:  # the agent records the message instead of a dropped connection
                self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
                return
            self._send(
                200,
                {
                    "id": f"chatcmpl-{time.monotonic_ns()}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": name,
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}
                    ],
                    "usage": {"prompt_tokens": n_prompt, "completion_tokens": n_new, "total_tokens": n_prompt + n_new},
                },
            )

    return Handler


@contextlib.contextmanager
def serve_model(model: Any, tokenizer: Any, name: str) -> Iterator[str]:
    """Serve ``model`` on a free port of 127.0.0.1 while the context is open; yield its ``/v1`` URL."""
    with serve(_Generator(model, tokenizer), name) as url:
        yield url


@contextlib.contextmanager
def serve(completer: Completer, name: str) -> Iterator[str]:
    """Serve any ``completer`` (e.g. the multi-step rollout's recorder) like ``serve_model`` does."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(completer, name))
    thread = threading.Thread(target=server.serve_forever, name="igym-train-endpoint", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
