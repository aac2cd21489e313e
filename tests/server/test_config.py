"""Server settings: one table of ``IGYM_*`` names, read by ``from_env`` and written by ``as_environ``."""

from __future__ import annotations

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
