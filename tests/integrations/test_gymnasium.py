"""The Gymnasium adapter (integrity_gym.integrations.gymnasium) on every registered task.

Needs the ``gymnasium`` extra (the module is skipped without it).
"""

from __future__ import annotations

import json
import random
import warnings
from typing import Any

import pytest

gymnasium = pytest.importorskip("gymnasium")

from gymnasium.envs.registration import parse_env_id  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402

import integrity_gym  # noqa: E402
from integrity_gym.agents import make_agent  # noqa: E402
from integrity_gym.core.checker import FORBIDDEN_OBSERVATION_KEYS  # noqa: E402
from integrity_gym.integrations.gymnasium import (  # noqa: E402
    NAMESPACE,
    IntegrityGymEnv,
    encode_observation,
    register_envs,
    to_gym_id,
    to_task_id,
)

TASK_IDS = [spec.id for spec in integrity_gym.list_tasks()]
MULTI_STEP = [spec.id for spec in integrity_gym.list_tasks() if spec.max_steps > 1]
ONE_STEP = [spec.id for spec in integrity_gym.list_tasks() if spec.max_steps == 1]
INVALID = "this is not an action"


def gymnasium_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """Gymnasium's own warnings (its logger prefixes every one with ``WARN:``)."""
    return [str(w.message) for w in caught if "WARN:" in str(w.message)]


