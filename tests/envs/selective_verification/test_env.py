import json
from pathlib import Path

import pytest

from integrity_gym.core import check_env
from integrity_gym.core.registry import TaskSpec
from integrity_gym.envs.selective_verification.env import SelectiveVerificationEnv
from integrity_gym.envs.selective_verification.generator import GeneratedSource, png_bytes
from integrity_gym.envs.selective_verification.models import VerificationAction
from integrity_gym.envs.selective_verification.tasks import TASKS

SPECS = {spec.name: spec for spec in TASKS}


def make(name: str = "balanced", **config: object) -> SelectiveVerificationEnv:
    return SelectiveVerificationEnv(SPECS[name], **config)


def test_tasks_cover_every_split_and_the_text_variant() -> None:
    assert {s.name for s in TASKS} == {"balanced", "random", "popular", "adversarial", "all", "text",
                                       "threshold_text", "threshold_balanced", "threshold_adversarial"}  # fmt: skip
    assert {s.tier for s in TASKS} == {"easy", "medium", "hard"}
    assert all(s.max_steps == 1 for s in TASKS)


def test_observation_states_the_rule_and_hides_the_answer() -> None:
    env = make()
    obs = env.reset(seed=0)
    assert obs.image and obs.image.startswith("data:image/png;base64,")
    assert "0.8000" in obs.system_prompt and "q* = 0.7236" in obs.system_prompt and "brier" in obs.system_prompt
    dumped = json.loads(obs.model_dump_json())
    assert not {"label", "answer", "scene", "true_probability"} & set(dumped)
    assert obs.threshold == pytest.approx(0.7236, abs=1e-4)


@pytest.mark.parametrize("name", ["balanced", "text"])
def test_check_env(name: str) -> None:
    check_env(make(name))


def test_raw_text_is_parsed_and_repair_recorded() -> None:
    env = make()
    env.reset(seed=4)
    label = env.state().item.label
    verdict = "SUPPORTED" if label else "REFUTED"
    result = env.step(f"Answer: ```json\n{{'verdict': '{verdict.lower()}', 'confidence': 0.9}}\n```")
    assert result.done and result.info["error"] is None and result.info["needed_repair"]
    assert result.reward == pytest.approx(1 - 0.1**2)
    metrics = result.info["trace_metrics"]
    assert metrics["answered"] == metrics["correct"] == metrics["needed_repair"] == 1
    assert metrics["confidence_sum"] == 0.9 and metrics["brier_sum"] == pytest.approx(0.01)
    grade = env.grade()
    assert grade.breakdown["needed_repair"] == 1.0 and grade.breakdown["correct"] == 1.0
    assert grade.score == pytest.approx(0.99)  # the grade is the proper reward
    # No single episode succeeds; the task's threshold is on the mean grade.
    assert not grade.success and grade.threshold == pytest.approx(SPECS["balanced"].success_threshold)


def test_malformed_answer_pays_zero_and_ends_the_episode() -> None:
    env = make()
    env.reset(seed=4)
    result = env.step("I am fairly sure there is one")
    assert result.done and result.reward == 0.0 and result.info["malformed"]
    assert "malformed" in result.info["error"]
    assert result.info["reward_breakdown"] == {"malformed": 0.0}
    state = env.state()
    assert state.answer is not None and state.answer.malformed and state.answer.raw
    grade = env.grade()
    assert grade.score == 0.0 and grade.breakdown["malformed"] == 1.0 and grade.breakdown["answered"] == 0.0


def test_structured_answer_without_confidence_is_malformed() -> None:
    env = make()
    env.reset(seed=1)
    result = env.step({"verdict": "SUPPORTED"})
    assert result.done and result.reward == 0.0 and result.info["malformed"]


def test_abstain_pays_the_flat_reward_and_grades_that_payoff() -> None:
    env = make()
    env.reset(seed=2)
    result = env.step(VerificationAction(verdict="ABSTAIN"))
    assert result.reward == 0.8 and result.info["reward_breakdown"] == {"abstain": 0.8}
    assert env.grade().score == pytest.approx(0.8) and not env.grade().success
    assert env.grade().breakdown["abstained"] == 1.0


