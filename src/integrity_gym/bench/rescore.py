"""Re-grade a stored run with the current code, without playing the agent again (``igym rescore``).

Every finished episode of a run folder is replayed: its environment is rebuilt exactly as the run
built it (the task, the run's partition and ``--config``, the environment variables recorded in
``config.json``), reset with the episode's seed, stepped with the stored actions in order, and
graded. The new grade is compared with the stored one as JSON text, so "identical" means
bit for bit: the score, the success flag, the threshold and every breakdown value. With a
``preset`` the environments are rebuilt under that reward/grade preset (``reward_preset``).

The replay also checks itself: the reset observation must equal the stored one (when the run kept
observations), and every step must be accepted or rejected and end the episode as it did. A replay
that departs from the stored trajectory is still graded, and says where it departed.

Nothing of the run is changed; ``write_rescored`` writes the re-graded episodes to a new file.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.episode import graded, jsonable
from integrity_gym.bench.provenance import env_variables
from integrity_gym.bench.record import CONFIG_FILE, EPISODES_FILE, RunHeader, RunRecord, episode_line, plan
from integrity_gym.bench.records import EpisodeRecord
from integrity_gym.bench.setup import make_env, reset_options
from integrity_gym.core.env import describe_validation_error
from integrity_gym.core.registry import TaskSpec, get_spec
from integrity_gym.core.seeding import data_mode

#: The env config key every built-in environment reads its reward/grade preset from.
PRESET_KEY = "reward_preset"

Verdict = Literal["identical", "moved"]


class RescoreError(ValueError):
    """The folder cannot be re-graded at all (not a run, a sealed run, another data mode)."""


@dataclass(frozen=True)
class Regrade:
    """One episode re-graded: its stored and its new grade, and where the replay departed, if it did."""

    task_id: str
    index: int
    seed: int
    epoch: int
    verdict: Verdict
    stored_score: float | None
    new_score: float
    stored_success: bool | None
    new_success: bool
    stored_return: float
    new_return: float
    #: The breakdown entries whose value changed (or appeared, or went): name -> (stored, new).
    breakdown_moved: dict[str, tuple[float | None, float | None]]
    #: Where the replay departed from the stored trajectory (None when it followed it exactly).
    diverged: str | None
    record: EpisodeRecord = field(repr=False)

    @property
    def moved(self) -> bool:
        """The grade differs from the stored one in any bit."""
        return self.verdict == "moved"

    @property
    def return_moved(self) -> bool:
        """The step rewards' sum differs from the stored one."""
        return _text(self.stored_return) != _text(self.new_return)

    def to_json(self) -> dict[str, Any]:
        """The row of ``--json``."""
        return {
            "task_id": self.task_id, "index": self.index, "seed": self.seed, "epoch": self.epoch,
            "verdict": self.verdict, "score": [self.stored_score, self.new_score],
            "success": [self.stored_success, self.new_success], "return": [self.stored_return, self.new_return],
            "breakdown_moved": {k: list(v) for k, v in self.breakdown_moved.items()}, "diverged": self.diverged,
        }  # fmt: skip


@dataclass(frozen=True)
class NotRescorable:
    """Stored episodes that could not be replayed, and why (an unregistered task, a preset it lacks, ...)."""

    task_id: str
    episodes: int
    reason: str


