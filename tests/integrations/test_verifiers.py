"""The verifiers v1 tasksets, run by verifiers' own ``vf-eval``, against the in-process environments.

Each test runs ``vf-eval`` (null harness, subprocess runtime) against a model endpoint on
127.0.0.1, reads the traces it wrote, and replays every trace's replies in-process: the ``llm``
agent (its real openai client, talking to a stub that returns exactly those replies) plays the
environment built with ``integrity_gym.make``. The reward of each trace must equal the
environment's, and the user messages the taskset showed must equal the agent's. The model is a
script (replies chosen to hit answered, abstained, repaired and unreadable answers, and every
kind of action) or the bundled tiny LLM.

Needs the ``verifiers`` extra (skipped without it; a failure with IGYM_REQUIRE_SERVICES=1).
verifiers' null harness is a small chat program that ``uv`` prepares from PyPI on its first run
(then cached), so that first run needs PyPI.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_service
from tests.integrations.replay import integrity_script, pii_script, replay
from tests.integrations.scripted_llm import scripted_llm, text

pytestmark = pytest.mark.slow
VF_EVAL = Path(sys.executable).with_name("vf-eval")
ROOT = Path(__file__).resolve().parents[2]


def require_verifiers() -> None:
    available = importlib.util.find_spec("verifiers") is not None and VF_EVAL.exists()
    require_service(available, "verifiers (pip install -e '.[verifiers]')")


def vf_eval(
    taskset: str, base_url: str, out: Path, *options: str, model: str = "scripted", timeout: float = 600
) -> list[dict[str, Any]]:
    """Run ``vf-eval`` on ``taskset``; return the first trace of every episode it wrote."""
    command = [
        str(VF_EVAL), taskset,
        "--env.agent.harness.id", "null", "--env.agent.runtime.type", "subprocess",
        "--client.base-url", base_url, "--model", model, "--no-push", "--output-dir", str(out),
        *options,
    ]  # fmt: skip
    # As a user runs it, from the activated environment: verifiers finds uv (the extra's) on PATH.
    env = {**os.environ, "PATH": f"{VF_EVAL.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(command, cwd=out, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"vf-eval exited {proc.returncode}:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    files = list(out.rglob("traces.jsonl"))
    assert len(files) == 1, files
    episodes = [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]
    traces = [episode["traces"][0] for episode in episodes]
    for trace in traces:
        assert trace["errors"] == [], trace["errors"]
    return traces


def conversation(trace: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The system and user messages, and the assistant replies, of a trace, in order."""
    messages = [node["message"] for node in trace["nodes"]]
    users = [text(m["content"]) for m in messages if m["role"] in ("system", "user")]
    replies = [text(m["content"]) for m in messages if m["role"] == "assistant"]
    return users, replies


# --------------------------------------------------------------------------- selective verification
SELECTIVE_REPLIES = (
    '{"verdict": "SUPPORTED", "confidence": 0.9}',
    '{"verdict": "REFUTED", "confidence": 0.65}',
    '{"verdict": "ABSTAIN"}',
    "```json\n{'Verdict': 'supported', 'confidence': '70%'}\n```",
    "I think the object is there.",
    '{"verdict": "SUPPORTED", "confidence": 0.2} {"verdict": "REFUTED", "confidence": 0.9}',
)


def cycling(replies: tuple[str, ...]) -> Any:
    counter = itertools.count()
    lock = threading.Lock()

    def script(messages: list[dict[str, Any]]) -> str:
        with lock:
            return replies[next(counter) % len(replies)]

    return script


def check_selective(
    trace: dict[str, Any], config: dict[str, Any], images: bool = False
) -> tuple[str, float, dict[str, float]]:
    """Assert the trace's reward and metrics are the in-process environment's; return (reply, reward, metrics)."""
    data = trace["task"]["data"]
    users, replies = conversation(trace)
    assert len(replies) == 1
    env, [result], sent = replay(data["task_id"], data["index"], replies, config=config, images=images)
    if images:  # the picture went to the model as an image part, the same picture as in-process
        [user] = [node["message"] for node in trace["nodes"] if node["message"]["role"] == "user"]
        assert user["content"][1]["image_url"]["url"] == env.observation().image
    assert env.observation().claim in users[1]
    assert users == sent
    assert trace["rewards"]["proper_score"]["score"] == result.reward
    expected = {name: float(value) for name, value in result.info["trace_metrics"].items()}
    assert {k: trace["metrics"][k] for k in expected} == expected
    return replies[0], result.reward, expected


