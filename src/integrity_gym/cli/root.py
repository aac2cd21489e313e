"""The ``igym`` Typer app, its console, and what every command shares (errors, ``--version``)."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

app = typer.Typer(help="integrity-gym: information-integrity environments for LLM agents.", no_args_is_help=True)


def _flag_shows_no_type() -> None:
    """A flag takes no value, so help must not print one: Typer 0.2x shows ``<bool>`` beside every flag."""
    from typer.core import TyperOption

    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is not None:
        TyperOption.display_type_rich = lambda self, ctx: None if self.is_flag else shown(self, ctx)  # type: ignore[method-assign]


_flag_shows_no_type()
# Rich's own width: the terminal's, or COLUMNS, or 80 when piped; every table is built to fit 80.
console = Console()


def fail(message: str) -> typer.Exit:
    """Print ``message`` as an error; the exit (status 2) to raise."""
    # Escaped: an install hint such as integrity-gym[report] is not rich markup.
    console.print(f"[red]error:[/red] {escape(message)}", highlight=False)
    return typer.Exit(code=2)


def _show_version(value: bool) -> None:
    if value:
        from integrity_gym import __version__

        console.print(f"integrity-gym {__version__}", highlight=False)
        raise typer.Exit


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """integrity-gym: information-integrity environments for LLM agents."""
