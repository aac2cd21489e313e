from __future__ import annotations

import pytest

from integrity_gym.bench import logs
from integrity_gym.bench.records import EpisodeRecord, StepRecord


def test_lines_have_the_reference_shape() -> None:
    assert logs.start_line("pii_redaction/x-v1", "pii_redaction", "m", 2, 7) == (
        "[START] task=pii_redaction/x-v1 env=pii_redaction model=m episode=2 seed=7"
    )
    assert logs.step_line(1, "REDACT(59,69,EMAIL)", 0.86, False, None) == (
        "[STEP] step=1 action=REDACT(59,69,EMAIL) reward=0.860 done=false error=null"
    )
    assert logs.end_line(True, 4, 0.7364, 2.94, [0.86, -0.3], None) == (
        "[END] success=true steps=4 score=0.736 return=2.940 rewards=0.860,-0.300"
    )


QUOTED = 'decide(flag) "quoted" and spaces'


@pytest.mark.parametrize(
    ("value", "action", "error"),
    [
        (QUOTED, QUOTED, QUOTED),
        ("a=b", "a=b", "a=b"),
        ("ünïcode text", "ünïcode text", "ünïcode text"),
        ("line\nbreak", "line\nbreak", "line\nbreak"),
        # The action is cut past 200 characters, the error past 300, each to its limit with "...".
        ("x" * 200, "x" * 200, "x" * 200),
        ("x" * 201, "x" * 197 + "...", "x" * 201),
        ("x" * 300, "x" * 197 + "...", "x" * 300),
        ("x" * 301, "x" * 197 + "...", "x" * 297 + "..."),
    ],
    ids=["quoted", "equals", "unicode", "newline", "200", "201", "300", "301"],
)
def test_awkward_values_round_trip(value: str, action: str, error: str) -> None:
    line = logs.step_line(3, value, -1.0, True, value)
    kind, fields = logs.parse_line(line)
    assert kind == "STEP"
    assert "\\u" not in line  # non-ASCII text stays readable in the log
    assert fields == {"step": "3", "action": action, "reward": "-1.000", "done": "true", "error": error}


def test_failed_episode_end_line_carries_the_error_and_nulls() -> None:
    kind, fields = logs.parse_line(logs.end_line(None, 0, None, 0.0, [], "LLMCallError: timed out"))
    assert kind == "END" and fields["success"] is None and fields["score"] is None
    assert fields["rewards"] == "-" and fields["error"] == "LLMCallError: timed out"
    _, fields = logs.parse_line(logs.end_line(None, 0, None, 0.0, [], "e" * 301))
    assert fields["error"] == "e" * 297 + "..."
    _, fields = logs.parse_line(logs.end_line(None, 0, None, 0.0, [], "e" * 300))
    assert fields["error"] == "e" * 300


def test_episode_block_and_bad_input() -> None:
    record = EpisodeRecord(
        task_id="t/a-v0", env="t", tier="easy", index=0, seed=5, agent="a", threshold=0.5, success=False, steps=1,
        score=0.25, total_return=-1.0,
        trajectory=[StepRecord(step=1, action="oops", action_text="RAW:oops", reward=-1.0, done=True, error="bad")],
    )  # fmt: skip
    lines = logs.episode_block(record, "model")
    assert lines == [
        "[START] task=t/a-v0 env=t model=model episode=0 seed=5",
        "[STEP] step=1 action=RAW:oops reward=-1.000 done=true error=bad",
        "[END] success=false steps=1 score=0.250 return=-1.000 rewards=-1.000",
    ]
    assert logs.episode_block(record.model_copy(update={"trajectory": [], "steps": 0, "error": "boom"}), "m")[-1] == (
        "[END] success=false steps=0 score=0.250 return=-1.000 rewards=- error=boom"
    )
    # A line read back from a file keeps its newline; the parser drops it.
    assert logs.parse_line(lines[0] + "\n") == logs.parse_line(lines[0])
    with pytest.raises(ValueError, match="not a run-log line"):
        logs.parse_line("hello")
    with pytest.raises(ValueError, match="kind"):
        logs.format_line("MIDDLE", {})