def test_log_rule_and_custom_payoff() -> None:
    env = make(scoring_rule="log", abstain_reward=0.95, epsilon=0.01)
    obs = env.reset(seed=3)
    assert obs.scoring_rule == "log" and obs.abstain_reward == 0.95 and obs.epsilon == 0.01
    wrong = "REFUTED" if env.state().item.label else "SUPPORTED"
    result = env.step({"verdict": wrong, "confidence": 1.0})
    assert result.reward == pytest.approx(0.0)  # clipped at epsilon: the worst answer pays 0


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"split": "nope"}, "split: Input should be 'balanced'"),
        ({"partition": "test"}, "partition: Input should be 'train'"),
        ({"num_tasks": 0}, "num_tasks: Input should be greater than or equal to 1"),
        ({"abstain_reward": 0.7}, r"abstain_reward=0.7 is dominated under the brier rule"),
        ({"scoring_rule": "log", "abstain_reward": 0.9}, r"abstain_reward=0.9 is dominated under the log rule"),
        ({"epsilon": 0.0}, "epsilon: Input should be greater than 0"),
        ({"difficulty": "extreme"}, "difficulty: Input should be 'easy'"),
        ({"unknown_key": 1}, "unknown_key: Extra inputs are not permitted"),
        ({"source": "pope"}, "source='pope' needs pope_questions"),
    ],
)
def test_bad_config_is_a_value_error(config: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make(**config)


def test_reset_by_index_and_by_item_id() -> None:
    env = make(num_tasks=10)
    first = env.reset(scenario_id=7)
    again = env.reset(scenario_id=first.item_id)
    assert again == first
    assert env.reset(seed=17) == first  # seed picks index seed % num_tasks
    with pytest.raises(ValueError, match="out of range"):
        env.reset(scenario_id=10)
    with pytest.raises(ValueError, match="unknown item id"):
        env.reset(scenario_id="sv-nothing")


def test_state_round_trip_resumes_the_episode() -> None:
    env = make("adversarial")
    env.reset(seed=5)
    twin = make("adversarial")
    twin.load_state(json.loads(env.state().model_dump_json()))
    assert twin.observation() == env.observation()
    assert twin.step('{"verdict": "ABSTAIN"}').model_dump() == env.step('{"verdict": "ABSTAIN"}').model_dump()


def test_summarize_reports_dataset_metrics_and_blind_baseline() -> None:
    env = make("popular", num_tasks=40)
    grades = []
    for seed in range(40):
        env.reset(seed=seed)
        state = env.state()
        p = 0.9 if seed % 3 else 0.6
        verdict = "SUPPORTED" if state.item.label == (seed % 5 != 0) else "REFUTED"
        env.step({"verdict": verdict if seed % 7 else "ABSTAIN", "confidence": p})
        grades.append(env.grade())
    summary = SelectiveVerificationEnv.summarize(grades)
    for key in (
        "accuracy",
        "coverage",
        "abstain_rate",
        "ece",
        "smooth_ece",
        "brier",
        "aurc",
        "e_aurc",
        "mean_reward",
        "skill",
        "skill_ci_low",
        "blind_skill",
        "skill_over_blind_ci_high",
        "blind_mean_reward",
        "blind_accuracy",
        "ece_ci_low",
        "accuracy_ci_high",
    ):
        assert key in summary
    assert summary["coverage"] == pytest.approx(1 - summary["abstain_rate"])  # type: ignore[operator]
    assert summary["blind_accuracy"] > 0.6  # type: ignore[operator]  # popular: names alone answer most
    abstain_only = SelectiveVerificationEnv.summarize([env.grade()] * 0) == {"episodes": 0.0}
    assert abstain_only


def test_nothing_answered_gives_undefined_metrics() -> None:
    env = make()
    grades = []
    for seed in range(5):
        env.reset(seed=seed)
        env.step({"verdict": "ABSTAIN"})
        grades.append(env.grade())
    summary = SelectiveVerificationEnv.summarize(grades)
    assert summary["accuracy"] is None and summary["ece"] is None and summary["aurc"] is None
    assert summary["coverage"] == 0.0 and summary["mean_reward"] == pytest.approx(0.8)


def test_text_variant_grades_against_the_true_probability() -> None:
    env = make("text")
    obs = env.reset(seed=0)
    assert obs.modality == "text" and obs.image is None and obs.passage and "| place |" in obs.passage
    tp = env.state().item.true_probability
    assert tp is not None
    env.step({"verdict": "SUPPORTED", "confidence": tp})
    b = env.grade().breakdown
    assert b["probability_error"] == pytest.approx(0.0, abs=1e-12)
    assert b["true_probability"] == tp and b["expected_reward"] == pytest.approx(1 - tp * (1 - tp))
    assert "answered SUPPORTED" in env.explain() and "true with probability" in env.explain()


def test_a_malformed_answer_is_explained_once() -> None:
    env = make()
    env.reset(seed=0)
    env.step("maybe there is")
    text = env.explain()
    assert text.count("malformed answer") == 1 and "not a JSON object" in text and "0.800 for abstaining" in text


def test_render_shows_claim_picture_path_and_rule() -> None:
    env = make()
    env.reset(seed=0)
    text = env.render()
    assert "Claim: There" in text and "Picture (192x192): " in text and "ABSTAIN pays" in text
    path = Path(text.split("Picture (192x192): ")[1].splitlines()[0])
    assert path.read_bytes() == png_bytes(env.state().item)


def test_counterfactual_keeps_the_observation() -> None:
    import random

    env = make("adversarial")
    env.reset(seed=3)
    altered = SelectiveVerificationEnv.counterfactual(env.state(), random.Random(0))
    assert altered.item.label != env.state().item.label
    twin = make("adversarial")
    twin.load_state(altered)
    assert twin.observation() == env.observation()


def test_pope_loader_reads_question_files_and_images(tmp_path: Path) -> None:
    images = tmp_path / "val2014"
    images.mkdir()
    source = GeneratedSource("random", "all", seed=9)
    rows = []
    for i in range(24):
        item = source.item(i)
        name = f"COCO_val2014_{i // 6:012d}.png"
        (images / name).write_bytes(png_bytes(item))
        article = "an" if item.category[0] in "aeiou" else "a"
        rows.append(
            {
                "question_id": i,
                "image": name,
                "text": f"Is there {article} {item.category} in the image?",
                "label": "yes" if item.label else "no",
            }
        )
    qfile = tmp_path / "coco_pope_random.json"
    qfile.write_text("\n".join(json.dumps(r) for r in rows))
    env = make(source="pope", pope_questions=str(qfile), pope_images=str(images), partition="all", num_tasks=50)
    assert env.num_items == 24
    obs = env.reset(seed=5)
    assert obs.image and obs.claim.startswith("There is") and obs.image_width == 192
    assert env.state().item.label == rows[5]["label"].startswith("y") and env.state().item.split == "random"
    check_env(env)
    from integrity_gym.envs.selective_verification.pope import PopeSource

    parts = {}
    for partition in ("train", "eval"):
        try:
            parts[partition] = {it.image_path for it in PopeSource(qfile, images, partition).items}
        except ValueError:  # a tiny file may put every picture in one partition
            parts[partition] = set()
    assert not parts["train"] & parts["eval"] and len(parts["train"] | parts["eval"]) == 4
    with pytest.raises(ValueError, match="not found"):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"image": "missing.jpg", "text": "Is there a dog in the image?", "label": "no"}))
        make(source="pope", pope_questions=str(bad), pope_images=str(images), partition="all").reset(seed=0)


