"""The episode id clients see: a UUID drawn per reset, the same in every reply about that episode.

Kills: an id derived from the task, seed or item (two resets of one seed would share it, and an agent could
tell which episodes replay the same item); an id kept across a WebSocket's resets; replies that disagree on
it; the seed000 dialect without it; seed000's padded ids (``src_001``) failing on items whose sources have
opaque ids.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from fastapi.testclient import TestClient

from integrity_gym.server import ServerConfig, create_app


def _uuid(value: Any) -> str:
    assert isinstance(value, str)
    uuid.UUID(value)  # a UUID, as the seed's observation documents it
    return value


def _ask(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    ws.send_text(json.dumps(message))
    reply: dict[str, Any] = json.loads(ws.receive_text())
    return reply


def test_every_reset_draws_its_own_id_and_every_reply_agrees() -> None:
    with TestClient(create_app(config=ServerConfig(tasks="information_integrity/*"))) as client:
        first, second = (client.post("/information_integrity/reset", json={"seed": 4}).json() for _ in range(2))
        assert first["observation"] == second["observation"]  # the same episode...
        assert _uuid(first["episode_id"]) != _uuid(second["episode_id"])  # ...told apart, its item not named
        for reply in (first, second):
            scenario = client.get(f"/information_integrity/scenario/{reply['session_id']}").json()
            assert scenario["episode_id"] == reply["episode_id"]
            step = {"session_id": reply["session_id"], "action": {"type": "check_source", "source_id": "src_1"}}
            assert client.post("/information_integrity/step", json=step).status_code == 200
            again = client.get(f"/information_integrity/scenario/{reply['session_id']}").json()
            assert again["episode_id"] == reply["episode_id"]  # a step keeps it
        with client.websocket_connect("/information_integrity/ws") as ws:
            ids = []
            for _ in range(2):
                reset = _ask(ws, {"type": "reset", "data": {"seed": 4}})
                ids.append(_uuid(reset["data"]["metadata"]["episode_id"]))
                assert _ask(ws, {"type": "state"})["data"]["episode_id"] == ids[-1]
            assert ids[0] != ids[1] and not {first["episode_id"], second["episode_id"]} & set(ids)


def test_the_seed000_dialect_shows_the_episode_id_and_reads_padded_ids_on_opaque_items() -> None:
    with TestClient(create_app(config=ServerConfig(profile="seed000"))) as client:
        hard = client.post("/reset", json={"difficulty": "hard", "seed": 1}).json()
        episode = _uuid(hard["episode_id"])
        assert hard["observation"]["episode_id"] == episode
        sources = [s["id"] for s in hard["observation"]["available_sources"]]
        assert "src_1" not in sources, "the case needs a hard item whose sources have opaque ids"
        step = client.post(
            "/step",
            json={"session_id": hard["session_id"], "action": {"type": "check_source", "source_id": "src_002"}},
        ).json()
        assert step["info"]["error"] is None and step["observation"]["episode_id"] == episode
        checked = [s["id"] for s in step["observation"]["available_sources"] if s.get("stance")]
        assert checked == [sources[1]]  # the second listed source
        past = client.post(
            "/step",
            json={"session_id": hard["session_id"], "action": {"type": "check_source", "source_id": "src_099"}},
        ).json()
        assert "src_99" in past["info"]["error"]  # a number past the list: the env's own refusal
        assert client.get(f"/scenario/{hard['session_id']}").json()["episode_id"] == episode
        with client.websocket_connect("/ws") as ws:
            reset = _ask(ws, {"type": "reset", "data": {"difficulty": "easy"}})
            ws_episode = _uuid(reset["data"]["observation"]["episode_id"])
            assert reset["data"]["metadata"]["episode_id"] == ws_episode
            stepped = _ask(ws, {"type": "step", "data": {"type": "verify_claim", "claim_id": "claim_001"}})
            assert stepped["data"]["metadata"]["error"] is None
            assert stepped["data"]["observation"]["episode_id"] == ws_episode
