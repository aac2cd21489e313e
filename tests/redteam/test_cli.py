"""`igym redteam`: the full form prints the table, writes Markdown, and fails when an attack scores."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import integrity_gym.agents.redteam as redteam
from integrity_gym.agents.oracle import OracleAgent
from integrity_gym.agents.redteam import Attack
from integrity_gym.cli import app
from integrity_gym.core.registry import make

TASK = "information_integrity/easy-v3"


def test_table_and_markdown_name_every_attack(tmp_path: Path) -> None:
    out = tmp_path / "redteam.md"
    result = CliRunner().invoke(
        app, ["redteam", "--tasks", TASK, "--episodes", "2", "--audit-episodes", "2", "--markdown", str(out)]
    )
    assert result.exit_code == 0, result.stdout
    text = out.read_text()
    # The return-vs-grade audit runs by default and follows the attack table, a row per preset.
    audit = text.split("## Return vs grade", 1)[1]
    assert "| task | preset | policies | Spearman |" in audit and f"| `{TASK}` | default |" in audit
    for attack in redteam.attacks_for("information_integrity"):
        if attack.secret_only:  # not played in public mode, and the command says so
            assert f"| {attack.name} |" not in text and "not played" in result.stdout
        else:
            assert attack.name in result.stdout and f"| {attack.name} |" in text
    assert redteam.bar_for("information_integrity").why in text


class ReplayOracle:
    """Rebuilds the episode from the public code and plays the oracle on its copy (public mode only)."""

    def __init__(self, task_id: str, seed: int) -> None:
        self.copy = make(task_id)
        self.copy.reset(seed=seed)
        self.oracle = OracleAgent(self.copy, seed)

    def act(self, observation: object) -> object:
        action = self.oracle.act(observation)
        self.copy.step(action)
        return action


def test_an_attack_that_scores_fails_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    cheat = Attack("cheat", "replays the episode", lambda spec, seed: ReplayOracle(spec.id, seed))
    monkeypatch.setattr(redteam, "attacks_for", lambda env: (cheat,))
    result = CliRunner().invoke(app, ["redteam", "--tasks", TASK, "--episodes", "2", "--no-audit"])
    assert result.exit_code == 1 and "scored above their bar" in result.stdout


def test_an_unknown_task_pattern_is_a_clear_error() -> None:
    result = CliRunner().invoke(app, ["redteam", "--tasks", "nothing/*"])
    assert result.exit_code == 2 and "no task matches" in result.stdout


def test_attacks_play_as_bench_agents(tmp_path: Path) -> None:
    attack = redteam.attacks_for("information_integrity")[0]
    result = CliRunner().invoke(
        app, ["bench", "--tasks", TASK, "--agent", attack.name, "--episodes", "2", "--out", str(tmp_path / "run"),
              "--db", str(tmp_path / "db.sqlite")],
    )  # fmt: skip
    assert result.exit_code == 0, result.stdout
    assert (tmp_path / "run" / "summary.json").is_file()


def test_the_table_reads_at_80_columns_and_says_when_episodes_are_raised() -> None:
    result = CliRunner().invoke(
        app,
        ["redteam", "--tasks", "pii_redaction/hipaa*,selective_verification/text*", "--episodes", "1", "--no-audit"],
        env={"COLUMNS": "80"},
    )
    assert result.exit_code == 0, result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80 and "…" not in result.stdout
    assert "speaker_names_and_every_number" in result.stdout and "hipaa_medical_medium-v4" in result.stdout
    assert "selective_verification/text-v3: every attack is judged on at least 1000 episodes" in " ".join(
        result.stdout.split()
    )


def test_learned_plays_the_fitted_attacks_and_documents_their_features(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    from integrity_gym.agents.redteam.learned import learned_for

    out = tmp_path / "redteam.md"
    args = ["redteam", "--tasks", TASK, "--episodes", "2", "--no-audit", "--learned", "--train-episodes", "30"]
    result = CliRunner().invoke(app, [*args, "--markdown", str(out)])
    assert result.exit_code == 0, result.stdout
    text = out.read_text()
    for attack in learned_for("information_integrity"):
        assert attack.attack_name in result.stdout and f"| {attack.attack_name} |" in text
        assert f"- **{attack.attack_name}**: {attack.features}" in text
    assert "| task | form | train | eval | eval share seen in train |" in text
    assert f"| `{TASK}` | checked source text (claim, topic, outlet masked) | 24 | 24 | 0% |" in text
    plain = CliRunner().invoke(app, ["redteam", "--tasks", TASK, "--episodes", "2", "--no-audit"])
    assert "learned:" not in plain.stdout  # only asked for


def test_learned_without_scikit_learn_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "sklearn", None)
    result = CliRunner().invoke(app, ["redteam", "--tasks", TASK, "--episodes", "2", "--no-audit", "--learned"])
    assert result.exit_code == 2 and "integrity-gym[learned]" in " ".join(result.stdout.split())
