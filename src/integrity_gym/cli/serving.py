"""``igym serve``: every environment over OpenEnv's WebSocket protocol and stateful HTTP."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from integrity_gym.cli.root import console, fail


def serve(
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0 picks a free one).")] = 8000,
    workers: Annotated[int, typer.Option(min=1, help="Worker processes (more than 1 needs --sessions redis://).")] = 1,
    sessions: Annotated[
        str | None, typer.Option(help="Session store: memory (default), or redis://host:port/db to share.")
    ] = None,
    max_sessions: Annotated[int | None, typer.Option(min=1, help="Most sessions open at once (default 1024).")] = None,
    session_ttl: Annotated[
        float | None, typer.Option(min=0.01, help="Idle seconds before a session is reaped (default 600).")
    ] = None,
    tasks: Annotated[str | None, typer.Option(help="Glob over task ids to serve (default: all).")] = None,
    extra_tasks: Annotated[
        str | None, typer.Option(help="Comma-separated 'module:ATTR' of unregistered TaskSpecs to serve too.")
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(help="A web origin (scheme://host:port) whose pages may use this server (WebSocket, CORS)."),
    ] = None,
    lenient_content_type: Annotated[
        bool | None,
        typer.Option(
            "--lenient-content-type", help="Read /reset and /step bodies as JSON whatever their Content-Type."
        ),
    ] = None,
    max_sessions_per_client: Annotated[
        int | None,
        typer.Option(min=0, help="Most sessions one client (address, IPv6 /64 or client token) holds; 0: none (256)."),
    ] = None,
    session_rate: Annotated[
        float | None,
        typer.Option(min=0.0, help="New sessions per second one client may open after a burst; 0: no limit (100)."),
    ] = None,
    session_burst: Annotated[
        int | None, typer.Option(min=1, help="Sessions one client may open at once (200).")
    ] = None,
    client_token: Annotated[
        list[str] | None,
        typer.Option(help="A token naming a client ('Authorization: Bearer'): its own quota and rate (repeatable)."),
    ] = None,
    connect_idle_timeout: Annotated[
        float | None,
        typer.Option(min=0.1, help="Seconds a new connection may stay silent before its first request (60)."),
    ] = None,
    header_timeout: Annotated[
        float | None, typer.Option(min=0.1, help="Seconds from a request's first byte to the end of its head (10).")
    ] = None,
    body_timeout: Annotated[
        float | None, typer.Option(min=0.1, help="Seconds a request has to send its body (30).")
    ] = None,
    step_threads: Annotated[
        int | None, typer.Option(min=1, help="Worker threads for the resets and steps of blocking environments (1024).")
    ] = None,
    corpus: Annotated[
        Path | None, typer.Option(help="Folder of *.jsonl documents that POST /information_integrity/collect searches.")
    ] = None,
    root: Annotated[
        str | None, typer.Option(help="Also serve this environment at / (/ws, /reset ...), as an OpenEnv Space does.")
    ] = None,
    profile: Annotated[
        str | None,
        typer.Option(
            help="Speak a seed client's dialect at /: seed001 (pii_redaction) or seed000 (information_integrity)."
        ),
    ] = None,
    sealed: Annotated[
        bool | None,
        typer.Option(
            "--sealed",
            help="Sealed evaluations (needs IGYM_EVAL_SECRET): episodes only from POST /evaluations, no item ids, "
            "grades at the evaluation's close.",
        ),
    ] = None,
    evaluation_ttl: Annotated[
        float | None, typer.Option(min=1.0, help="Seconds an evaluation and its results are kept, sealed (86400).")
    ] = None,
    max_evaluations: Annotated[
        int | None, typer.Option(min=1, help="Most evaluations open at once, sealed (64).")
    ] = None,
) -> None:
    """Serve every environment over OpenEnv's WebSocket protocol and stateful HTTP (docs at /docs).

    Each setting can also be given as its IGYM_* variable (docs/server.md); an option wins over it.
    """
    if corpus is not None:
        if not corpus.is_dir():
            raise fail(f"--corpus {corpus} is not a folder")
        os.environ["IGYM_CORPUS_DIR"] = str(corpus.resolve())  # read by the collect hook, in every worker
    try:
        from integrity_gym.server import ServerConfig
        from integrity_gym.server import serve as run_server
    except ImportError as exc:
        raise fail(f"the server needs the 'server' extra: pip install 'integrity-gym[server]' ({exc})") from exc
    try:
        # Every setting also comes from its IGYM_* variable (server/config.py, ENV_NAMES); an option given
        # here wins. Tokens are best given in IGYM_CLIENT_TOKENS: a command line is public.
        config = ServerConfig.from_options({
            "sessions": sessions, "max_sessions": max_sessions, "session_ttl_s": session_ttl, "tasks": tasks,
            "extra_tasks": tuple(p.strip() for p in extra_tasks.split(",") if p.strip()) if extra_tasks else None,
            "step_threads": step_threads, "max_sessions_per_client": max_sessions_per_client,
            "session_rate": session_rate, "session_burst": session_burst,
            "client_tokens": tuple(client_token) if client_token else None,
            "connect_idle_timeout_s": connect_idle_timeout, "header_timeout_s": header_timeout,
            "body_timeout_s": body_timeout, "allowed_origins": tuple(allow_origin) if allow_origin else None,
            "lenient_content_type": lenient_content_type, "root": root, "profile": profile, "sealed": sealed,
            "evaluation_ttl_s": evaluation_ttl, "max_evaluations": max_evaluations,
        })  # fmt: skip
        config.root_env()
        shown = host if host not in ("0.0.0.0", "::") else "127.0.0.1"
        base = f"http://{shown}:{port}" if port else "the address uvicorn prints below"
        console.print(f"playground: {base}/web/   API docs: {base}/docs" if port else
                      f"playground at /web/ and API docs at /docs of {base}", highlight=False)  # fmt: skip
        run_server(host=host, port=port, workers=workers, config=config)
    except ValueError as exc:
        raise fail(str(exc)) from exc
