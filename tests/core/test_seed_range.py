"""Seeds are 64-bit signed integers: both ends play, one past either end is a clear ValueError."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

import integrity_gym
from integrity_gym.server import ServerConfig, create_app


@pytest.mark.parametrize("task", [s.id for s in integrity_gym.list_tasks()])
def test_every_task_plays_both_ends_of_the_seed_range(task: str) -> None:
    env = integrity_gym.make(task)
    for seed in (2**63 - 1, -(2**63)):
        env.reset(seed=seed)
    for seed in (2**63, -(2**63) - 1, 10**26):
        with pytest.raises(ValueError, match=r"seed must be an integer in \[-2\*\*63, 2\*\*63\)"):
            env.reset(seed=seed)


def test_the_server_refuses_a_seed_out_of_range_with_a_422() -> None:
    # Kills: a generator's RuntimeError on a huge seed (an information_integrity id too long) as a 500.
    with TestClient(create_app(config=ServerConfig(tasks="information_integrity/*"))) as client:
        for path in ("/information_integrity/reset",):
            reply = client.post(path, json={"seed": 10**26, "task": "information_integrity/medium"})
            assert reply.status_code == 422 and reply.json()["code"] == "VALIDATION_ERROR", reply.text
        with client.websocket_connect("/information_integrity/ws") as ws:
            ws.send_json({"type": "reset", "data": {"seed": 10**26}})
            assert ws.receive_json()["data"]["code"] == "VALIDATION_ERROR"
