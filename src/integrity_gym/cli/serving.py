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
    sessions: Annotated[str, typer.Option(help="Session store: memory, or redis://host:port/db to share.")] = "memory",
    max_sessions: Annotated[int, typer.Option(min=1, help="Most sessions open at once.")] = 1024,
    session_ttl: Annotated[float, typer.Option(min=0.01, help="Idle seconds before a session is reaped.")] = 600.0,
    tasks: Annotated[str, typer.Option(help="Glob over task ids to serve.")] = "*",
    extra_tasks: Annotated[
        str | None, typer.Option(help="Comma-separated 'module:ATTR' of unregistered TaskSpecs to serve too.")
    ] = None,
    allow_origin: Annotated[
        list[str] | None,
        typer.Option(help="A web origin (scheme://host:port) whose pages may use this server (WebSocket, CORS)."),
    ] = None,
    lenient_content_type: Annotated[
        bool, typer.Option(help="Read /reset and /step bodies as JSON whatever their Content-Type.")
    ] = False,
    max_sessions_per_client: Annotated[
        int,
        typer.Option(
            min=0,
            envvar="IGYM_MAX_SESSIONS_PER_CLIENT",
            help="Most sessions one client (address, IPv6 /64 or client token) holds; 0: none.",
        ),
    ] = 256,
    session_rate: Annotated[
        float,
        typer.Option(
            min=0.0,
            envvar="IGYM_SESSION_RATE",
            help="New sessions per second one client may open after a burst; 0: no limit.",
        ),
    ] = 100.0,
    session_burst: Annotated[
        int, typer.Option(min=1, envvar="IGYM_SESSION_BURST", help="Sessions one client may open at once.")
    ] = 200,
    client_token: Annotated[
        list[str] | None,
        typer.Option(help="A token naming a client ('Authorization: Bearer'): its own quota and rate (repeatable)."),
    ] = None,
    connect_idle_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds a new connection may stay silent before its first request.")
    ] = 60.0,
    header_timeout: Annotated[
        float, typer.Option(min=0.1, help="Seconds from a request's first byte to the end of its head.")
    ] = 10.0,
    body_timeout: Annotated[float, typer.Option(min=0.1, help="Seconds a request has to send its body.")] = 30.0,
    step_threads: Annotated[
        int, typer.Option(min=1, help="Worker threads for the resets and steps of blocking environments.")
    ] = 1024,
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
        bool,
        typer.Option(
            "--sealed",
            help="Sealed evaluations (also IGYM_SEALED=1; needs IGYM_EVAL_SECRET): episodes only from POST "
            "/evaluations, no item ids, grades at the evaluation's close.",
        ),
    ] = False,
    evaluation_ttl: Annotated[
        float, typer.Option(min=1.0, help="Seconds an evaluation and its results are kept (sealed).")
    ] = 86400.0,
    max_evaluations: Annotated[int, typer.Option(min=1, help="Most evaluations open at once (sealed).")] = 64,
) -> None:
    """Serve every environment over OpenEnv's WebSocket protocol and stateful HTTP (docs at /docs)."""
    if corpus is not None:
        if not corpus.is_dir():
            raise fail(f"--corpus {corpus} is not a folder")
        os.environ["IGYM_CORPUS_DIR"] = str(corpus.resolve())  # read by the collect hook, in every worker
    try:
        from integrity_gym.server import ServerConfig
        from integrity_gym.server import serve as run_server
        from integrity_gym.server.security import admin_token_from_env
    except ImportError as exc:
        raise fail(f"the server needs the 'server' extra: pip install 'integrity-gym[server]' ({exc})") from exc
    try:
        config = ServerConfig(
            sessions=sessions,
            max_sessions=max_sessions,
            session_ttl_s=session_ttl,
            tasks=tasks,
            extra_tasks=tuple(p.strip() for p in (extra_tasks or "").split(",") if p.strip()),
            step_threads=step_threads,
            max_sessions_per_client=max_sessions_per_client,
            session_rate=session_rate,
            session_burst=session_burst,
            # Tokens are best given in IGYM_CLIENT_TOKENS (comma-separated): a command line is public.
            client_tokens=tuple(client_token or ())
            or tuple(t.strip() for t in os.environ.get("IGYM_CLIENT_TOKENS", "").split(",") if t.strip()),
            connect_idle_timeout_s=connect_idle_timeout,
            header_timeout_s=header_timeout,
            body_timeout_s=body_timeout,
            allowed_origins=tuple(allow_origin or ()),
            lenient_content_type=lenient_content_type,
            admin_token=admin_token_from_env(),
            root=root,
            profile=profile,
            sealed=sealed or os.environ.get("IGYM_SEALED", "").strip().lower() in ("1", "true", "yes", "on"),
            evaluation_ttl_s=evaluation_ttl,
            max_evaluations=max_evaluations,
        )
        config.root_env()
        shown = host if host not in ("0.0.0.0", "::") else "127.0.0.1"
        base = f"http://{shown}:{port}" if port else "the address uvicorn prints below"
        console.print(f"playground: {base}/web/   API docs: {base}/docs" if port else
                      f"playground at /web/ and API docs at /docs of {base}", highlight=False)  # fmt: skip
        run_server(host=host, port=port, workers=workers, config=config)
    except ValueError as exc:
        raise fail(str(exc)) from exc