@dataclass
class RescoreReport:
    """What ``rescore_run`` found: every re-graded episode, what it could not replay, what it skipped."""

    folder: Path
    run_id: str
    preset: str | None
    regrades: list[Regrade] = field(default_factory=list)
    not_rescorable: list[NotRescorable] = field(default_factory=list)
    #: Stored episodes that failed (an error, no grade): nothing to re-grade.
    failed: int = 0
    #: Planned episodes absent from episodes.jsonl (an interrupted or killed run).
    missing: int = 0
    #: Lines of episodes.jsonl that are not an episode record (a line cut short by a crash).
    unreadable: int = 0
    #: Tasks whose registered spec differs from the one the run recorded: task id -> changed keys.
    spec_changed: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: Seconds spent building each task's environment once before the replays (imports, data, caches).
    setup_seconds: float = 0.0
    #: Seconds spent replaying and grading (what ``episodes_per_second`` divides by).
    seconds: float = 0.0
    #: Every stored record in file order, re-graded where it was (what ``write_rescored`` writes).
    records: list[EpisodeRecord] = field(default_factory=list, repr=False)

    @property
    def moved(self) -> list[Regrade]:
        """Episodes whose grade moved."""
        return [r for r in self.regrades if r.moved]

    @property
    def identical(self) -> int:
        """Episodes re-graded bit for bit as stored."""
        return sum(1 for r in self.regrades if not r.moved)

    @property
    def diverged(self) -> list[Regrade]:
        """Episodes whose replay departed from the stored trajectory."""
        return [r for r in self.regrades if r.diverged is not None]

    @property
    def returns_moved(self) -> int:
        """Episodes whose return moved (a preset changes rewards even where the grade holds)."""
        return sum(1 for r in self.regrades if r.return_moved)

    @property
    def unrescored(self) -> int:
        """Finished episodes that could not be replayed."""
        return sum(n.episodes for n in self.not_rescorable)

    @property
    def episodes_per_second(self) -> float:
        """Replay speed: re-graded episodes per second of replaying."""
        return len(self.regrades) / self.seconds if self.seconds > 0 else 0.0

    @property
    def all_identical(self) -> bool:
        """Every finished episode was re-graded, and every grade is as stored."""
        return not self.moved and not self.not_rescorable

    def to_json(self) -> dict[str, Any]:
        """``igym rescore --json``."""
        return {
            "run": str(self.folder), "run_id": self.run_id, "preset": self.preset,
            "rescored": len(self.regrades), "identical": self.identical, "moved": [r.to_json() for r in self.moved],
            "diverged": [r.to_json() for r in self.diverged if not r.moved], "returns_moved": self.returns_moved,
            "not_rescorable": [vars(n) for n in self.not_rescorable], "failed": self.failed, "missing": self.missing,
            "unreadable": self.unreadable, "spec_changed": self.spec_changed, "notes": self.notes,
            "setup_seconds": round(self.setup_seconds, 4), "seconds": round(self.seconds, 4),
            "episodes_per_second": round(self.episodes_per_second, 2),
        }  # fmt: skip


def _text(value: Any) -> str:
    """``value`` as JSON text with sorted keys: equal text is equal to the bit (floats print exactly)."""
    return json.dumps(value, sort_keys=True)


# ---------------------------------------------------------------------------------- reading a run
def load_header(folder: Path) -> tuple[RunRecord, int]:
    """The run in ``folder`` and how many lines of its episodes.jsonl did not read as a record."""
    if not folder.exists():
        raise RescoreError(f"{folder} does not exist")
    if not folder.is_dir():
        raise RescoreError(f"{folder} is not a run folder (a file); pass the folder `igym bench --out` wrote")
    if not (folder / CONFIG_FILE).is_file():
        raise RescoreError(f"{folder} is not a run folder: it has no {CONFIG_FILE} (`igym bench` writes one)")
    try:
        record = RunRecord.load(folder)
    except ValidationError as exc:
        raise RescoreError(f"{folder} holds a run this igym cannot read: {describe_validation_error(exc)}") from exc
    except ValueError as exc:  # summary.json that is not JSON
        raise RescoreError(f"{folder} holds a run this igym cannot read: {_first_line(exc)}") from exc
    lines = (folder / EPISODES_FILE).read_text().splitlines() if (folder / EPISODES_FILE).is_file() else []
    unreadable = sum(1 for line in lines if line.strip()) - len(record.episodes)
    return record, unreadable


def _check_replayable(header: RunHeader) -> list[str]:
    """Refuse runs whose items this process cannot rebuild; the notes to show for the others."""
    bench = header.bench
    if bench.sealed or header.data_mode.startswith("sealed:"):
        raise RescoreError(
            "a sealed run's items were drawn and graded by its server and cannot be rebuilt here; "
            "re-grade it on the server"
        )
    if bench.server:  # the server's data mode is not recorded: the reset check tells if its items differ
        return [f"played against {bench.server}; re-graded in-process"]
    now = data_mode()
    if header.data_mode != now:
        raise RescoreError(
            f"the run's items were derived in data mode {header.data_mode!r}, this process's is {now!r}: "
            "set IGYM_EVAL_SECRET to the run's secret (or unset it for a public run)"
        )
    return []


@contextlib.contextmanager
def run_environment(header: RunHeader, specs: Sequence[TaskSpec]) -> Iterator[None]:
    """The environment variables that configure the run's environments, as the run recorded them.

    Variables of those environments set in this process but not in the run are removed for the
    duration (they would build other environments, e.g. another PII_WINDOW_SIZE); the process's
    environment is restored afterwards. Not thread-safe: ``os.environ`` is the process's.
    """
    saved = dict(os.environ)
    try:
        for name in env_variables(specs):
            os.environ.pop(name, None)
        os.environ.update(header.environment)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _spec_changes(recorded: Mapping[str, Any], spec: TaskSpec) -> list[str]:
    current = spec.model_dump(mode="json")
    return sorted(k for k in set(recorded) | set(current) if recorded.get(k) != current.get(k))