def test_selective_verification_reward_is_the_environment_reward(tmp_path: Path) -> None:
    require_verifiers()
    requests: list[dict[str, Any]] = []
    with scripted_llm(cycling(SELECTIVE_REPLIES), requests) as url:
        traces = vf_eval(
            "selective-verification-v1", url, tmp_path,
            "--env.taskset.split", "adversarial", "--env.taskset.task.abstain-reward", "0.85",
            "--env.taskset.num-tasks", "6", "--max-concurrent", "2",
        )  # fmt: skip
    assert len(traces) == 6
    config = {"split": "adversarial", "num_tasks": 6, "abstain_reward": 0.85}
    rewards = [check_selective(trace, config, images=True) for trace in traces]
    pictures = [part for r in requests for part in r["messages"][-1]["content"] if part["type"] == "image_url"]
    assert len(pictures) == 6 and all(p["image_url"]["url"].startswith("data:image/png;base64,") for p in pictures)
    assert all(trace["task"]["data"]["task_id"] == "selective_verification/adversarial-v3" for trace in traces)
    assert all("0.8500" in trace["task"]["data"]["system_prompt"] for trace in traces)  # told what it is paid
    assert {reply for reply, _, _ in rewards} == set(SELECTIVE_REPLIES)
    assert any(reward == 0.85 and m["abstained"] == 1 for _, reward, m in rewards)
    assert any(reward == 0.0 and m["malformed"] == 1 for _, reward, m in rewards)
    assert any(m["needed_repair"] == 1 for _, _, m in rewards)