def keys(obj: Any) -> set[str]:
    """Every key of a JSON value, at any depth (as the contract test's ground-truth key search)."""
    if isinstance(obj, dict):
        return set(obj) | set().union(*(keys(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(keys(v) for v in obj))
    return set()


def play_heuristic(task_id: str, seed: int) -> tuple[list[float], dict[str, Any], list[dict[str, Any]]]:
    """A heuristic episode through the wrapper, actions sent as JSON text: rewards, last step, every info."""
    env = IntegrityGymEnv(task_id)
    agent = make_agent("heuristic", env.integrity_env, seed=seed)
    obs, _ = env.reset(seed=seed)
    rewards, infos = [], []
    while True:
        action = agent.act(env.decode_observation(obs)).model_dump_json()
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            return rewards, {"terminated": terminated, "truncated": truncated}, infos


def play_raw(task_id: str, seed: int) -> tuple[list[float], dict[str, Any]]:
    """The same episode on the raw environment: rewards and its grade."""
    env = integrity_gym.make(task_id)
    agent = make_agent("heuristic", env, seed=seed)
    obs = env.reset(seed=seed)
    rewards = []
    while not env.done:
        result = env.step(agent.act(obs))
        obs = result.observation
        rewards.append(result.reward)
    return rewards, env.grade().model_dump(mode="json")


@pytest.fixture(scope="module")
def registered() -> list[str]:
    return register_envs()


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_gymnasium_check_env_passes_without_a_warning(registered: list[str], task_id: str) -> None:
    """Kills: a reset without super().reset(seed) or that returns the observation alone, an observation
    outside its space, a 4-tuple step, an info dict shared between calls, a reset() after reset(seed)
    that is not reproducible, a missing render mode or fps, a spec that gymnasium cannot re-make."""
    env = gymnasium.make(to_gym_id(task_id))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped)
    assert not gymnasium_warnings(caught)
    env.close()


def test_every_task_is_registered_under_the_namespace(registered: list[str]) -> None:
    """Kills: a task left out of the registration, a registration that is not idempotent (an override
    warning on the second call), an entry point gymnasium cannot load, config kwargs not reaching the env."""
    assert registered == [to_gym_id(t) for t in TASK_IDS]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert register_envs() == registered
    assert not gymnasium_warnings(caught)
    for env_id in registered:
        assert env_id in gymnasium.registry
    env = gymnasium.make(to_gym_id("pii_redaction/gdpr_contract_easy-v4"), max_steps=3)
    assert isinstance(env.unwrapped, IntegrityGymEnv)
    assert env.unwrapped.integrity_env.spec.id == "pii_redaction/gdpr_contract_easy-v4"
    env.reset(seed=0)
    assert env.unwrapped.episode_info()["max_steps"] == 3


def test_module_prefix_registers_on_import() -> None:
    """Kills: integrity_gym.gymnasium not registering on import (gymnasium 1.x loads no plugins, so the
    ``module:id`` form is how ``gymnasium.make`` reaches the ids without an import of ours)."""
    env = gymnasium.make("integrity_gym.gymnasium:integrity_gym/information_integrity-easy-v3")
    obs, _ = env.reset(seed=1)
    assert obs in env.observation_space


def test_ids_map_both_ways() -> None:
    """Kills: a lossy or non-deterministic id mapping, an id gymnasium parses into another namespace,
    name or version, an unversioned id that does not mean the newest version, a reverse that accepts junk."""
    for task in TASK_IDS:
        spec = integrity_gym.get_spec(task)
        env_id = to_gym_id(task)
        assert env_id == f"{NAMESPACE}/{spec.env}-{spec.name}-v{spec.version}"
        assert parse_env_id(env_id) == (NAMESPACE, f"{spec.env}-{spec.name}", spec.version)
        assert to_task_id(env_id) == task
        assert to_gym_id(f"{spec.env}/{spec.name}") == to_gym_id(integrity_gym.get_spec(f"{spec.env}/{spec.name}").id)
    for junk in ["pii_redaction/gdpr_contract_easy-v4", "integrity_gym/pii_redaction-v4", "other/a-b-v1"]:
        with pytest.raises(ValueError, match="is not an id"):
            to_task_id(junk)


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_reset_gives_the_envs_first_observation_in_the_space(task_id: str) -> None:
    """Kills: an observation that is not the env's own (another item, a field dropped or added), the seed
    not passed through, a seeded first observation that differs between two builds, an info that is not
    the episode's public facts."""
    env = IntegrityGymEnv(task_id)
    result = env.reset(seed=7)
    assert isinstance(result, tuple) and len(result) == 2
    obs, info = result
    assert obs in env.observation_space
    raw = integrity_gym.make(task_id).reset(seed=7)
    assert env.decode_observation(obs) == raw
    assert json.loads(obs) == json.loads(raw.model_dump_json())
    assert IntegrityGymEnv(task_id).reset(seed=7)[0] == obs
    assert IntegrityGymEnv(task_id).reset(seed=8)[0] != obs
    spec = integrity_gym.get_spec(task_id)
    assert info == {"task_id": task_id, "tier": spec.tier, "success_threshold": spec.success_threshold,
                    "max_steps": info["max_steps"]}  # fmt: skip
    assert info["max_steps"] >= spec.max_steps


def test_unseeded_resets_follow_np_random() -> None:
    """Kills: an unseeded reset that picks its item outside np_random (not reproducible after reset(seed))."""
    env = IntegrityGymEnv("information_integrity/medium-v3")
    env.reset(seed=11)
    first = [env.reset()[0] for _ in range(3)]
    env.reset(seed=11)
    assert [env.reset()[0] for _ in range(3)] == first
    assert len(set(first)) == 3


def test_reset_options_reach_the_env_and_any_unicode_stays_in_the_space() -> None:
    """Kills: reset options not passed on (``task``, ``scenario_id``, the env's own), an observation that
    is not ASCII-escaped (non-ASCII, DEL and line separators would leave the printable-ASCII space)."""
    env = IntegrityGymEnv("pii_redaction/gdpr_contract_easy-v4")
    text = "Zoë Ørsted — 東京 ☃ 𝄞 tab\tDEL\x7f LS\u2028 wrote to zoe@example.com."
    document = {"id": "custom-1", "kind": "contract", "text": text, "entities": []}
    obs, _ = env.reset(seed=0, options={"document": document})
    assert obs in env.observation_space
    assert env.decode_observation(obs).visible_text == text
    assert env.observation_space.contains(obs) and not env.observation_space.contains(text)
    obs, info = env.reset(seed=0, options={"task": "pii_redaction/security_logs_hard-v4"})
    assert info["task_id"] == "pii_redaction/security_logs_hard-v4" == env.metadata["task_id"]
    assert env.decode_observation(obs) == integrity_gym.make("pii_redaction/security_logs_hard-v4").reset(seed=0)
    gold = IntegrityGymEnv("information_integrity/easy-v3")
    by_index, _ = gold.reset(seed=0, options={"scenario_id": 0})
    raw = integrity_gym.make("information_integrity/easy-v3").reset(seed=0, scenario_id=0)
    assert gold.decode_observation(by_index) == raw


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_heuristic_episode_terminates_with_the_raw_envs_grade(task_id: str) -> None:
    """Kills: a grade missing from the last info or other than the env's, a grade on an earlier step, an
    own end reported as truncation, rewards or action parsing that differ from the raw env."""
    rewards, end, infos = play_heuristic(task_id, seed=3)
    raw_rewards, raw_grade = play_raw(task_id, seed=3)
    assert end == {"terminated": True, "truncated": False}
    assert rewards == raw_rewards
    assert all(isinstance(r, float) for r in rewards)
    assert infos[-1]["grade"] == raw_grade
    assert all("grade" not in info for info in infos[:-1])


@pytest.mark.parametrize("task_id", MULTI_STEP)
def test_the_step_budget_truncates_and_only_truncates(task_id: str) -> None:
    """Kills: a budget end reported as terminated, terminated and truncated both true, truncation before the
    budget, no grade when the budget ends the episode, a malformed action that raises instead of costing a step."""
    env = IntegrityGymEnv(task_id, max_steps=3)
    env.reset(seed=0)
    budget = env.episode_info()["max_steps"]
    for step in range(1, budget + 1):
        _, reward, terminated, truncated, info = env.step(INVALID)
        assert info["error"] and reward < 0
        if step < budget:
            assert (terminated, truncated) == (False, False), step
    assert (terminated, truncated) == (False, True)
    assert info["grade"] == env.integrity_env.grade().model_dump(mode="json")


@pytest.mark.parametrize("task_id", MULTI_STEP)
def test_an_ending_action_on_the_last_budget_step_terminates(task_id: str) -> None:
    """Kills: truncation whenever the budget is used up, even by the action that ends the episode itself."""
    env = IntegrityGymEnv(task_id)
    env.reset(seed=2)
    oracle = make_agent("oracle", env.integrity_env)
    steps = 0
    while True:
        steps += 1
        *_, terminated, truncated, _ = env.step(oracle.act(None))
        if terminated or truncated:
            break
    tight = IntegrityGymEnv(task_id, max_steps=steps)
    tight.reset(seed=2)
    if tight.episode_info()["max_steps"] != steps:
        pytest.skip(f"{task_id} keeps a budget above the {steps} steps of its oracle episode")
    oracle = make_agent("oracle", tight.integrity_env)
    for _ in range(steps):
        *_, terminated, truncated, info = tight.step(oracle.act(None))
    assert (terminated, truncated) == (True, False)
    assert "grade" in info


@pytest.mark.parametrize("task_id", ONE_STEP)
def test_a_one_answer_task_ends_terminated_on_any_answer(task_id: str) -> None:
    """Kills: a one-step task's answer (an unreadable one included) reported as truncation by its budget of 1."""
    for action in [INVALID, json.dumps({"verdict": "ABSTAIN"})]:
        env = IntegrityGymEnv(task_id)
        env.reset(seed=0)
        *_, terminated, truncated, info = env.step(action)
        assert (terminated, truncated) == (True, False)
        assert info["grade"]["score"] == env.integrity_env.grade().score


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_a_malformed_action_is_handled_as_the_env_handles_it(task_id: str) -> None:
    """Kills: the wrapper raising on, repairing or otherwise re-judging an action the env itself rejects."""
    env = IntegrityGymEnv(task_id)
    env.reset(seed=0)
    raw = integrity_gym.make(task_id)
    raw.reset(seed=0)
    expected = raw.step("{not json")
    obs, reward, _, _, info = env.step("{not json")
    assert reward == expected.reward and info["error"] == expected.info["error"]
    assert env.decode_observation(obs) == expected.observation


@pytest.mark.parametrize("task_id", TASK_IDS)
def test_no_ground_truth_in_observations_or_info(task_id: str) -> None:
    """Kills: ``state()`` (or any of it) in an info, an info path the env declares as ground truth
    (``ITEM_FIELDS``, e.g. selective verification's trace_metrics.correct) kept, an observation built
    from hidden truth. Before every step the episode's unseen truth is altered (``Env.counterfactual``,
    the core's own proof for observations): the wrapper's observation and reset info must not change,
    nor the step's info besides the reward and, once it ends, the grade."""
    env = IntegrityGymEnv(task_id)
    obs, info = env.reset(seed=4)
    core = env.integrity_env
    cls = type(core)
    rng = random.Random(4)
    emitted: list[Any] = [json.loads(obs), info]
    while True:
        state = core.state()
        twin = IntegrityGymEnv(task_id)
        twin.integrity_env.load_state(cls.counterfactual(state, rng))
        assert encode_observation(twin.integrity_env.observation()) == obs
        assert twin.episode_info() == env.episode_info()
        action = cls.oracle_action(state).model_dump_json()
        obs, _, terminated, truncated, info = env.step(action)
        _, _, twin_terminated, twin_truncated, twin_info = twin.step(action)
        assert (twin_terminated, twin_truncated) == (terminated, truncated)
        public = {k: v for k, v in info.items() if k not in ("reward_breakdown", "grade")}
        assert public == {k: v for k, v in twin_info.items() if k not in ("reward_breakdown", "grade")}
        emitted += [json.loads(obs), info]
        if terminated or truncated:
            break
    for seen in emitted:
        assert not keys(seen) & FORBIDDEN_OBSERVATION_KEYS
    state_dump = json.dumps(core.state().model_dump(mode="json"), sort_keys=True)
    assert all(json.dumps(v, sort_keys=True) != state_dump for seen in emitted[1::2] for v in seen.values())


def test_schemas_and_help_are_in_the_metadata() -> None:
    """Kills: schemas missing from env.metadata, or schemas that do not describe the real observation and action."""
    jsonschema = pytest.importorskip("jsonschema")
    for task in TASK_IDS:
        env = IntegrityGymEnv(task)
        cls = type(env.integrity_env)
        assert env.metadata["action_schema"] == cls.action_type.model_json_schema()
        assert env.metadata["action_help"] == cls.action_help
        assert env.metadata["render_modes"] == ["ansi"]
        obs, _ = env.reset(seed=0)
        jsonschema.validate(json.loads(obs), env.metadata["observation_schema"])
        action = cls.noop_action(env.decode_observation(obs)).model_dump(mode="json", exclude_none=True)
        jsonschema.validate(action, env.metadata["action_schema"])


def test_render_modes() -> None:
    """Kills: ansi rendering other than the env's own text, rendering without a render mode, an unknown mode."""
    env = IntegrityGymEnv("information_integrity/easy-v3", render_mode="ansi")
    env.reset(seed=0)
    assert env.render() == env.integrity_env.render()
    quiet = IntegrityGymEnv("information_integrity/easy-v3")
    quiet.reset(seed=0)
    assert quiet.render() is None
    with pytest.raises(ValueError, match="render_mode"):
        IntegrityGymEnv("information_integrity/easy-v3", render_mode="human")


def test_info_is_fresh_even_where_the_env_reuses_its_own() -> None:
    """Kills: an info that is the env's own dict (a caller's change, or the ITEM_FIELDS drop, would alter
    the env's result, and two steps would share an object: check_env's data-reuse rule)."""
    env = IntegrityGymEnv("selective_verification/text-v3")
    env.reset(seed=0)
    core = env.integrity_env
    result = core.step(INVALID)
    core.step = lambda action: result  # type: ignore[method-assign]
    infos = [env.step(INVALID)[4] for _ in range(2)]
    assert infos[0] is not infos[1] and infos[0]["trace_metrics"] is not infos[1]["trace_metrics"]
    assert "correct" in result.info["trace_metrics"] and "correct" not in infos[0]["trace_metrics"]
