"""In-process, a deeply nested action string is a rejected step like any malformed action."""

from __future__ import annotations

import pytest

import integrity_gym
from integrity_gym.core.env import MAX_ERROR_CHARS


@pytest.mark.parametrize("task_id", [spec.id for spec in integrity_gym.list_tasks()][::3])
def test_a_deeply_nested_action_string_is_rejected_not_raised(task_id: str) -> None:
    env = integrity_gym.make(task_id)
    env.reset(seed=0)
    before = env.state().model_dump_json()
    result = env.step("[" * 100_000 + "]" * 100_000)
    if env.malformed_action_ends_episode:  # the reply is the final answer, recorded as malformed
        assert result.done
    else:
        assert result.reward <= 0 and not result.done and result.info["error"]
        assert env.state().model_dump_json() != before  # the rejection is accounted for (a step spent)
    assert len(result.info["error"]) <= MAX_ERROR_CHARS


def test_a_nested_json_action_names_the_problem() -> None:
    env = integrity_gym.make("information_integrity/easy-v3")
    env.reset(seed=0)
    assert "nested too deeply" in env.step("[" * 100_000 + "]" * 100_000).info["error"]
