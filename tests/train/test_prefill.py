"""The llm agent's assistant prefix (prefill): sent as the reply's start, put back before reading."""

from __future__ import annotations

from integrity_gym import make
from integrity_gym.agents.llm import LLMAgent, LLMSettings
from tests.agents.openai_stub import completion, openai_stub

PREFIX = '{"verdict": "'


def test_prefill_is_read_from_the_environment_unstripped_and_recorded() -> None:
    s = LLMSettings.from_env({"LLM_PREFILL": PREFIX + " "})
    assert s.prefill == PREFIX + " "
    assert s.public()["prefill"] == PREFIX + " "
    assert s.as_env_vars()["LLM_PREFILL"] == PREFIX + " "
    assert LLMSettings.from_env({}).prefill is None
    assert "LLM_PREFILL" not in LLMSettings.from_env({}).as_env_vars()


def test_the_prefix_is_sent_as_the_last_assistant_message_and_put_back_in_front_of_the_reply() -> None:
    env = make("selective_verification/text-v3")
    obs = env.reset(seed=0)
    with openai_stub([completion('ABSTAIN", "confidence": 0.5}')]) as (url, stub):
        agent = LLMAgent(env, 0, settings=LLMSettings.from_env({"API_BASE_URL": url, "LLM_PREFILL": PREFIX}))
        text = agent.act(obs)
        record = agent.pop_step_record()
    request = stub.requests[0]
    assert request["messages"][-1] == {"role": "assistant", "content": PREFIX}
    assert [m["role"] for m in request["messages"]] == ["system", "user", "assistant"]
    assert "response_format" not in request  # a grammar would start a second object after the prefix
    assert text == PREFIX + 'ABSTAIN", "confidence": 0.5}'
    assert record["parse"] == "ok" and record["raw"] == text
    result = env.step(text)
    assert result.info["malformed"] is False and result.reward == obs.abstain_reward


def test_a_reply_that_repeats_the_prefix_is_not_doubled_and_no_prefill_sends_no_assistant_turn() -> None:
    env = make("selective_verification/text-v3")
    obs = env.reset(seed=0)
    whole = PREFIX + 'REFUTED", "confidence": 0.9}'
    with openai_stub([completion(whole), completion(whole)]) as (url, stub):
        agent = LLMAgent(env, 0, settings=LLMSettings.from_env({"API_BASE_URL": url, "LLM_PREFILL": PREFIX}))
        assert agent.act(obs) == whole
        plain = LLMAgent(env, 0, settings=LLMSettings.from_env({"API_BASE_URL": url}))
        assert plain.act(obs) == whole
    assert [m["role"] for m in stub.requests[1]["messages"]] == ["system", "user"]
    assert "response_format" in stub.requests[1]
