"""A stored ``igym bench`` run as inspect_ai logs: one ``EvalLog`` per task (``igym inspect-log``).

Each log is what ``inspect eval integrity_gym/<name>`` writes for the same items, so a run and a
live evaluation sit side by side in ``inspect view`` and ``inspect_ai.analysis``: the task's
inspect name (``integrations.inspect.inspect_name``), one sample per episode with the id
``<task id>@<seed>`` and epoch (the run's epoch + 1), the episode's grade as the ``grade`` score
(``tasks.episode_score``: the value; success, threshold, the breakdown and the episode's figures
as metadata) and the ``mean``, ``stderr`` and ``success_rate`` metrics computed by the same
metric functions as a live evaluation. A failed episode is a sample with its error and no score.

Messages: the system prompt and each observation are worded as the ``llm`` agent words them
(``agents.prompts``, from the observations the run kept), each followed by the assistant's turn:
the model's raw reply where the run stored one (``--agent llm``), else the action the agent
played, as JSON. Each assistant turn's metadata holds the step's reward, its breakdown and the
environment's error. A run made with ``--no-observations`` keeps only the actions. The logs are
written with inspect's own writer (``write_eval_log``), so ``inspect view`` opens them and
``inspect_ai.analysis.samples_df`` reads one row per episode.
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, cast

from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalMetric,
    EvalPlan,
    EvalPlanStep,
    EvalResults,
    EvalSample,
    EvalSampleReductions,
    EvalSampleScore,
    EvalScore,
    EvalSpec,
    EvalStats,
    write_eval_log,
)
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.scorer import Metric, SampleScore, Score, mean, mean_score, stderr
from pydantic import BaseModel

from integrity_gym.agents.prompts import PromptAdapter, get_adapter, text_of
from integrity_gym.bench.record import SUMMARY_FILE, RunHeader, RunRecord
from integrity_gym.bench.records import EpisodeRecord, StepRecord
from integrity_gym.bench.runs import load_run
from integrity_gym.core.registry import TaskSpec, get_spec
from integrity_gym.integrations.inspect import NAMESPACE, inspect_name
from integrity_gym.integrations.inspect.tasks import chat_messages, episode_score, sample_id, success_rate

#: Where ``igym inspect-log RUN`` writes by default: a folder inside the run.
DEFAULT_FOLDER = "inspect"
#: The ``llm`` agent's feedback limit: the last rejection shown with the next observation.
FEEDBACK_LIMIT = 300
_ID_ALPHABET = string.digits + string.ascii_letters
#: inspect's statuses of a log; a run's status maps onto them (``_status``).
LogStatus = Literal["started", "success", "cancelled", "error"]


class InspectLogError(ValueError):
    """The run cannot be exported (not a run folder, nothing played); the message says why."""


# ---------------------------------------------------------------------------------- ids
def stable_id(*parts: str) -> str:
    """A 22-character id (inspect's length) derived from ``parts``: the same run exports the same ids."""
    number = int.from_bytes(hashlib.sha256("\x00".join(parts).encode()).digest()[:16], "big")
    out = ""
    for _ in range(22):
        number, digit = divmod(number, len(_ID_ALPHABET))
        out += _ID_ALPHABET[digit]
    return out


def log_file_name(created: str, name: str, eval_id: str) -> str:
    """``<created>_<task>_<id>.eval``, as inspect names the logs it writes (``2026-12-05T04-23-08-00-00_...``)."""
    stamp = created.replace(":", "-").replace("+", "-")
    return f"{stamp}_{name.replace('_', '-')}_{eval_id}.eval"


# ---------------------------------------------------------------------------------- messages
@dataclass(frozen=True)
class _Wording:
    """How one task's observations are worded for the log: its spec, adapter and observation model."""

    spec: TaskSpec
    adapter: PromptAdapter
    observation_type: type[BaseModel]

    @classmethod
    def of(cls, task_id: str, recorded: Mapping[str, Any] | None) -> _Wording | None:
        """The task's wording: the registered task's, else the recorded spec's; None when neither loads."""
        try:
            spec = get_spec(task_id)
        except (KeyError, ValueError):
            if recorded is None:
                return None
            try:
                spec = TaskSpec.model_validate({k: v for k, v in recorded.items() if k in TaskSpec.model_fields})
            except ValueError:
                return None
        try:
            return cls(spec, get_adapter(spec), spec.env_class().observation_type)
        except Exception:  # an environment that no longer imports: the actions are still worth showing
            return None

    def observation(self, data: Any) -> Any:
        """The stored observation (JSON) as the environment's observation model; None if it no longer reads.

        Runs store observations without their None fields (``bench.episode``), so those come back as None.
        """
        if not isinstance(data, dict):
            return None
        missing = {name: None for name in self.observation_type.model_fields if name not in data}
        try:
            return self.observation_type.model_validate({**missing, **data})
        except ValueError:
            return None


def _user(wording: _Wording, observation: Any, feedback: str | None, images: bool) -> ChatMessage:
    content = wording.adapter.user(observation, feedback)
    if not images and not isinstance(content, str):
        content = wording.adapter.text_only(observation) or text_of(content)
    return chat_messages([{"role": "user", "content": content}])[0]


def _reply(step: StepRecord) -> str:
    """The assistant's turn of a step: the model's raw reply if stored, else the action as JSON."""
    if step.llm is not None and isinstance(step.llm.get("raw"), str):
        return str(step.llm["raw"])
    return step.action if isinstance(step.action, str) else json.dumps(step.action, ensure_ascii=False)


def _feedback(step: StepRecord) -> str | None:
    """Why the step's action was rejected, as the ``llm`` agent shows it with the next observation."""
    why = (step.llm or {}).get("parse_error") or step.error
    return str(why)[:FEEDBACK_LIMIT] if why else None


def episode_messages(record: EpisodeRecord, wording: _Wording | None) -> tuple[list[ChatMessage], list[ChatMessage]]:
    """``(input, messages)`` of an episode: its first prompt, and the whole episode as one conversation."""
    first = (
        None if wording is None or record.reset_observation is None else wording.observation(record.reset_observation)
    )
    messages: list[ChatMessage]
    if wording is None or first is None:
        note = (
            "this igym no longer has the task" if wording is None
            else "observations not kept by this run (igym bench --no-observations)"
            if record.reset_observation is None
            else "its observations no longer read as this igym's"
        )  # fmt: skip
        messages = [ChatMessageUser(content=f"{record.task_id}, item seed {record.seed} ({note}): the actions follow.")]
        observations: list[Any] = [None] * len(record.trajectory)
    else:
        images = bool((record.trajectory[0].llm or {}).get("images", True)) if record.trajectory else True
        messages = [ChatMessageSystem(content=wording.adapter.system(wording.spec, first)),
                    _user(wording, first, None, images)]  # fmt: skip
        observations = [
            None if s.observation is None else wording.observation(s.observation) for s in record.trajectory
        ]
    prompt = list(messages)
    for step, after in zip(record.trajectory, observations, strict=True):
        meta = {"step": step.step, "reward": step.reward, "reward_breakdown": step.reward_breakdown, "done": step.done,
                "error": step.error, "action": step.action_text}  # fmt: skip
        messages.append(ChatMessageAssistant(content=_reply(step), metadata=meta))
        if not step.done and after is not None and wording is not None:
            images = bool((step.llm or {}).get("images", True))
            messages.append(_user(wording, after, _feedback(step), images))
    return prompt, messages


# ---------------------------------------------------------------------------------- samples
def _model(header: RunHeader) -> tuple[str, str | None]:
    """The run's model as inspect names it (``openai/<name>`` for the llm agent, else ``igym/<agent>``) and URL."""
    llm = header.bench.llm
    if header.bench.agent == "llm" and llm is not None:
        return f"openai/{llm.get('model_name')}", llm.get("api_base_url")
    return f"igym/{header.bench.agent}", None


def _usage(record: EpisodeRecord) -> ModelUsage | None:
    usage = record.usage
    if not usage.llm_calls:
        return None
    prompt, completion = usage.prompt_tokens or 0, usage.completion_tokens or 0
    return ModelUsage(input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion)


def _item_id(record: EpisodeRecord) -> str | None:
    found = record.reset_observation.get("item_id") if isinstance(record.reset_observation, dict) else None
    return None if found is None else str(found)


def episode_sample(record: EpisodeRecord, wording: _Wording | None, model: str, partition: str) -> EvalSample:
    """One episode as an inspect sample: messages, the grade as the ``grade`` score, the error if it failed."""
    prompt, messages = episode_messages(record, wording)
    replies = [m for m in messages if isinstance(m, ChatMessageAssistant)]
    answer = replies[-1].text if replies else None
    score = None
    if record.grade is not None and record.error is None:
        figures: dict[str, Any] = {"steps": record.steps, "total_return": record.total_return,
                                   "truncated": record.truncated}  # fmt: skip
        if record.agent == "llm":
            figures["unreadable_replies"] = sum((s.llm or {}).get("parse") == "malformed" for s in record.trajectory)
        score = episode_score(record.grade, answer=answer, explanation=record.explanation, figures=figures)
    usage = _usage(record)
    error = None
    if record.error is not None:
        trace = record.traceback or ""
        error = EvalError(message=record.error, traceback=trace, traceback_ansi=trace)
    return EvalSample(
        id=sample_id(record.task_id, record.seed),
        epoch=record.epoch + 1,
        input=prompt,
        target="",
        messages=messages,
        output=ModelOutput.from_content(model=model, content=answer or ""),
        scores=None if score is None else {"grade": score},
        metadata={"task_id": record.task_id, "env": record.env, "tier": record.tier, "partition": partition,
                  "index": record.index, "seed": record.seed, "item_id": _item_id(record), "agent": record.agent},
        model_usage={} if usage is None else {model: usage},
        total_time=record.wall_s,
        working_time=record.wall_s,
        error=error,
    )  # fmt: skip


# ---------------------------------------------------------------------------------- logs
#: The metrics of the ``grade`` scorer (``tasks.grade``): the key in the results, the registered name, the metric.
_METRICS: tuple[tuple[str, str, Metric], ...] = (
    ("mean", "mean", mean()),
    ("stderr", "stderr", stderr()),
    ("success_rate", f"{NAMESPACE}/success_rate", success_rate()),
)


def _results(samples: Sequence[EvalSample], epochs: int) -> tuple[EvalResults, list[EvalSampleReductions]]:
    """Metrics as a live evaluation computes them: epochs reduced by their mean, then mean, stderr, success."""
    by_sample: dict[str | int, list[Score]] = {}
    for sample in samples:
        if sample.scores:
            by_sample.setdefault(sample.id, []).append(sample.scores["grade"])
    reducer = None if epochs == 1 else "mean"
    reduce = mean_score()
    reduced = [
        SampleScore(score=scores[0] if reducer is None else reduce(scores), sample_id=key)
        for key, scores in by_sample.items()
    ]
    metrics: dict[str, EvalMetric] = {}
    for key, name, metric in _METRICS if reduced else ():
        value = cast("Callable[[list[SampleScore]], Any]", metric)(reduced)
        metrics[key] = EvalMetric(name=name, value=float(value))
    scored = len([s for s in samples if s.scores])
    score = EvalScore(
        name="grade", scorer="grade", reducer=reducer, scored_samples=scored,
        unscored_samples=len(samples) - scored, metrics=metrics,
    )  # fmt: skip
    reductions = EvalSampleReductions(
        scorer="grade",
        reducer=reducer,
        samples=[EvalSampleScore(**s.score.model_dump(), sample_id=s.sample_id) for s in reduced],
    )
    results = EvalResults(total_samples=len(samples), completed_samples=scored, scores=[score] if reduced else [])
    return results, [reductions]


def _usage_sum(usages: Sequence[ModelUsage]) -> ModelUsage:
    return ModelUsage(
        input_tokens=sum(u.input_tokens for u in usages),
        output_tokens=sum(u.output_tokens for u in usages),
        total_tokens=sum(u.total_tokens for u in usages),
    )


def _status(record: RunRecord) -> tuple[LogStatus, EvalError | None]:
    summary = record.summary
    if summary is None:
        return "started", None
    if summary.status == "complete":
        return "success", None
    if summary.status == "interrupted":
        return "cancelled", None
    message = f"the igym bench run failed: {summary.episodes_failed} episode(s) failed (see the samples' errors)"
    return "error", EvalError(message=message, traceback="", traceback_ansi="")


def task_log(record: RunRecord, task_id: str, *, completed_at: str | None = None) -> EvalLog:
    """The run's episodes of ``task_id`` as one inspect ``EvalLog``; ``completed_at``: when the run ended (ISO)."""
    header = record.header
    if header is None:
        raise InspectLogError("the run has no config.json, so its tasks and agent are unknown: export a finished run")
    recorded = next((t for t in header.tasks if t.get("id") == task_id), None)
    if recorded is None:
        raise InspectLogError(f"the run did not play {task_id}; it played {', '.join(header.task_ids)}")
    bench = header.bench
    model, base_url = _model(header)
    name = inspect_name(str(recorded["env"]), str(recorded["name"]))
    wording = _Wording.of(task_id, recorded)
    episodes = sorted((e for e in record.episodes if e.task_id == task_id), key=lambda e: (e.epoch, e.index))
    partition = bench.partition or "default"
    samples = [episode_sample(e, wording, model, partition) for e in episodes]
    results, reductions = _results(samples, bench.epochs)
    status, error = _status(record)
    usages = [s.model_usage[model] for s in samples if model in s.model_usage]
    metadata = {
        "igym_task_id": task_id, "env": recorded["env"], "tier": recorded["tier"], "partition": partition,
        "igym_run_id": header.run_id, "agent": bench.agent, "data_mode": header.data_mode,
        "reproduce": header.reproduce,
        # False where success is a property of the task's mean grade (every episode's success is then false).
        "per_episode_success": bool(recorded.get("per_episode_success", True)),
    }  # fmt: skip
    # The items' ids in the order the run numbers them (a repeat of a seed is another epoch, not another item).
    ids: list[str | int] = list(dict.fromkeys(sample_id(task_id, seed) for seed in header.seeds))
    spec = EvalSpec(
        eval_id=stable_id(header.run_id, task_id),
        run_id=stable_id(header.run_id),
        created=header.created_at,
        task=f"{NAMESPACE}/{name}",
        task_id=stable_id(header.run_id, task_id, "task"),
        task_version=int(recorded["version"]),
        task_display_name=name,
        task_description=recorded.get("description"),
        task_registry_name=f"{NAMESPACE}/{name}",
        task_args={
            "partition": partition,
            "episodes": bench.episodes,
            "seed": bench.seed,
            "max_steps": bench.max_steps,
        },
        solver=f"igym/{bench.agent}",
        dataset=EvalDataset(name=task_id, samples=len(ids), sample_ids=ids, shuffled=False),
        model=model,
        model_base_url=base_url,
        config=EvalConfig(epochs=bench.epochs),
        packages={"integrity-gym": header.igym_version},
        metadata=metadata,
    )
    log = EvalLog(
        status=status,
        eval=spec,
        plan=EvalPlan(steps=[EvalPlanStep(solver=f"igym/{bench.agent}", params=bench.model_dump(mode="json"))]),
        results=results,
        stats=EvalStats(
            started_at=header.created_at,
            completed_at=completed_at or "",
            model_usage={model: _usage_sum(usages)} if usages else {},
        ),
        error=error,
        samples=samples,
        metadata=metadata,
    )
    # Set apart: EvalLog's validator, given both as models, tries to copy the reductions into the results.
    log.reductions = reductions
    return log


def run_logs(run: str | Path) -> list[EvalLog]:
    """Every task of the run folder ``run`` as an inspect ``EvalLog``, in the order the run played them."""
    try:
        data = load_run(run)
    except ValueError as exc:
        raise InspectLogError(str(exc)) from exc
    header = data.record.header
    if header is None:
        raise InspectLogError(f"{run} has no config.json: export a run written by `igym bench`")
    played = {e.task_id for e in data.record.episodes}
    tasks = [t for t in header.task_ids if t in played]
    if not tasks:
        raise InspectLogError(f"{run} holds no episodes yet: nothing to export")
    return [task_log(data.record, task_id, completed_at=_ended(data.path)) for task_id in tasks]


def _ended(folder: Path) -> str | None:
    """When the run ended: the time ``summary.json`` was written (the record itself keeps no end time)."""
    summary = folder / SUMMARY_FILE
    if not summary.is_file():
        return None
    return datetime.fromtimestamp(summary.stat().st_mtime, tz=UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class ExportedLog:
    """One log ``write_run_logs`` wrote: where, and what."""

    path: Path
    log: EvalLog


def write_run_logs(run: str | Path, out: str | Path | None = None) -> list[ExportedLog]:
    """Write the run's logs (``run_logs``) into ``out`` (default ``RUN/inspect``), in the run's task order.

    The same run writes the same file names (ids derived from the run's id), so exporting again
    replaces the earlier export.
    """
    logs = run_logs(run)
    folder = Path(out) if out is not None else Path(run) / DEFAULT_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for log in logs:
        path = folder / log_file_name(log.eval.created, log.eval.task_display_name or log.eval.task, log.eval.eval_id)
        write_eval_log(log, str(path))
        written.append(ExportedLog(path, log))
    return written


__all__ = [
    "DEFAULT_FOLDER",
    "ExportedLog",
    "InspectLogError",
    "episode_messages",
    "episode_sample",
    "log_file_name",
    "run_logs",
    "stable_id",
    "task_log",
    "write_run_logs",
]