# ---------------------------------------------------------------------------------- replaying
def _replay_config(bench: BenchConfig, preset: str | None) -> BenchConfig:
    """The run's configuration, in-process, under ``preset`` when one is asked for."""
    env_config = dict(bench.env_config)
    if preset is not None:
        env_config[PRESET_KEY] = preset
    return bench.model_copy(update={"server": None, "sealed": False, "env_config": env_config})


def _departure(record: EpisodeRecord, env: Any, replayed: list[tuple[bool, str | None]]) -> str | None:
    """Where the replay left the stored trajectory (None if it followed it)."""
    for step, (done, error) in zip(record.trajectory, replayed, strict=False):
        if error != step.error:
            stored = "rejected" if step.error else "accepted"
            return f"step {step.step}: the action was {stored} when played, now {'rejected' if error else 'accepted'}"
        if done != step.done:
            return f"step {step.step}: {'ended' if done else 'did not end'} the episode, unlike when played"
    if len(replayed) < len(record.trajectory):
        return f"the episode ended after {len(replayed)} of the {len(record.trajectory)} stored steps"
    if not env.done and not record.truncated and record.trajectory:
        return f"the episode had not ended after the {len(record.trajectory)} stored steps"
    return None


def replay_episode(spec: TaskSpec, config: BenchConfig, record: EpisodeRecord) -> tuple[EpisodeRecord, str | None]:
    """Rebuild ``record``'s environment, step it with the stored actions, grade it.

    Returns the record re-graded (grade, score, success, threshold, explanation, the steps with
    their rewards, outcomes and kept observations, and the return, all from the replay; the rest
    as stored) and where the replay departed from the stored trajectory, if it did. Raises what
    the environment raises.
    """
    env = make_env(spec, config)
    try:
        obs = env.reset(seed=record.seed, options=reset_options(config))
        departed: str | None = None
        if record.reset_observation is not None and jsonable(obs) != record.reset_observation:
            departed = "the item differs from the one played (its first observation changed)"
        replayed: list[tuple[bool, str | None]] = []
        steps = []
        for step in record.trajectory:
            if env.done:
                break
            result = env.step(step.action)
            replayed.append((result.done, result.info.get("error")))
            steps.append(step.model_copy(update={
                "reward": result.reward, "reward_breakdown": result.info.get("reward_breakdown", {}),
                "done": result.done, "error": result.info.get("error"),
                "observation": None if step.observation is None else jsonable(result.observation),
            }))  # fmt: skip
        departed = departed or _departure(record, env, replayed)
        outcome = graded(env)
    finally:
        env.close()
    # The replay's own trajectory: a stored step it never reached (the episode ended first) is left out.
    regraded = record.model_copy(update={**outcome, "trajectory": steps, "steps": len(steps),
                                         "total_return": sum(s.reward for s in steps)})  # fmt: skip
    return regraded, departed


def _compare(stored: EpisodeRecord, new: EpisodeRecord, departed: str | None) -> Regrade:
    def key(r: EpisodeRecord) -> str:
        return _text([r.score, r.success, r.threshold, r.grade])

    old_breakdown = dict((stored.grade or {}).get("breakdown") or {})
    new_breakdown = dict((new.grade or {}).get("breakdown") or {})
    breakdown_moved = {
        k: (old_breakdown.get(k), new_breakdown.get(k))
        for k in [*old_breakdown, *(k for k in new_breakdown if k not in old_breakdown)]
        if _text(old_breakdown.get(k)) != _text(new_breakdown.get(k))
    }
    assert new.score is not None and new.success is not None  # a replay is always graded
    return Regrade(
        task_id=stored.task_id, index=stored.index, seed=stored.seed, epoch=stored.epoch,
        verdict="identical" if key(stored) == key(new) else "moved",
        stored_score=stored.score, new_score=new.score, stored_success=stored.success, new_success=new.success,
        stored_return=stored.total_return, new_return=new.total_return, breakdown_moved=breakdown_moved,
        diverged=departed, record=new,
    )  # fmt: skip


def _prepare(spec: TaskSpec, config: BenchConfig, seed: int, preset: str | None) -> str | None:
    """Build, reset and grade ``spec``'s environment once (its data, its caches); why it cannot be, or None."""
    try:
        env = make_env(spec, config)
        try:
            env.reset(seed=seed, options=reset_options(config))
            with contextlib.suppress(Exception):  # a grade fits what grading needs (a prior, say) once
                env.grade()
        finally:
            env.close()
    except Exception as exc:  # the environment's own refusal says what is wrong
        why = _first_line(exc)
        if preset is not None and PRESET_KEY in why and "Extra inputs" in why:
            return f"{spec.env} has no reward/grade presets (its config takes no {PRESET_KEY})"
        return f"cannot be built{'' if preset is None else f' under preset {preset!r}'}: {why}"
    return None


