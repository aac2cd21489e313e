"""``python -m integrity_gym.server``: run the server (the same options as ``igym serve``)."""

from __future__ import annotations

import argparse

from integrity_gym.server.app import serve
from integrity_gym.server.config import ServerConfig


def main(argv: list[str] | None = None) -> None:
    """Parse the options and serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m integrity_gym.server", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1", help="Address to bind (default 127.0.0.1).")
    parser.add_argument("--port", type=int, default=8000, help="Port (0 picks a free one).")
    parser.add_argument(
        "--workers", type=int, default=1, help="Worker processes (more than 1 needs --sessions redis://)."
    )
    parser.add_argument("--sessions", default=None, help="'memory' (default) or redis://host:port/db.")
    parser.add_argument("--max-sessions", type=int, default=None, help="Most open sessions (default 1024).")
    parser.add_argument(
        "--session-ttl", type=float, default=None, help="Idle seconds before a session is reaped (default 600)."
    )
    parser.add_argument("--tasks", default=None, help="Glob over task ids to serve (default: all).")
    parser.add_argument(
        "--extra-tasks", default=None, help="Comma-separated 'module:ATTR' of unregistered TaskSpecs to serve too."
    )
    parser.add_argument(
        "--step-threads", type=int, default=None, help="Threads for blocking environments' steps (default 1024)."
    )
    parser.add_argument("--max-sessions-per-client", type=int, default=None, help="Per-client quota (0: none).")
    parser.add_argument("--session-rate", type=float, default=None, help="New sessions/s per client (0: no limit).")
    parser.add_argument("--session-burst", type=int, default=None, help="Sessions a client may open at once.")
    parser.add_argument("--client-token", action="append", default=None, help="A token naming a client (repeatable).")
    parser.add_argument("--connect-idle-timeout", type=float, default=None, help="Seconds to begin a request.")
    parser.add_argument("--header-timeout", type=float, default=None, help="Seconds to send a request head.")
    parser.add_argument("--body-timeout", type=float, default=None, help="Seconds to send a request body.")
    parser.add_argument("--allow-origin", action="append", default=None, help="A web origin allowed (repeatable).")
    parser.add_argument("--lenient-content-type", action="store_true", default=None, help="Any body type as JSON.")
    parser.add_argument("--root", default=None, help="Also serve this environment at /.")
    parser.add_argument("--profile", default=None, help="seed001 or seed000: a seed client's dialect at /.")
    parser.add_argument(
        "--sealed",
        action="store_true",
        default=None,
        help="Sealed evaluations (needs IGYM_EVAL_SECRET): episodes only from POST /evaluations.",
    )
    parser.add_argument("--evaluation-ttl", type=float, default=None, help="Seconds an evaluation is kept.")
    parser.add_argument("--max-evaluations", type=int, default=None, help="Most evaluations open at once.")
    parser.add_argument("--log-level", default="info", help="uvicorn log level.")
    args = parser.parse_args(argv)
    options = {
        "sessions": args.sessions,
        "max_sessions": args.max_sessions,
        "step_threads": args.step_threads,
        "max_sessions_per_client": args.max_sessions_per_client,
        "session_rate": args.session_rate,
        "session_burst": args.session_burst,
        "client_tokens": tuple(args.client_token) if args.client_token else None,
        "connect_idle_timeout_s": args.connect_idle_timeout,
        "header_timeout_s": args.header_timeout,
        "body_timeout_s": args.body_timeout,
        "allowed_origins": tuple(args.allow_origin) if args.allow_origin else None,
        "lenient_content_type": args.lenient_content_type,
        "session_ttl_s": args.session_ttl,
        "tasks": args.tasks,
        "root": args.root,
        "profile": args.profile,
        "sealed": args.sealed,
        "evaluation_ttl_s": args.evaluation_ttl,
        "max_evaluations": args.max_evaluations,
    }
    if args.extra_tasks:
        options["extra_tasks"] = tuple(p.strip() for p in args.extra_tasks.split(",") if p.strip())
    try:
        config = ServerConfig.from_options(options)
        serve(host=args.host, port=args.port, workers=args.workers, config=config, log_level=args.log_level)
    except ValueError as exc:  # a bad setting, or the session store down: one line
        parser.exit(2, f"error: {exc}\n")


if __name__ == "__main__":
    main()