def test_the_shipped_config_constrains_replies_to_the_answer_schema(tmp_path: Path) -> None:
    require_verifiers()
    config = ROOT / "src/integrity_gym/integrations/verifiers/configs/selective-verification-v1.toml"
    requests: list[dict[str, Any]] = []
    with scripted_llm(cycling(SELECTIVE_REPLIES[:1]), requests) as url:
        [trace] = vf_eval(
            "selective-verification-v1", url, tmp_path, "--env.taskset.num-tasks", "1", "--env.taskset.images", "false",
            "@", str(config),
        )  # fmt: skip
    [request] = requests
    schema = request["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["verdict"]["enum"] == ["SUPPORTED", "REFUTED", "ABSTAIN"]
    assert request["max_tokens"] == 48
    check_selective(trace, {"num_tasks": 1})


def test_a_dominated_abstain_reward_is_refused_before_any_rollout() -> None:
    require_verifiers()
    from verifiers.v1 import resolve_env_config

    with pytest.raises(ValueError, match="dominated under the brier rule"):
        resolve_env_config({"taskset": {"id": "selective-verification-v1", "task": {"abstain_reward": 0.75}}})
    config = resolve_env_config({"taskset": {"id": "selective-verification-v1", "split": "popular"}})
    assert config.taskset.task_id == "selective_verification/popular-v3"


def test_the_threshold_options_reach_the_environment(tmp_path: Path) -> None:
    require_verifiers()
    with scripted_llm(cycling(SELECTIVE_REPLIES), []) as url:
        traces = vf_eval(
            "selective-verification-v1", url, tmp_path,
            "--env.taskset.variant", "text", "--env.taskset.risk-thresholds", "[0.6, 0.9]",
            "--env.taskset.task.brier-weight", "0.3", "--env.taskset.num-tasks", "6", "--max-concurrent", "2",
        )  # fmt: skip
    assert len(traces) == 6
    assert all(trace["task"]["data"]["task_id"] == "selective_verification/threshold_text-v1" for trace in traces)
    config = {"variant": "text", "num_tasks": 6, "risk_thresholds": (0.6, 0.9), "brier_weight": 0.3}
    rewards = [check_selective(trace, config) for trace in traces]
    # check_selective replayed every reply in an environment built with these options and found the same
    # prompts and rewards; every item states its own t from the range the option set.
    stated = [re.search(r"t = (0\.\d\d)\.", trace["task"]["data"]["system_prompt"]) for trace in traces]
    assert all(m is not None and 0.6 <= float(m[1]) <= 0.9 for m in stated)
    assert any(m["abstained"] for _, _, m in rewards) and any(m["answered"] for _, _, m in rewards)


def test_threshold_options_pick_the_threshold_task_and_refuse_what_does_not_apply() -> None:
    require_verifiers()
    from verifiers.v1 import resolve_env_config

    def taskset(**options: Any) -> Any:
        return resolve_env_config({"taskset": {"id": "selective-verification-v1", **options}}).taskset

    assert taskset(risk_thresholds=[0.5, 0.95]).task_id == "selective_verification/threshold_balanced-v1"
    # No threshold task of that split is registered: its own task, every item stating a threshold.
    random = taskset(split="random", risk_thresholds=[0.5, 0.95])
    assert random.task_id == "selective_verification/random-v3" and random.env_config()["risk_thresholds"]
    with pytest.raises(ValueError, match="apply to threshold tasks only"):
        taskset(task={"brier_weight": 0.3})
    with pytest.raises(ValueError, match="scoring_rule and abstain_reward apply to the flat-payoff tasks"):
        taskset(risk_thresholds=[0.5, 0.95], task={"abstain_reward": 0.85})


# --------------------------------------------------------------------------- multi-turn
#: taskset -> (its default task, the script, its default reset options, replies the script makes unreadable)
MULTI_TURN = {
    # A quote that is not in the window cannot be located: unreadable, like the prose reply.
    "pii-redaction-v1": (
        "pii_redaction/gdpr_contract_easy-v4",
        pii_script,
        {"source": "generated", "partition": "eval"},
        2,
    ),
    "information-integrity-v1": (
        "information_integrity/easy-v3",
        integrity_script,
        {"source": "generated", "partition": "eval"},
        1,
    ),
}


def check_multi_turn(trace: dict[str, Any], task_id: str, options: dict[str, Any]) -> Any:
    """Assert the trace's reward and messages are what the in-process environment gives; return the env."""
    data = trace["task"]["data"]
    assert data["task_id"] == task_id and data["options"] == options
    users, replies = conversation(trace)
    env, results, sent = replay(task_id, data["seed"], replies, options=options)
    assert len(results) == len(replies) == trace["metrics"]["steps"]
    assert users == sent  # the instructions and every observation as the llm agent words them, feedback included
    assert trace["rewards"]["grade"]["score"] == env.grade().score
    assert trace["metrics"]["step_reward_sum"] == pytest.approx(sum(r.reward for r in results), abs=1e-12)
    assert trace["metrics"]["finished"] == float(env.done)
    return env


@pytest.mark.parametrize("taskset", sorted(MULTI_TURN))
def test_multi_turn_reward_is_the_environment_grade(tmp_path: Path, taskset: str) -> None:
    require_verifiers()
    task_id, script, options, unreadable = MULTI_TURN[taskset]
    with scripted_llm(script) as url:
        traces = vf_eval(taskset, url, tmp_path, "--env.taskset.num-tasks", "2", "--env.taskset.seed", "3")
    assert sorted(t["task"]["data"]["seed"] for t in traces) == [3, 4]
    for trace in traces:
        env = check_multi_turn(trace, task_id, options)
        assert env.done  # the scripted episodes end themselves (FINISH, decide)
        assert trace["metrics"]["unreadable_replies"] == unreadable


def test_multi_turn_options_reach_the_environment(tmp_path: Path) -> None:
    require_verifiers()
    options = {"source": "gold", "partition": "eval", "difficulty": "hard"}
    with scripted_llm(integrity_script) as url:
        traces = vf_eval(
            "information-integrity-v1", url, tmp_path,
            "--env.taskset.num-tasks", "1", "--env.taskset.source", "gold", "--env.taskset.difficulty", "hard",
            "--env.taskset.max-turns", "2",
        )  # fmt: skip
    [trace] = traces
    env = check_multi_turn(trace, "information_integrity/easy-v3", options)
    assert trace["metrics"]["steps"] == 2 and not env.done  # capped before deciding
    assert env.state().difficulty == "hard"


# --------------------------------------------------------------------------- the bundled tiny LLM
def test_every_taskset_runs_against_the_tiny_llm(tmp_path: Path, tiny_llm_url: str) -> None:
    """vf-eval on each taskset with SmolLM2-135M served offline: a few items, short replies, every reward checked."""
    require_verifiers()
    bounded = ("--sampling.max-tokens", "48", "--sampling.temperature", "0", "--max-concurrent", "2")
    model = "SmolLM2-135M-Instruct"
    out = tmp_path / "selective"
    out.mkdir()
    traces = vf_eval(
        "selective-verification-v1", tiny_llm_url, out,
        "--env.taskset.num-tasks", "2", "--env.taskset.images", "false", *bounded, model=model, timeout=900,
    )  # fmt: skip
    assert len(traces) == 2
    for trace in traces:
        check_selective(trace, {"num_tasks": 2})
    for taskset, (task_id, _, options, _) in sorted(MULTI_TURN.items()):
        out = tmp_path / taskset
        out.mkdir()
        traces = vf_eval(
            taskset, tiny_llm_url, out, "--env.taskset.num-tasks", "1", "--env.taskset.max-turns", "2", *bounded,
            model=model, timeout=900,
        )  # fmt: skip
        [trace] = traces
        check_multi_turn(trace, task_id, options)
        assert 1 <= trace["metrics"]["steps"] <= 2


def test_multi_turn_task_names_resolve_and_unknown_ones_are_refused() -> None:
    require_verifiers()
    from verifiers.v1 import resolve_env_config

    config = resolve_env_config({"taskset": {"id": "pii-redaction-v1", "task_name": "security_logs_hard"}})
    assert config.taskset.task_id == "pii_redaction/security_logs_hard-v4"
    config = resolve_env_config({"taskset": {"id": "information-integrity-v1"}})
    assert config.taskset.task_id == "information_integrity/easy-v3"
    with pytest.raises(ValueError, match="'nope' is not a task of information_integrity; its tasks: information"):
        resolve_env_config({"taskset": {"id": "information-integrity-v1", "task_name": "nope"}})
