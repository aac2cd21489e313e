"""The ``igym`` command line.

``root`` holds the Typer app and what every command shares; each command lives with its kin
(``tasks``, ``benchmarking``, ``rescoring``, ``results``, ``redteaming``, ``serving``,
``exporting``, ``inspecting``, ``training``, ``spacing``) and is registered here, in the order
``igym --help`` lists them.
"""

from __future__ import annotations

from integrity_gym.cli.benchmarking import bench
from integrity_gym.cli.exporting import export
from integrity_gym.cli.inspecting import inspect_log
from integrity_gym.cli.redteaming import redteam
from integrity_gym.cli.rescoring import rescore
from integrity_gym.cli.results import report, runs, view
from integrity_gym.cli.root import app, console
from integrity_gym.cli.serving import serve
from integrity_gym.cli.spacing import space
from integrity_gym.cli.tasks import HELP_WORDS, PLAY_KEYS, QUIT_WORDS, collect, list_command, play
from integrity_gym.cli.training import sft, train

__all__ = [
    "HELP_WORDS",
    "PLAY_KEYS",
    "QUIT_WORDS",
    "app",
    "bench",
    "collect",
    "console",
    "export",
    "inspect_log",
    "list_command",
    "main",
    "play",
    "redteam",
    "report",
    "rescore",
    "runs",
    "serve",
    "sft",
    "space",
    "train",
    "view",
]

app.command("list")(list_command)
app.command()(play)
app.command()(bench)
app.command()(rescore)
app.command()(report)
app.command()(redteam)
app.command()(runs)
app.command()(collect)
app.command()(serve)
app.command()(view)
app.command()(export)
app.command("inspect-log")(inspect_log)
app.command()(train)
app.command()(sft)
app.command()(space)


def main() -> None:
    """Entry point for ``python -m integrity_gym``."""
    app()