def rescore_run(folder: Path, *, preset: str | None = None) -> RescoreReport:
    """Re-grade every finished episode of the run in ``folder`` (see the module's docstring).

    Raises ``RescoreError`` when the folder is not a run this process can rebuild; a task that is
    no longer registered, or whose environment lacks ``preset``, is reported in
    ``not_rescorable``; failed and missing episodes are counted, not re-graded.
    """
    record, unreadable = load_header(folder)
    header = record.header
    assert header is not None  # load_header checked config.json
    report = RescoreReport(folder=folder, run_id=header.run_id, preset=preset, unreadable=unreadable)
    report.notes += _check_replayable(header)
    config = _replay_config(header.bench, preset)
    specs: dict[str, TaskSpec] = {}
    unknown: dict[str, str] = {}
    for task_id, recorded in zip(header.task_ids, header.tasks, strict=True):
        try:
            specs[task_id] = get_spec(task_id)
        except KeyError as exc:
            unknown[task_id] = f"no longer registered ({_first_line(exc)})"
            continue
        if changes := _spec_changes(recorded, specs[task_id]):
            report.spec_changed[task_id] = changes
    for task_id in dict.fromkeys(r.task_id for r in record.episodes):  # episodes of tasks the header lacks
        if task_id not in specs and task_id not in unknown:
            unknown[task_id] = "not among the run's tasks (config.json)"
    stored_keys = {r.key for r in record.episodes}  # a failed episode is stored (and counted as failed)
    report.missing = sum(1 for p in plan(header.bench, list(specs.values())) if p.key not in stored_keys)
    with run_environment(header, list(specs.values())):
        started = time.perf_counter()
        first_seeds = {r.task_id: r.seed for r in reversed(record.episodes)}
        for task_id, spec in specs.items():
            if task_id in first_seeds and (problem := _prepare(spec, config, first_seeds[task_id], preset)):
                unknown[task_id] = problem
        report.setup_seconds = time.perf_counter() - started
        started = time.perf_counter()
        failures = _replay_all(report, record.episodes, specs, unknown, config)
        report.seconds = time.perf_counter() - started
    report.not_rescorable = [NotRescorable(t, n, reason) for t, (reason, n) in failures.items()]
    return report


def _replay_all(
    report: RescoreReport,
    episodes: Sequence[EpisodeRecord],
    specs: Mapping[str, TaskSpec],
    unknown: Mapping[str, str],
    config: BenchConfig,
) -> dict[str, tuple[str, int]]:
    """Replay every graded episode into ``report`` (its regrades and records, in file order).

    Returns, per task, why some of its episodes could not be replayed and how many.
    """
    failures: dict[str, tuple[str, int]] = {}

    def refuse(task_id: str, reason: str) -> None:
        first, count = failures.get(task_id, (reason, 0))
        failures[task_id] = (first, count + 1)

    for episode in episodes:
        new = episode
        if episode.error or episode.grade is None:
            report.failed += 1
        elif episode.task_id in unknown:
            refuse(episode.task_id, unknown[episode.task_id])
        else:
            try:
                new, departed = replay_episode(specs[episode.task_id], config, episode)
            except Exception as exc:  # the environment refuses the episode: report it, go on with the others
                refuse(episode.task_id, f"the replay raised {type(exc).__name__}: {_first_line(exc)}")
            else:
                report.regrades.append(_compare(episode, new, departed))
        report.records.append(new)
    return failures


def _first_line(exc: BaseException) -> str:
    text = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
    return text.splitlines()[0] if text else ""


def rescored_path(folder: Path, preset: str | None) -> Path:
    """Where ``--write`` puts the re-graded episodes by default: beside episodes.jsonl, never over it."""
    return folder / ("episodes.rescored.jsonl" if preset is None else f"episodes.rescored-{preset}.jsonl")


def write_rescored(report: RescoreReport, path: Path) -> Path:
    """Write every stored episode, re-graded where it was, to ``path`` (never episodes.jsonl itself)."""
    if path.resolve() == (report.folder / EPISODES_FILE).resolve():
        raise RescoreError(f"{path} is the run's own episodes.jsonl; the stored run is never overwritten")
    if path.exists():
        raise RescoreError(f"{path} already exists; remove it or choose another --out")
    path.write_text("".join(episode_line(r) for r in report.records))
    return path


__all__ = [
    "PRESET_KEY",
    "NotRescorable",
    "Regrade",
    "RescoreError",
    "RescoreReport",
    "replay_episode",
    "rescore_run",
    "rescored_path",
    "run_environment",
    "write_rescored",
]
