from __future__ import annotations

import json

import pytest

from integrity_gym import make
from integrity_gym.agents import make_agent
from integrity_gym.agents.llm import LLMAgent, LLMCallError, LLMSettings
from tests.agents.openai_stub import completion, error, openai_stub


def settings(url: str, **over: object) -> LLMSettings:
    return LLMSettings.from_env({"API_BASE_URL": url, "MODEL_NAME": "stub", "REQUEST_TIMEOUT_S": "5"}, **over)


def test_settings_come_from_the_reference_variables_and_hide_the_key() -> None:
    s = LLMSettings.from_env(
        {"API_BASE_URL": "http://x/v1", "MODEL_NAME": "m", "HF_TOKEN": "secret", "TEMPERATURE": "0.7",
         "OPENAI_SEED": "7", "REQUEST_TIMEOUT_S": "12", "INFERENCE_MAX_STEPS": "9", "OPENAI_MAX_RETRIES": "3",
         "LLM_IMAGES": "0"}
    )  # fmt: skip
    assert (s.api_base_url, s.model_name, s.api_key, s.temperature, s.seed, s.timeout_s, s.max_steps, s.retries) == (
        "http://x/v1", "m", "secret", 0.7, 7, 12.0, 9, 3)  # fmt: skip
    assert not s.images
    assert "secret" not in json.dumps(s.public()) and "secret" not in repr(s)
    assert "secret" not in json.dumps(s.as_env_vars())
    assert LLMSettings.from_env({"OPENAI_API_KEY": "k2"}).api_key == "k2"
    defaults = LLMSettings.from_env({})
    assert defaults.temperature == 0.0 and defaults.response_format == "auto"
    with pytest.raises(ValueError, match="temperature"):
        LLMSettings.from_env({"TEMPERATURE": "hot"})


@pytest.mark.parametrize(
    "settings",
    [
        {},
        {"seed": None, "max_steps": 4, "prefill": '{"verdict": ', "images": False, "temperature": 0.35},
        {"seed": 0, "response_format": "none", "retries": 0, "timeout_s": 1.5},
        {"conversation": True, "prefill": '{"type": "'},
    ],
)
def test_the_variables_written_read_back_as_the_same_settings(settings: dict[str, object]) -> None:
    # Kills: a seed of None written as nothing (read back as 42), a field left out of the inverse.
    s = LLMSettings.from_env({}, **settings)
    assert LLMSettings.from_env(s.as_env_vars()) == s


def test_each_step_sends_a_strict_schema_and_records_tokens_and_latency() -> None:
    env = make("information_integrity/easy-v3")
    obs = env.reset(seed=2)
    claim = obs.claims[0].id
    reply = json.dumps({"type": "verify_claim", "target": claim, "decision": "allow", "reasoning": ""})
    with openai_stub([completion(reply, 120, 30)]) as (url, stub):
        agent = LLMAgent(env, 0, settings=settings(url))
        action = agent.act(obs)
        record = agent.pop_step_record()
    assert action == {"type": "verify_claim", "claim_id": claim}
    request = stub.requests[0]
    assert request["model"] == "stub" and request["temperature"] == 0.0 and request["seed"] == 42
    schema = request["response_format"]["json_schema"]["schema"]
    assert request["response_format"]["type"] == "json_schema" and schema["additionalProperties"] is False
    assert record["prompt_tokens"] == 120 and record["completion_tokens"] == 30 and record["latency_s"] >= 0
    assert record["parse"] == "ok" and record["attempts"] == 1
    assert agent.pop_step_record() is None
    assert env.step(action).info["error"] is None


@pytest.mark.parametrize("conversation", [False, True])
def test_conversation_mode_sends_the_whole_episode_and_the_default_each_observation_alone(
    conversation: bool,
) -> None:
    # Kills: history kept without the mode (or dropped with it), the reply's prefill missing from its turn,
    # a later observation's system message replacing the first, the feedback left out of the next turn.
    env = make("information_integrity/easy-v3")
    obs = env.reset(seed=2)
    prefill = '{"type": "'
    replies = ['verify_claim", "target": "claim_1"}', "no idea", 'decide", "decision": "allow"}']
    over = {"prefill": prefill, "conversation": conversation}
    with openai_stub([completion(r) for r in replies]) as (url, stub):
        agent = LLMAgent(env, 0, settings=settings(url, **over))
        users = []
        for _ in replies:
            users.append(agent.adapter.user(obs, agent._feedback))
            result = env.step(agent.act(obs))
            agent.observe(result)
            obs = result.observation
    sent = [r["messages"] for r in stub.requests]
    system = {"role": "system", "content": agent.adapter.system(env.spec, env.reset(seed=2))}
    start = {"role": "assistant", "content": prefill}
    for k, messages in enumerate(sent):
        earlier = [
            turn for u, r in zip(users[:k], replies[:k], strict=True)
            for turn in ({"role": "user", "content": u}, {"role": "assistant", "content": prefill + r})
        ] if conversation else []  # fmt: skip
        assert messages == [system, *earlier, {"role": "user", "content": users[k]}, start]
    assert "rejected" in users[2] or "no JSON" in users[2]


