"""igym rescore: a stored run re-graded from its actions, bit for bit, without playing the agent again."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.record import RunRecord
from integrity_gym.bench.rescore import RescoreError, rescore_run
from integrity_gym.bench.runner import run_bench
from integrity_gym.cli.rescoring import rescore

GDPR = "pii_redaction/gdpr_contract_easy-v4"
INFO = "information_integrity/easy-v3"


def cli(*args: str) -> Any:
    """``igym rescore ARGS`` through a Typer app of its own (the command is registered in cli/__init__)."""
    app = typer.Typer()
    app.command()(rescore)
    app.command("unused")(lambda: None)  # two commands: Typer keeps the command's name as a sub-command
    return CliRunner().invoke(app, ["rescore", *args], env={"COLUMNS": "80"})


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run: the heuristic agent, 2 tasks x 3 episodes, in-process."""
    folder = tmp_path_factory.mktemp("rescore") / "run"
    # Seeds 4..6, not 0..2: a replay that resets with the episode's index instead of its seed must show.
    run_bench(bench=BenchConfig.build(tasks=f"{GDPR},{INFO}", agent="heuristic", episodes=3, seed=4), out_dir=folder)
    return folder


@pytest.fixture
def run(stored: Path, tmp_path: Path) -> Path:
    """A copy of the stored run that a test may change."""
    return Path(shutil.copytree(stored, tmp_path / "run"))


