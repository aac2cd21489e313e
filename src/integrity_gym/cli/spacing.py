"""``igym space``: write a pushable OpenEnv Space folder for one environment (docs/interop.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from integrity_gym.cli.root import console, fail


def space(
    env: Annotated[str, typer.Argument(help="The environment to package (`igym list` shows them).")],
    out: Annotated[
        Path | None, typer.Option(help="Folder to write; it must be new or empty. Default: outputs/spaces/ENV.")
    ] = None,
    wheels: Annotated[
        Path | None,
        typer.Option(
            help="integrity-gym's wheel for the image (its dependencies then come from PyPI at build time), or a "
            "folder holding it and every dependency's wheel (docker/wheels.sh makes one; the build downloads "
            "nothing). Default: a wheel built from this source checkout."
        ),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace a folder that igym space wrote before.")
    ] = False,
) -> None:
    """Write a Space folder for ENV that `openenv push` uploads: its image serves ENV alone, at `/`.

    The folder holds OpenEnv's manifest (openenv.yaml), a Dockerfile that installs integrity-gym
    from the wheel in wheels/ and serves ENV at the root on port 7860, a typed OpenEnv client
    (client.py, models.py) and a README with the Space's front matter.
    """
    from integrity_gym.integrations.openenv_space import SpaceError, write_space

    target = out if out is not None else Path("outputs") / "spaces" / env
    try:
        written = write_space(env, target, wheels=wheels, overwrite=overwrite)
    except SpaceError as exc:
        raise fail(str(exc)) from exc
    where = escape(str(written.path))
    source = (
        "every wheel it needs: the image builds offline"
        if written.offline
        else "integrity-gym's wheel; the image takes its dependencies from PyPI"
    )
    console.print(
        f"wrote {where}: the {written.env} environment at / of its image (integrity-gym {written.version}), "
        f"client {written.client_class}; wheels/ holds {source}",
        highlight=False,
    )
    console.print(
        f"  openenv validate {where} --level static --skip-build\n"
        f"  docker build -t igym-{written.env} {where}   (no Docker Hub: --build-arg BASE=igym-base:bookworm)\n"
        f"  openenv push {where} --repo-id USER/NAME",
        highlight=False,
    )