def test_a_malformed_reply_becomes_a_rejected_penalised_step() -> None:
    env = make("pii_redaction/gdpr_contract_easy-v4")
    obs = env.reset(seed=0)
    with openai_stub([completion("I would redact the name, I think.")]) as (url, _):
        agent = LLMAgent(env, 0, settings=settings(url))
        action = agent.act(obs)
        record = agent.pop_step_record()
    assert record["parse"] == "malformed" and "no JSON object" in record["parse_error"]
    result = env.step(action)
    assert result.info["error"] and result.reward < 0 and not result.done
    agent.observe(result)
    assert agent._feedback == record["parse_error"]  # says more than the env's rejection of raw text


def test_transient_errors_are_retried_then_fail_the_episode_clearly() -> None:
    env = make("selective_verification/text-v3")
    obs = env.reset(seed=0)
    good = completion('{"verdict": "SUPPORTED", "confidence": 0.8}')
    with openai_stub([error(503, "busy"), ("sleep", 1.5), good]) as (url, stub):
        agent = LLMAgent(env, 0, settings=settings(url, timeout_s=0.5, retries=2))
        text = agent.act(obs)
        assert agent.pop_step_record()["attempts"] == 3
    assert json.loads(text) == {"verdict": "SUPPORTED", "confidence": 0.8}  # passed raw to the env
    assert env.step(text).info["error"] is None
    with openai_stub([error(500, "down")] * 3) as (url, _):
        agent = LLMAgent(env, 0, settings=settings(url, retries=1))
        with pytest.raises(LLMCallError, match="500"):
            agent.act(obs)
    with openai_stub([error(401, "bad key")]) as (url, stub):
        with pytest.raises(LLMCallError, match="401"):
            LLMAgent(env, 0, settings=settings(url, retries=3)).act(obs)
        assert len(stub.requests) == 1  # not transient: no retry


def test_retries_are_the_sdks_own_and_honour_retry_after() -> None:
    env = make("selective_verification/text-v3")
    obs = env.reset(seed=0)
    good = completion('{"verdict": "SUPPORTED", "confidence": 0.8}')
    with openai_stub([error(429, "slow down", {"Retry-After": "0"}), good]) as (url, stub):
        agent = LLMAgent(env, 0, settings=settings(url, retries=1))
        agent.act(obs)
        assert agent.pop_step_record()["attempts"] == 2 and len(stub.requests) == 2
    # A server asking to wait an hour is not hammered: the SDK gives up at once (a hand-written
    # back-off loop retried regardless).
    with openai_stub([error(429, "come back later", {"Retry-After": "3600"}), good]) as (url, stub):
        with pytest.raises(LLMCallError, match="429"):
            LLMAgent(env, 0, settings=settings(url, retries=3)).act(obs)
        assert len(stub.requests) == 1


def test_an_endpoint_without_json_schema_or_images_is_asked_again_more_simply() -> None:
    env = make("selective_verification/balanced-v3")
    obs = env.reset(seed=1)
    script = [
        error(500, "image input is not supported - hint: you may need to provide the mmproj"),
        error(400, "response_format json_schema is not supported"),
        completion('Answer: {"verdict": "REFUTED", "confidence": 0.75}'),
    ]
    with openai_stub(script) as (url, stub):
        agent = LLMAgent(env, 0, settings=settings(url, retries=0))  # llama.cpp refuses images with a 500
        agent.act(obs)
        record = agent.pop_step_record()
    first, second, third = stub.requests
    assert isinstance(first["messages"][1]["content"], list)
    assert isinstance(second["messages"][1]["content"], str) and "cannot be shown" in second["messages"][1]["content"]
    assert second["response_format"]["type"] == "json_schema" and third["response_format"] == {"type": "json_object"}
    assert record["images"] is False and record["response_format"] == "json_object" and record["parse"] == "repaired"


def test_make_agent_builds_the_llm_agent_from_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MODEL_NAME", "some/model")
    env = make("pii_redaction/gdpr_contract_easy-v4")
    agent = make_agent("llm", env, seed=0)
    assert isinstance(agent, LLMAgent) and agent.settings.model_name == "some/model"