def edit_episodes(folder: Path, change: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    path = folder / "episodes.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in change(rows)))


def row(rows: list[dict[str, Any]], task_id: str, index: int) -> dict[str, Any]:
    return next(r for r in rows if r["task_id"] == task_id and r["index"] == index)


def digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def test_an_unchanged_run_regrades_bit_for_bit(run: Path) -> None:
    """Kills: a replay that rebuilds another item (seed, partition, config), skips or reorders actions, compares
    the score only or approximately, or re-grades fewer episodes than were stored."""
    report = rescore_run(run)
    stored = RunRecord.load(run).episodes
    assert len(report.regrades) == len(stored) == 6
    assert not report.moved and not report.diverged and not report.not_rescorable and report.returns_moved == 0
    # Every field of every record, grade, explanation, step rewards and return included, as written.
    assert [r.model_dump_json() for r in report.records] == [r.model_dump_json() for r in stored]
    assert (report.failed, report.missing, report.unreadable, report.spec_changed) == (0, 0, 0, {})
    result = cli(str(run), "--check")
    assert result.exit_code == 0, result.output
    assert "6 identical, 0 moved of 6 re-graded episodes" in result.output
    speed = next(line for line in result.output.splitlines() if "episodes/s" in line)
    print(speed)  # the measured speed (no timed assertion: the machine is shared)
    assert report.episodes_per_second > 0


def test_a_mutated_stored_grade_lists_exactly_the_episodes_that_moved(run: Path) -> None:
    """Kills: comparing the score only (a breakdown value moved by 1e-12, a success flag flipped), comparing with a
    tolerance, listing the wrong episode, or a --check that exits 0 when grades moved."""
    original: dict[str, Any] = {}

    def mutate(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        a = row(rows, GDPR, 1)
        original.update(score=a["score"])
        a["score"] = a["grade"]["score"] = 0.5
        b = row(rows, INFO, 2)
        name = next(iter(b["grade"]["breakdown"]))
        b["grade"]["breakdown"][name] += 1e-12
        c = row(rows, INFO, 0)
        c["success"] = c["grade"]["success"] = not c["success"]
        return rows

    edit_episodes(run, mutate)
    report = rescore_run(run)
    assert {(r.task_id, r.index) for r in report.moved} == {(GDPR, 1), (INFO, 2), (INFO, 0)}
    assert report.identical == 3
    gdpr = next(r for r in report.moved if r.task_id == GDPR)
    assert (gdpr.stored_score, gdpr.new_score) == (0.5, original["score"])
    info = next(r for r in report.moved if (r.task_id, r.index) == (INFO, 2))
    assert info.record.grade is not None
    assert list(info.breakdown_moved) == [next(iter(info.record.grade["breakdown"]))]
    result = cli(str(run), "--check")
    assert result.exit_code == 1
    assert "3 identical, 3 moved" in result.output and "0.500 →" in result.output
    assert "gdpr_contract_easy-v4" in result.output
    assert "yes → no" in result.output or "no → yes" in result.output
    as_json = json.loads(cli(str(run), "--json").output)
    assert sorted((m["task_id"], m["index"]) for m in as_json["moved"]) == sorted({(GDPR, 1), (INFO, 2), (INFO, 0)})
    assert cli(str(run)).exit_code == 0  # without --check, moved grades are a finding, not a failure


def test_another_preset_regrades_as_a_run_played_under_that_preset(stored: Path, tmp_path: Path) -> None:
    """Kills: a --preset that is ignored, applied to the rewards but not the grade, or that lists as moved an
    episode whose grade did not change."""
    bench = BenchConfig.build(tasks=f"{GDPR},{INFO}", agent="heuristic", episodes=3, seed=4,
                              env_config={"reward_preset": "reference"})  # fmt: skip
    played = run_bench(bench=bench, out_dir=tmp_path / "ref")
    stored_episodes = {r.key: r for r in RunRecord.load(stored).episodes}
    reference = {r.key: r for r in played.records}
    # The heuristic does not look at rewards: under either preset it takes the same actions.
    assert all([s.action for s in reference[k].trajectory] == [s.action for s in e.trajectory]
               for k, e in stored_episodes.items())  # fmt: skip
    before = digest(stored)
    report = rescore_run(stored, preset="reference")
    assert len(report.regrades) == 6 and not report.not_rescorable
    for r in report.regrades:
        ref = reference[(r.task_id, r.index)]
        assert r.record.grade == ref.grade and r.record.score == ref.score and r.new_return == ref.total_return
    expected = {k for k, e in stored_episodes.items() if e.grade != reference[k].grade}
    assert expected, "the reference preset grades these episodes differently"
    assert {(r.task_id, r.index) for r in report.moved} == expected
    assert digest(stored) == before  # nothing was written into the run


def test_a_task_no_longer_registered_is_reported_not_rescored(run: Path) -> None:
    """Kills: a crash (KeyError) on a task id the registry lost, or dropping its episodes silently."""
    retired = "pii_redaction/retired_task-v9"
    config = json.loads((run / "config.json").read_text())
    config["tasks"][0]["id"] = retired
    (run / "config.json").write_text(json.dumps(config))
    edit_episodes(run, lambda rows: [{**r, "task_id": retired} if r["task_id"] == GDPR else r for r in rows])
    report = rescore_run(run)
    (gone,) = report.not_rescorable
    assert (gone.task_id, gone.episodes) == (retired, 3) and "no longer registered" in gone.reason
    assert len(report.regrades) == report.identical == 3
    result = cli(str(run))
    assert result.exit_code == 0 and "not re-graded: pii_redaction/retired_task-v9, 3 episode(s)" in result.output
    assert cli(str(run), "--check").exit_code == 1  # a regression check cannot vouch for what it did not replay


def test_a_preset_an_environment_lacks_is_reported_per_task(run: Path) -> None:
    """Kills: a preset error that aborts the whole rescore instead of naming the task."""
    report = rescore_run(run, preset="no_such_preset")
    assert {n.task_id for n in report.not_rescorable} == {GDPR, INFO}
    assert all("under preset 'no_such_preset'" in n.reason for n in report.not_rescorable)
    assert report.regrades == []


def test_an_environment_without_presets_is_named(tmp_path: Path) -> None:
    """Kills: a raw config error (or a crash) for an environment that has no presets at all."""
    selective = "selective_verification/balanced-v3"
    run_bench(bench=BenchConfig.build(tasks=selective, agent="heuristic", episodes=1), out_dir=tmp_path / "run")
    (n,) = rescore_run(tmp_path / "run", preset="reference").not_rescorable
    assert (n.task_id, n.episodes) == (selective, 1) and "has no reward/grade presets" in n.reason


def test_failed_missing_and_unreadable_episodes_are_skipped_and_counted(run: Path) -> None:
    """Kills: re-grading a failed episode (it has no grade to compare), or not counting what was skipped."""

    def damage(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        failed = row(rows, INFO, 1)
        failed.update(error="RuntimeError: boom", score=None, success=None, grade=None)
        return [r for r in rows if (r["task_id"], r["index"]) != (GDPR, 2)]

    edit_episodes(run, damage)
    with (run / "episodes.jsonl").open("a") as fh:
        fh.write('{"task_id": "pii_redac')  # the last line of a killed run
    report = rescore_run(run)
    assert (report.failed, report.missing, report.unreadable) == (1, 1, 1)
    assert len(report.regrades) == report.identical == 4
    output = cli(str(run)).output
    assert "skipped 1 episode(s) failed when played" in output and "skipped 1 episode(s) missing" in output


def test_a_replay_that_departs_from_the_stored_trajectory_says_where(run: Path) -> None:
    """Kills: a replay that ignores the stored first observation, so a changed item passes as the same episode."""
    edit_episodes(run, lambda rows: [{**r, "seed": 40} if (r["task_id"], r["index"]) == (GDPR, 0) else r for r in rows])
    report = rescore_run(run)
    (departed,) = report.diverged
    assert (departed.task_id, departed.index) == (GDPR, 0) and "item differs" in (departed.diverged or "")


def test_the_runs_recorded_environment_variables_build_its_environments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kills: rebuilding the environments with this process's variables instead of the run's (PII_WINDOW_SIZE)."""
    monkeypatch.setenv("PII_WINDOW_SIZE", "300")
    run_bench(bench=BenchConfig.build(tasks=GDPR, agent="heuristic", episodes=2, keep_observations=False),
              out_dir=tmp_path / "run")  # fmt: skip
    assert json.loads((tmp_path / "run" / "config.json").read_text())["environment"] == {"PII_WINDOW_SIZE": "300"}
    monkeypatch.setenv("PII_WINDOW_SIZE", "700")
    report = rescore_run(tmp_path / "run")
    assert report.identical == 2 and not report.moved  # --no-observations: the actions are enough
    import os

    assert os.environ["PII_WINDOW_SIZE"] == "700"  # the process's own value is back


def test_write_puts_the_regrades_in_a_new_file_and_never_changes_the_run(run: Path) -> None:
    """Kills: --write over episodes.jsonl, a silent overwrite of an earlier rescore, or writing the stored grade."""
    pristine = (run / "episodes.jsonl").read_text()
    edit_episodes(run, lambda rows: [{**r, "score": 0.123} if r["index"] == 0 else r for r in rows])
    before = digest(run)
    result = cli(str(run), "--write")
    assert result.exit_code == 0 and "wrote" in result.output
    written = run / "episodes.rescored.jsonl"
    assert {k: v for k, v in digest(run).items() if k != written.name} == before
    assert written.read_text() == pristine  # the re-graded records are the ones first written
    again = cli(str(run), "--write")
    assert again.exit_code == 2 and "already exists" in again.output
    refused = cli(str(run), "--write", "--out", str(run / "episodes.jsonl"))
    assert refused.exit_code == 2 and "never overwritten" in refused.output


@pytest.mark.parametrize("make", ["missing", "empty folder", "file"])
def test_a_folder_that_is_not_a_run_is_one_error_line_and_exit_2(tmp_path: Path, make: str) -> None:
    """Kills: a traceback, or exit 1 (a finding) for what is a usage error."""
    target = tmp_path / "x"
    if make == "empty folder":
        target.mkdir()
    elif make == "file":
        target.write_text("{}")
    result = cli(str(target))
    assert result.exit_code == 2 and result.output.count("error:") == 1
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    with pytest.raises(RescoreError):
        rescore_run(target)
