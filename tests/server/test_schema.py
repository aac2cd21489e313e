"""The OpenAPI schema tells the truth: schemathesis fuzzes every operation and the reset→step links.

In-process (the app as ASGI, no network), bounded and derandomized: a few examples per operation,
valid and invalid, then stateful runs that follow the OpenAPI links from ``POST /<env>/reset`` to
step, grade, scenario, state and close. Every response must be documented (status code, content
type, headers and body schema) and none may be a 5xx. An example that fails is reproducible:
the same run gives the same cases.
"""

from __future__ import annotations

from typing import Any

import hypothesis
import schemathesis
from hypothesis import HealthCheck, Phase
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from integrity_gym.server import ServerConfig, create_app
from tests.server.episodes import SERVED
from tests.server.servers import ADMIN_TOKEN

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]
SETTINGS = hypothesis.settings(
    max_examples=5,
    derandomize=True,
    deadline=None,
    database=None,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure is shown as generated
    suppress_health_check=list(HealthCheck),
)

app = create_app(
    tasks=SERVED, config=ServerConfig(admin_token=ADMIN_TOKEN, max_sessions=64, session_ttl_s=30, session_rate=0)
)
# Only our own links (link inference would make collect → reset a link and reset no longer a start);
# no cache on disk; a fixed seed for schemathesis' own choices.
CONFIG = SchemathesisConfig.from_dict(
    {"seed": 0, "cache": {"enabled": False}, "phases": {"stateful": {"inference": {"algorithms": []}}}}
)
schema = schemathesis.openapi.from_asgi("/openapi.json", app, config=CONFIG)


def test_every_operation_has_links_or_needs_none() -> None:
    """The reset operations carry the links the stateful run follows (one per session operation)."""
    doc = app.openapi()
    for env in {spec.env for spec in SERVED}:
        links = doc["paths"][f"/{env}/reset"]["post"]["responses"]["200"]["links"]
        targets = {link["operationId"] for link in links.values()}
        session_ops = {
            op["operationId"]
            for path, item in doc["paths"].items()
            if path.startswith(f"/{env}/") and ("session_id" in path or path.endswith("/step"))
            for op in item.values()
        }
        assert session_ops == targets, f"{env}: link every session operation from reset"


@schema.parametrize()
@SETTINGS
def test_every_operation_answers_as_documented(case: Any) -> None:
    case.call_and_validate(checks=CHECKS)


class _Machine(schema.as_state_machine()):  # type: ignore[misc]
    def validate_response(self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any) -> None:
        case.validate_response(response, checks=CHECKS, transport_kwargs=kwargs or None)


class _AdminMachine(_Machine):
    """With the admin token: the full state and the grade at any time, each in its documented shape."""

    def get_call_kwargs(self, case: Any) -> dict[str, Any]:
        return {"headers": {"authorization": f"Bearer {ADMIN_TOKEN}"}}


def test_stateful_runs_from_reset_answer_as_documented() -> None:
    _Machine.run(settings=hypothesis.settings(SETTINGS, max_examples=25, stateful_step_count=8))


def test_stateful_runs_with_the_admin_token_answer_as_documented() -> None:
    _AdminMachine.run(settings=hypothesis.settings(SETTINGS, max_examples=15, stateful_step_count=8))
