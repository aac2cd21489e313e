"""The end-of-episode explanation names what was missed, mislabelled and redacted for nothing."""

from __future__ import annotations

import integrity_gym
from integrity_gym.bench.runner import BenchConfig, run_bench

TASK = "pii_redaction/gdpr_contract_easy"


def test_the_explanation_names_entities_by_text_and_offsets() -> None:
    env = integrity_gym.make(TASK)
    env.reset(seed=0)
    first, second = env.state().document.entities[:2]
    wrong = "NAME" if first.label != "NAME" else "EMAIL"
    env.step({"action_type": "REDACT", "start": first.start, "end": first.end, "label": wrong})
    text = env.state().document.text
    lo = next(
        i for i in range(len(text) - 4) if not any(e.start < i + 4 and i < e.end for e in env.state().document.entities)
    )
    env.step({"action_type": "REDACT", "start": lo, "end": lo + 4, "label": "NAME"})
    env.step({"action_type": "FINISH"})
    explained = env.explain()
    assert (
        f"Wrong label (1): {first.text!r} at {first.start}-{first.end} redacted as {wrong}, is {first.label}"
        in explained
    )
    assert f"{second.label} {second.text!r} at {second.start}-{second.end}" in explained  # missed, named
    assert f"Matched no entity (1): {text[lo : lo + 4]!r} at {lo}-{lo + 4} as NAME" in explained
    assert "is below the threshold" in explained and "succeeded the" not in explained


def test_a_perfect_episode_lists_nothing_to_fix() -> None:
    env = integrity_gym.make(TASK)
    env.reset(seed=1)
    for e in env.state().document.entities:
        env.load_state(env.state().model_copy(update={"cursor_position": max(0, e.start - 10)}))
        env.step({"action_type": "REDACT", "start": e.start, "end": e.end, "label": e.label})
    env.step({"action_type": "FINISH"})
    explained = env.explain()
    assert explained.startswith("Score 1.000 reaches") and "Missed" not in explained and "Wrong label" not in explained


def test_every_recorded_episode_keeps_its_explanation(tmp_path: object) -> None:
    result = run_bench(bench=BenchConfig.build(tasks=TASK, agent="noop", episodes=1), out_dir=tmp_path)  # type: ignore[arg-type]
    (record,) = result.records
    assert record.explanation is not None and record.explanation.startswith("Score 0.250 is below")
    assert "Missed (" in record.explanation
