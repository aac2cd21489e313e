"""``EnvEpisode``, the framework-free half of the verifiers tasksets (runs without verifiers).

The reference is ``igym bench``'s way of playing: the ``llm`` agent with the same replies
(tests/integrations/replay.py). An episode played reply by reply must show the model the same
messages and end with the same grade and step rewards.
"""

from __future__ import annotations

from typing import Any

import pytest

from integrity_gym.agents.prompts.selective_verification import _NO_IMAGE
from integrity_gym.integrations.verifiers.episodes import EnvEpisode
from tests.integrations.replay import integrity_script, pii_script, replay

CASES = {
    "pii_redaction/gdpr_contract_easy-v4": (pii_script, {"source": "generated", "partition": "eval"}),
    "pii_redaction/security_logs_hard-v4": (pii_script, {"source": "gold"}),
    "information_integrity/medium-v3": (integrity_script, {"source": "generated", "partition": "eval"}),
    "information_integrity/easy-v3": (integrity_script, {"source": "gold", "difficulty": "hard"}),
}


def play(task_id: str, seed: int, script: Any, options: dict[str, Any]) -> tuple[EnvEpisode, list[str], list[str]]:
    """Play ``script`` against an EnvEpisode; return it, the user messages shown and the replies."""
    episode = EnvEpisode(task_id, seed=seed, options=options)
    messages: list[dict[str, Any]] = [{"role": "system", "content": episode.system_prompt()}]
    shown, replies = [], []
    while not episode.done and len(replies) < 12:
        shown.append(episode.user_message())
        messages.append({"role": "user", "content": shown[-1]})
        replies.append(script(messages))
        messages.append({"role": "assistant", "content": replies[-1]})
        episode.step(replies[-1])
    return episode, shown, replies


@pytest.mark.parametrize("task_id", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 7])
def test_an_episode_played_reply_by_reply_is_the_llm_agents_episode(task_id: str, seed: int) -> None:
    script, options = CASES[task_id]
    episode, shown, replies = play(task_id, seed, script, options)
    assert episode.done
    env, results, sent = replay(task_id, seed, replies, options=options)
    assert [episode.system_prompt(), *shown] == sent  # feedback after an unreadable reply included
    assert episode.grade() == env.grade()
    assert episode.reward_sum == pytest.approx(sum(r.reward for r in results), abs=1e-12)
    metrics = episode.metrics()
    assert metrics["steps"] == len(replies) == len(results)
    assert metrics["grade_" + next(iter(env.grade().breakdown))] == next(iter(env.grade().breakdown.values()))
    # The prose reply of both scripts, and pii's quote of text that is not in the window.
    assert metrics["unreadable_replies"] == (2 if task_id.startswith("pii") else 1)


def test_feedback_names_the_unreadable_reply_then_clears() -> None:
    episode = EnvEpisode("information_integrity/easy-v3", seed=1)
    episode.step("no json here")
    assert "Your last action was rejected" in str(episode.user_message())
    episode.step(integrity_script([{"role": "user", "content": episode.user_message()}]))
    assert "Your last action was rejected" not in str(episode.user_message())


def test_selective_verification_sends_the_picture_or_says_it_cannot() -> None:
    with_picture = EnvEpisode("selective_verification/balanced-v3", seed=3)
    content = with_picture.user_message()
    assert isinstance(content, list)
    assert content[1]["image_url"]["url"] == with_picture.observation.image
    without = EnvEpisode("selective_verification/balanced-v3", seed=3, images=False)
    text = without.user_message()
    assert isinstance(text, str) and _NO_IMAGE in text and without.observation.claim in text
    result = without.step('{"verdict": "ABSTAIN"}')
    assert result.reward == 0.8 and without.done
    assert without.metrics()["steps"] == 1