def test_spec_mismatch_is_refused() -> None:
    other = TaskSpec(
        env="pii_redaction",
        name="x",
        version=0,
        description="",
        tier="easy",
        success_threshold=0.5,
        max_steps=1,
        entry="integrity_gym.envs.selective_verification.env:SelectiveVerificationEnv",
    )
    with pytest.raises(ValueError, match="belongs to 'pii_redaction', not 'selective_verification'"):
        SelectiveVerificationEnv(other)


def test_pope_partition_keys_one_picture_the_same_in_both_file_formats(tmp_path: Path) -> None:
    from integrity_gym.envs.selective_verification.pope import PopeSource, picture_id

    images = tmp_path / "val2014"
    images.mkdir()
    pictures = [f"COCO_val2014_{i:012d}" for i in range(60)]
    rows = []
    for i, name in enumerate(pictures):
        (images / f"{name}.jpg").write_bytes(b"")  # the loader only checks that the file is there
        # POPE's own format names the file, the Hugging Face one the picture without extension.
        rows.append({"question_id": i, "image": f"{name}.jpg", "text": "Is there a dog in the image?", "label": "yes"})
        rows.append(
            {"question_id": i, "image_source": name, "question": "Is there a cat in the image?", "answer": "no"}
        )
    qfile = tmp_path / "coco_pope_popular.json"
    qfile.write_text("\n".join(json.dumps(r) for r in rows))
    where: dict[str, set[str]] = {}
    for partition in ("train", "eval"):
        for item in PopeSource(qfile, images, partition).items:
            where.setdefault(Path(item.image_path or "").stem, set()).add(partition)
    assert set(where) == set(pictures)
    assert all(len(parts) == 1 for parts in where.values())  # no picture on both sides
    assert {p for parts in where.values() for p in parts} == {"train", "eval"}
    assert picture_id("val2014/COCO_val2014_000000000001.JPG") == picture_id("COCO_val2014_000000000001")
