"""Server settings: one table of ``IGYM_*`` names, read by ``from_env`` and written by ``as_environ``."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from integrity_gym.cli import app
from integrity_gym.server import ServerConfig
from integrity_gym.server.config import ENV_NAMES


def test_every_setting_has_a_variable_and_survives_the_round_trip() -> None:
    # Kills: a setting the workers never receive (a field missing from ENV_NAMES or from as_environ).
    assert set(ENV_NAMES) == set(ServerConfig.model_fields)
    full = ServerConfig(
        sessions="redis://127.0.0.1:6379/0", max_sessions=7, session_ttl_s=12.5, reap_interval_s=3.0,
        max_body_bytes=4096, admin_token="tok-1234567890", tasks="pii_redaction/*",
        extra_tasks=("tests.digits.env:SPEC", "x:Y"), root="pii_redaction", profile="seed001", sealed=True,
        evaluation_ttl_s=99.0, max_evaluations=3,
    )  # fmt: skip
    for config in (full, ServerConfig()):
        environ = config.as_environ()
        assert set(environ) == set(ENV_NAMES.values())
        assert ServerConfig.from_env(environ) == config


def test_both_front_ends_read_the_variables_and_an_option_given_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    # Kills: `igym serve` ignoring IGYM_ROOT / IGYM_TASKS (its defaults once overwrote every variable), an
    # option not winning over its variable, the two front ends building different configs from one input.
    from integrity_gym.server import __main__ as module

    built: list[ServerConfig] = []

    def capture(*, config: ServerConfig, **_: object) -> None:
        built.append(config)

    monkeypatch.setattr("integrity_gym.server.serve", capture)
    monkeypatch.setattr(module, "serve", capture)
    monkeypatch.setenv("IGYM_ROOT", "pii_redaction")
    monkeypatch.setenv("IGYM_TASKS", "pii_redaction/*")
    monkeypatch.setenv("IGYM_MAX_SESSIONS", "77")
    monkeypatch.setenv("IGYM_SEALED", "")
    CliRunner().invoke(app, ["serve", "--port", "0", "--max-sessions", "9"], catch_exceptions=False)
    module.main(["--port", "0", "--max-sessions", "9"])
    cli, plain = built
    assert cli == plain
    assert (cli.root, cli.tasks, cli.max_sessions, cli.sealed) == ("pii_redaction", "pii_redaction/*", 9, False)
    monkeypatch.delenv("IGYM_ROOT")
    CliRunner().invoke(app, ["serve", "--port", "0", "--lenient-content-type"], catch_exceptions=False)
    assert built[-1].root is None and built[-1].max_sessions == 77 and built[-1].lenient_content_type


def test_an_unknown_or_invalid_setting_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown server settings: colour"):
        ServerConfig.from_options({"colour": "red"}, environ={})
    with pytest.raises(ValueError, match="max_sessions"):
        ServerConfig.from_options({"max_sessions": 0}, environ={})
