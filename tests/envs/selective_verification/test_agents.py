import numpy as np
import pytest

import integrity_gym
from integrity_gym.agents import make_agent
from integrity_gym.agents.heuristic.selective_verification import (
    HeuristicAgent,
    calibration_tables,
    fit_isotonic,
    honest_answer,
    table_name,
)
from integrity_gym.envs.selective_verification.env import SelectiveVerificationEnv
from integrity_gym.envs.selective_verification.tasks import TASKS


def play(task: str, agent_name: str, n: int, **config: object) -> list[integrity_gym.Grade]:
    env = integrity_gym.make(task, num_tasks=n, **config)
    agent = make_agent(agent_name, env)
    grades = []
    for seed in range(n):
        obs = env.reset(seed=seed)
        env.step(agent.act(obs))
        grades.append(env.grade())
    return grades


@pytest.mark.parametrize("name", ["heuristic", "blind", "random", "oracle", "noop"])
def test_every_agent_name_builds_for_image_tasks(name: str) -> None:
    env = integrity_gym.make("selective_verification/random-v3")
    obs = env.reset(seed=0)
    action = make_agent(name, env).act(obs)
    assert env.step(action).done


def test_posterior_agent_needs_a_text_task() -> None:
    with pytest.raises(ValueError, match="text task"):
        make_agent("posterior", integrity_gym.make("selective_verification/balanced-v3"))
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("psychic", integrity_gym.make("selective_verification/balanced-v3"))


def test_honest_answer_abstains_below_q_star() -> None:
    assert honest_answer(0.6, 0.7236).verdict == "ABSTAIN"
    assert honest_answer(0.2, 0.7236).model_dump() == {"verdict": "REFUTED", "confidence": 0.8}
    assert honest_answer(0.9, 0.7236).model_dump() == {"verdict": "SUPPORTED", "confidence": 0.9}


def test_heuristic_looks_at_the_picture() -> None:
    env = integrity_gym.make("selective_verification/balanced-v3", num_tasks=30)
    agent = HeuristicAgent(env.spec)
    probs, labels = [], []
    for seed in range(30):
        obs = env.reset(seed=seed)
        probs.append(agent.probability(obs))
        labels.append(env.state().item.label)
    p, y = np.array(probs), np.array(labels)
    auc = np.mean([(a > b) + 0.5 * (a == b) for a in p[y] for b in p[~y]])
    assert auc > 0.75  # the blind prior is near 0.5 here: the gain comes from the picture
    assert np.mean((p >= 0.5) == y) > 0.7


def test_calibration_tables_cover_image_tasks_and_are_monotone() -> None:
    tables = calibration_tables()
    image_tasks = [t for t in TASKS if t.config.get("variant", "image") == "image"]
    assert set(tables) == {t.name for t in image_tasks if "risk_thresholds" not in t.config}
    # A threshold task asks the items of a flat-payoff task and reads its table.
    assert table_name(integrity_gym.get_spec("selective_verification/threshold_balanced")) == "balanced"
    assert table_name(integrity_gym.get_spec("selective_verification/threshold_adversarial")) == "adversarial"
    assert all(table_name(t) in tables for t in image_tasks)
    for table in tables.values():
        assert np.all(np.diff(table["scores"]) > 0) and np.all(np.diff(table["probs"]) >= 0)
        assert table["probs"][0] > 0 and table["probs"][-1] < 1


def test_isotonic_fit_recovers_a_known_calibration() -> None:
    rng = np.random.default_rng(0)
    scores = rng.uniform(0, 1, 4000)
    labels = rng.random(4000) < scores  # P(label | score) = score
    table = fit_isotonic(scores.tolist(), labels.tolist())
    assert np.all(np.diff(table["probs"]) >= 0)
    grid = np.linspace(0.1, 0.9, 9)
    assert np.abs(np.interp(grid, table["scores"], table["probs"]) - grid).max() < 0.1


def test_posterior_agent_is_optimal_on_text_and_beats_the_baselines() -> None:
    n = 100
    summaries = {
        name: SelectiveVerificationEnv.summarize(play("selective_verification/text-v3", name, n))
        for name in ("posterior", "heuristic", "blind")
    }
    assert summaries["posterior"]["regret"] == pytest.approx(0.0, abs=1e-12)
    assert summaries["posterior"]["probability_mae"] == pytest.approx(0.0, abs=1e-6)  # 6-decimal answers
    for other in ("heuristic", "blind"):
        assert summaries[other]["regret"] > 0  # type: ignore[operator]
        assert summaries["posterior"]["mean_expected_reward"] > summaries[other]["mean_expected_reward"]  # type: ignore[operator]


def test_blind_agent_mostly_abstains_on_balanced_but_answers_popular() -> None:
    balanced = SelectiveVerificationEnv.summarize(play("selective_verification/balanced-v3", "blind", 40))
    popular = SelectiveVerificationEnv.summarize(play("selective_verification/popular-v3", "blind", 40))
    assert balanced["coverage"] < 0.2  # type: ignore[operator]
    assert popular["coverage"] > 0.5 and popular["accuracy"] > 0.8  # type: ignore[operator]
