"""The run viewer of ``igym view``: a local page over one or two run folders.

It lists the episodes with their grades, filters them by task and outcome, and steps through a
trajectory (observations, actions, step rewards, the return curve); with two runs it shows the
same episodes (same task, seed and epoch) side by side. The run folders are read with the
report's own reader (``bench.runs.load_run``); the results database, when it knows a run, adds
the run's status and when it was made.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from integrity_gym.bench.runs import RunData, load_run
from integrity_gym.web import page, static_files

#: Fields of an episode the list shows (the trajectory is fetched when the episode is opened).
LIST_FIELDS = (
    "task_id",
    "env",
    "tier",
    "index",
    "seed",
    "epoch",
    "threshold",
    "score",
    "success",
    "total_return",
    "steps",
    "truncated",
    "error",
)


def _database_row(run: RunData, db: Path | None) -> dict[str, Any]:
    """The results database's row of ``run`` (status, created_at, command), or nothing."""
    if db is None or not db.is_file():
        return {}
    from integrity_gym.bench.results import ResultsDB

    try:
        with ResultsDB(db) as results:
            rows = results.runs()
    except Exception:  # a database of another schema, or a locked file, must not stop the viewer
        return {}
    folder = run.path.resolve()
    for row in rows:
        if row["run_id"] == run.run_id or Path(row["out_dir"]).resolve() == folder:
            return {k: row[k] for k in ("status", "created_at", "finished_at", "command") if k in row}
    return {}


def load_runs(paths: Sequence[str | Path]) -> list[RunData]:
    """Load one or two run folders; ``ValueError`` names a path that is not a run folder."""
    if not 1 <= len(paths) <= 2:
        raise ValueError(f"give one run folder, or two to compare; got {len(paths)}")
    return [load_run(p) for p in paths]


def create_viewer_app(paths: Sequence[str | Path], db: str | Path | None = None) -> Starlette:
    """The viewer's web app over the run folders ``paths`` (read once, at start)."""
    runs = load_runs(paths)
    db_path = Path(db) if db is not None else None
    described = [
        {
            "id": i,
            "label": run.display or run.label,
            "run_id": run.run_id,
            "path": str(run.path),
            "tasks": run.tasks,
            "summary": run.summary.get("tasks", {}),
            "database": _database_row(run, db_path),
            "episodes": [{k: r.get(k) for k in LIST_FIELDS} for r in run.records],
        }
        for i, run in enumerate(runs)
    ]
    if len(runs) == 2 and described[0]["label"] == described[1]["label"]:
        for entry in described:  # same agent twice: tell them apart by their folders
            entry["label"] = f"{entry['label']} ({Path(str(entry['path'])).name})"

    async def index(request: Request) -> Response:
        return page("viewer.html")

    async def list_runs(request: Request) -> Response:
        return JSONResponse({"runs": described})

    async def episode(request: Request) -> Response:
        run, number = request.path_params["run"], request.path_params["number"]
        if run >= len(runs) or number >= len(runs[run].records):
            return JSONResponse({"detail": f"no episode {number} in run {run}", "code": "NOT_FOUND"}, status_code=404)
        return JSONResponse(runs[run].records[number])

    return Starlette(
        routes=[
            Route("/", index),
            Route("/api/runs", list_runs),
            Route("/api/episode/{run:int}/{number:int}", episode),
            Mount("/static", app=static_files(), name="static"),
        ]
    )


def serve_viewer(
    paths: Sequence[str | Path],
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    db: str | Path | None = None,
    open_browser: bool = False,
) -> None:
    """Serve the viewer with uvicorn until interrupted (what ``igym view`` calls)."""
    import uvicorn

    app = create_viewer_app(paths, db)
    config = uvicorn.Config(app, host=host, port=port, log_level="info", access_log=False)
    server = uvicorn.Server(config)
    if open_browser:
        import threading
        import webbrowser

        def wait_then_open() -> None:
            import time

            while not server.started and not server.should_exit:
                time.sleep(0.05)
            if server.started:
                bound = server.servers[0].sockets[0].getsockname()[1]
                webbrowser.open(f"http://{host}:{bound}/")

        threading.Thread(target=wait_then_open, daemon=True).start()
    server.run()
