"""Full episodes of every registered task over WebSocket and HTTP equal the in-process ones."""

from __future__ import annotations

import asyncio

import pytest

from integrity_gym.client import AdminTokenError, AsyncRemoteEnv, EpisodeNotDoneError, RemoteEnv
from integrity_gym.core.env import EpisodeFinishedError, NotResetError
from tests.server.episodes import SPECS, TASK_IDS, build, reference
from tests.server.servers import ADMIN_TOKEN, ServerProcess

SEED = 7


@pytest.mark.parametrize("transport", ["ws", "http"])
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_remote_episode_equals_in_process(server: ServerProcess, task_id: str, transport: str) -> None:
    ref = reference(task_id, SEED)
    with RemoteEnv(server.url, task_id, spec=SPECS[task_id], transport=transport, admin_token=ADMIN_TOKEN) as env:
        seen = [env.reset(seed=SEED).model_dump_json()]
        for action in ref.actions:
            seen.append(env.step(action).model_dump_json())
        assert seen == ref.seen
        assert env.done
        assert env.grade().model_dump_json() == ref.grade
        assert env.state().model_dump_json() == ref.state
        with pytest.raises(EpisodeFinishedError, match=r"has ended; call reset\(\)"):
            env.step(ref.actions[-1])
        # A finished episode is unchanged by the refused step, and a new reset starts over.
        assert env.state().model_dump_json() == ref.state
        assert env.reset(seed=SEED).model_dump_json() == ref.seen[0]


@pytest.mark.parametrize("transport", ["ws", "http"])
@pytest.mark.parametrize("task_id", TASK_IDS)
def test_async_client_equals_in_process(server: ServerProcess, task_id: str, transport: str) -> None:
    ref = reference(task_id, SEED + 1)

    async def play() -> list[str]:
        async with AsyncRemoteEnv(server.url, task_id, spec=SPECS[task_id], transport=transport) as env:
            seen = [(await env.reset(seed=SEED + 1)).model_dump_json()]
            for action in ref.actions:
                seen.append((await env.step(action)).model_dump_json())
            seen.append((await env.grade()).model_dump_json())
            with pytest.raises(AdminTokenError, match="admin token"):
                await env.state()  # no admin token: ground truth stays on the server
            return seen

    assert asyncio.run(play()) == [*ref.seen, ref.grade]


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_state_and_early_grade_need_the_admin_token(server: ServerProcess, transport: str) -> None:
    task_id = TASK_IDS[-1]
    with RemoteEnv(server.url, task_id, spec=SPECS[task_id], transport=transport, admin_token="wrong") as env:
        env.reset(seed=1)
        with pytest.raises(AdminTokenError, match="admin token"):
            env.state()
        with pytest.raises(EpisodeNotDoneError, match="once the episode has ended"):
            env.grade()
        # The session is still usable, and the grade comes once the episode is over.
        assert env.step({"kind": "FINISH"}).done
        assert env.grade().score >= 0.0
    with RemoteEnv(server.url, task_id, spec=SPECS[task_id], transport=transport, admin_token=ADMIN_TOKEN) as env:
        env.reset(seed=1)
        assert env.grade().score >= 0.0  # the admin may read it any time


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_step_before_reset_raises_like_in_process(server: ServerProcess, transport: str) -> None:
    task_id = TASK_IDS[-1]
    with (
        RemoteEnv(server.url, task_id, spec=SPECS[task_id], transport=transport) as env,
        pytest.raises(NotResetError, match=r"call reset\(\) on"),
    ):
        env.step({})


def test_reset_can_switch_task_within_an_environment(server: ServerProcess) -> None:
    by_env: dict[str, list[str]] = {}
    for task_id in TASK_IDS:
        by_env.setdefault(task_id.split("/")[0], []).append(task_id)
    for ids in by_env.values():
        with RemoteEnv(server.url, ids[0], spec=SPECS[ids[0]]) as env:
            for task_id in ids:
                obs = env.reset(seed=3, task=task_id)
                assert obs.model_dump_json() == build(task_id).reset(seed=3).model_dump_json()
