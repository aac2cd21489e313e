"""The environments as TRL ``environment_factory`` classes: each action is a tool the model calls.

What TRL 1.16's ``GRPOTrainer(environment_factory=..., reward_funcs=...)`` does with such a class
(``trl/trainer/grpo_trainer.py``), and what this module does in turn:

- It calls the factory with no arguments, once at start-up to read the tools and then whenever a
  batch needs more concurrent rollouts than it has instances; instances are pooled and reused
  across batches, so ``reset`` starts every episode afresh.
- The tools are the public functions of the instance's class (``inspect.getmembers(cls,
  inspect.isfunction)``) except ``reset`` and ``get_reward``; their JSON schemas come from the type
  hints and Google-style docstrings. Properties are not functions, so the episode is read through
  properties here and never offered to the model.
- Before generating it calls ``reset(**row)`` with the whole dataset row; a string returned is
  appended to the row's last message. Rows come from ``dataset``: ``prompt`` (the ``llm`` agent's
  system message, with ``TOOL_NOTE``, and its wording of the first observation) and ``seed``.
  Without a ``train_dataset`` TRL resets on placeholder rows that have no seed; those are refused,
  because the ``num_generations`` rollouts of a group must play the same item.
- It parses tool calls with the tokenizer's response template (TRL sets one for the chat templates
  it knows, e.g. Qwen2.5/Qwen3 and Llama 3.1/3.2), calls the method with the call's arguments and
  sends ``str(result)`` back as a ``tool`` message, masked out of the loss. An exception a tool
  raises (an unknown tool, arguments that do not bind, a call after the episode ended) is sent back
  as ``{'error': ...}`` and counted in ``tools/failure_frequency``. The loop stops when the model
  stops calling tools, after ``max_tool_calling_iterations``, or when a tool's result would not
  fit in ``max_completion_length`` (the tool has then run, but its result is not shown).
- Reward functions get the batch's instances as ``environments`` (plus the dataset columns,
  ``log_metric`` and ``log_extra``). ``grade_reward`` scores each rollout with its environment's
  grade, finished or not: an episode the loop leaves unfinished is graded as it stands, as
  ``igym bench --max-steps`` grades one cut at its cap. The classes define no ``get_reward``, which
  TRL would add as a second reward beside ``reward_funcs``.

A tool steps the environment with one action whose fields are the tool's arguments, and returns the
next observation in the adapter's wording, with the reason when the action was rejected; nothing
else. Arguments the environment can judge (unknown ids, wrong types, offsets outside the window)
are judged by it; a call the tool cannot turn into an action (a quote not in the window) is
stepped as an invalid action. Either way the environment charges it as it charges any rejected
action, as it charges the ``llm`` agent for a reply it cannot read.

The ``llm`` agent and ``igym bench`` do not speak tools: a model trained here is evaluated with
its own tool loop, not with ``igym bench --agent llm``.
"""

from __future__ import annotations

import importlib
import statistics
from typing import Any, ClassVar, cast

from integrity_gym.agents.prompts import ActionReadError, PromptAdapter, get_adapter, text_of
from integrity_gym.agents.prompts.pii_redaction import locate
from integrity_gym.core.env import EpisodeFinishedError
from integrity_gym.core.registry import TaskSpec, get_spec, make
from integrity_gym.envs.information_integrity.models import Decision
from integrity_gym.envs.pii_redaction.models import Label
from integrity_gym.envs.selective_verification.models import Verdict

#: Added to the adapter's system message: the reply format it describes is replaced by tool calls.
TOOL_NOTE = (
    "Here you act only by calling the tools provided, one action per call: a tool's arguments are "
    "that action's fields, in place of the JSON reply described above. Each call returns what you "
    "observe next."
)
#: What a tool returns once its action has ended the episode (and raises on a later call).
ENDED = "The episode has ended; no further actions are accepted."
#: Longest rejection message sent back to the model (as the ``llm`` agent and ``integrations.verifiers`` cut it).
FEEDBACK_LIMIT = 300


def system_text(adapter: PromptAdapter, spec: TaskSpec, observation: Any) -> str:
    """The system message of the tool route: the adapter's instructions and ``TOOL_NOTE``."""
    return f"{adapter.system(spec, observation)}\n{TOOL_NOTE}"


def observation_text(adapter: PromptAdapter, observation: Any, feedback: str | None = None) -> str:
    """The adapter's user message for ``observation`` as text (a picture is left out, and the model told)."""
    content = adapter.user(observation, feedback)
    if isinstance(content, str):
        return content
    return adapter.text_only(observation) or text_of(content)


class ToolEnv:
    """One episode of a task behind TRL's environment protocol (subclasses add the tools).

    Only ``reset`` and the tools are public methods: TRL offers every other public method to the
    model as a tool. The episode is read through the properties.
    """

    #: Set by ``environment_factory``: the task, the partition its items come from, config overrides.
    task_id: ClassVar[str]
    partition: ClassVar[str]
    config: ClassVar[dict[str, Any]]

    def __init__(self) -> None:
        if not hasattr(type(self), "task_id"):
            raise TypeError(f"{type(self).__name__} is built by environment_factory(task_id), not directly")
        self._env = make(self.task_id, partition=self.partition, **self.config)
        self._adapter = get_adapter(self._env.spec)
        self._seed: int | None = None
        self._actions: list[dict[str, Any]] = []
        self._rejected = 0

    @property
    def env(self) -> Any:
        """The integrity-gym environment (its ``state()`` holds ground truth: never show it to the model)."""
        return self._env

    @property
    def seed(self) -> int | None:
        """The seed of the item the episode was last reset on."""
        return self._seed

    @property
    def actions(self) -> tuple[dict[str, Any], ...]:
        """Every action the tools stepped the environment with, in order, rejected ones included."""
        return tuple(self._actions)

    @property
    def rejected(self) -> int:
        """How many of those actions the environment rejected."""
        return self._rejected

    def reset(self, **row: Any) -> str | None:
        """Start the episode of the row's ``seed``; TRL calls it with the whole dataset row.

        Returns None when the row's prompt already ends with the first observation (``dataset``
        rows), and the observation's text when its last message is empty: TRL appends what is
        returned to the last message. A last message with other text is refused, since the model
        would see another item than it plays (a row built for another partition or config).
        """
        seed = row.get("seed")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(
                f"a row needs an integer 'seed' to reset {self.task_id} on, got {seed!r}: pass "
                f"train_dataset=dataset({self.task_id!r}) to GRPOTrainer (without one TRL resets on rows "
                "with no seed, and the rollouts of a group would play different items)"
            )
        prompt = row.get("prompt")
        if prompt is not None and not isinstance(prompt, list):
            raise ValueError("the row's prompt must be a list of chat messages (conversational), not text")
        observation = self._env.reset(seed=seed)
        self._seed, self._actions, self._rejected = seed, [], 0
        text = observation_text(self._adapter, observation)
        last = prompt[-1].get("content") if prompt else ""
        if not last:
            return text
        if last == text:
            return None
        raise ValueError(
            f"the row's last message is not the first observation of {self.task_id} (partition "
            f"{self.partition}) for seed {seed}: build rows with dataset() for the same task, partition and "
            "config, or leave the last message empty"
        )

    def _act(self, action: dict[str, Any], reason: str | None = None) -> str:
        """Step the environment with ``action``; the next observation, or the end.

        ``reason`` is why the tool could not read the call: ``action`` is then one the environment
        rejects, and the reason is what the model is told.
        """
        if self._seed is None:
            raise RuntimeError(f"reset() the {self.task_id} episode before calling its tools")
        if self._env.done:
            raise EpisodeFinishedError(ENDED)
        result = self._env.step(action)
        self._actions.append(action)
        error = reason or result.info.get("error")
        feedback = str(error)[:FEEDBACK_LIMIT] if error else None
        self._rejected += result.info.get("error") is not None
        if result.done:
            return f"Your last action was rejected: {feedback}\n{ENDED}" if feedback else ENDED
        return observation_text(self._adapter, result.observation, feedback)

    def _refuse(self, reason: str, call: dict[str, Any]) -> str:
        """Step the environment with an action it rejects, telling the model ``reason``.

        ``tool_call`` is a field no action has, so every environment rejects the mapping, and charges
        it as any rejected action.
        """
        return self._act({"tool_call": call}, reason)


class InformationIntegrityTools(ToolEnv):
    """information_integrity: verify claims, check sources, then decide."""

    def verify_claim(self, claim_id: str) -> str:
        """Verify one claim of the post: reveals its fact-check verdict and confidence.

        Args:
            claim_id: Id of the claim to verify, e.g. "claim_1".

        Returns:
            What you observe next.

        """
        return self._act({"type": "verify_claim", "claim_id": claim_id})

    def check_source(self, source_id: str) -> str:
        """Read one source: reveals its text, stance, reliability, type, date and whether it is satire.

        Args:
            source_id: Id of the source to read, e.g. "src_2".

        Returns:
            What you observe next.

        """
        return self._act({"type": "check_source", "source_id": source_id})

    def decide(self, decision: Decision, reasoning: str | None = None) -> str:
        """Decide what to do with the post; this ends the episode.

        Args:
            decision: allow, flag or remove.
            reasoning: Why, as short typed statements citing ids you checked, e.g. "src_2 refutes claim_1."

        Returns:
            That the episode has ended.

        """
        return self._act({"type": "decide", "decision": decision, "reasoning": reasoning})


class PiiRedactionTools(ToolEnv):
    """pii_redaction: redact spans of the window, move it, finish."""

    def redact(self, label: Label, text: str | None = None, start: int | None = None, end: int | None = None) -> str:
        """Redact one span of personal data in the visible window: quote it, or give its offsets.

        Args:
            label: EMAIL, PHONE, SSN, NAME, ADDRESS or DOB.
            text: The exact characters to hide, copied from the window (their first occurrence not yet
                redacted is hidden).
            start: Instead of text: absolute offset of the span's first character in the document.
            end: With start: absolute offset one past the span's last character.

        Returns:
            What you observe next.

        """
        call = {"label": label, "text": text, "start": start, "end": end}
        offsets = start is not None or end is not None
        if offsets == (text is not None):
            return self._refuse("redact takes either the text to hide or its start and end offsets", call)
        if not offsets:
            if not isinstance(text, str):
                return self._refuse(f"text must be the characters to hide, copied from the window, not {text!r}", call)
            try:
                start, end = locate(text, self._env.observation())
            except ActionReadError as exc:
                return self._refuse(str(exc), call)
        elif any(isinstance(x, bool) for x in (start, end)):  # pydantic would read true as offset 1
            return self._refuse(f"start and end must be whole numbers, got {start!r} and {end!r}", call)
        return self._act({"action_type": "REDACT", "start": start, "end": end, "label": label})

    def next_chunk(self) -> str:
        """Move the window forward by half its width.

        Returns:
            What you observe next.

        """
        return self._act({"action_type": "NEXT_CHUNK"})

    def prev_chunk(self) -> str:
        """Move the window back by half its width.

        Returns:
            What you observe next.

        """
        return self._act({"action_type": "PREV_CHUNK"})

    def skip(self) -> str:
        """Do nothing this step.

        Returns:
            What you observe next.

        """
        return self._act({"action_type": "SKIP"})

    def finish(self) -> str:
        """End the episode once the whole document has been read.

        Returns:
            That the episode has ended.

        """
        return self._act({"action_type": "FINISH"})


class SelectiveVerificationTools(ToolEnv):
    """selective_verification: one answer, which ends the episode."""

    def answer(self, verdict: Verdict, confidence: float | None = None) -> str:
        """Answer the claim; this ends the episode.

        Args:
            verdict: SUPPORTED (the claim is true), REFUTED (it is false) or ABSTAIN.
            confidence: Probability in [0, 1] that the verdict is correct; required unless abstaining.

        Returns:
            That the episode has ended.

        """
        return self._act({"verdict": verdict, "confidence": confidence})


#: The tool class of each environment.
TOOL_CLASSES: dict[str, type[ToolEnv]] = {
    "information_integrity": InformationIntegrityTools,
    "pii_redaction": PiiRedactionTools,
    "selective_verification": SelectiveVerificationTools,
}


def environment_factory(task_id: str, partition: str = "train", **config: Any) -> type[ToolEnv]:
    """The class to pass as ``GRPOTrainer(environment_factory=...)`` for ``task_id``.

    Each instance plays items of ``partition`` with ``config`` overriding the task's defaults (as
    ``integrity_gym.make`` takes it). The config is checked here, once.
    """
    spec = get_spec(task_id)
    base = TOOL_CLASSES.get(spec.env)
    if base is None:
        raise ValueError(f"no TRL tools for environment {spec.env!r}; there are tools for {', '.join(TOOL_CLASSES)}")
    make(spec.id, partition=partition, **config).close()
    attrs = {"task_id": spec.id, "partition": partition, "config": dict(config), "__module__": __name__}
    return cast(type[ToolEnv], type(base.__name__, (base,), attrs))


def rows(
    task_id: str, partition: str = "train", episodes: int = 8, seed: int = 0, **config: Any
) -> list[dict[str, Any]]:
    """Training rows of seeds ``seed`` … ``seed + episodes - 1``.

    Each has ``prompt`` (the system message and the first observation, as ``ToolEnv.reset`` expects
    them) and ``seed``.
    """
    if episodes < 1:
        raise ValueError(f"episodes must be at least 1, got {episodes}")
    spec = get_spec(task_id)
    env, adapter = make(spec.id, partition=partition, **config), get_adapter(spec)
    out = []
    for item in range(seed, seed + episodes):
        observation = env.reset(seed=item)
        prompt = [
            {"role": "system", "content": system_text(adapter, spec, observation)},
            {"role": "user", "content": observation_text(adapter, observation)},
        ]
        out.append({"prompt": prompt, "seed": item})
    env.close()
    return out


def dataset(task_id: str, partition: str = "train", episodes: int = 8, seed: int = 0, **config: Any) -> Any:
    """``rows(...)`` as a ``datasets.Dataset`` (the train extra), the ``train_dataset`` TRL takes."""
    return importlib.import_module("datasets").Dataset.from_list(rows(task_id, partition, episodes, seed, **config))


def grade_reward(environments: list[Any] | None = None, **kwargs: Any) -> list[float | None]:
    """TRL reward function: each rollout's grade (``env.grade().score``), finished or not.

    A rollout of another kind of environment (a dict ``environment_factory`` mixing several) gets
    None, which TRL leaves out of the reward. With TRL's ``log_metric`` it also logs, per batch, the
    share of episodes the environment ended (``igym/finished``), the mean actions per episode
    (``igym/actions``) and the share of actions the environment rejected (``igym/rejected``).
    """
    if environments is None:
        raise TypeError(
            "grade_reward reads the rollouts' environments: pass it with "
            "GRPOTrainer(environment_factory=environment_factory(task_id), reward_funcs=grade_reward)"
        )
    ours = [e for e in environments if isinstance(e, ToolEnv)]
    scores = [float(e.env.grade().score) if isinstance(e, ToolEnv) else None for e in environments]
    log_metric = kwargs.get("log_metric")
    if callable(log_metric) and ours:
        actions = sum(len(e.actions) for e in ours)
        log_metric("igym/finished", statistics.fmean(float(e.env.done) for e in ours))
        log_metric("igym/actions", actions / len(ours))
        log_metric("igym/rejected", sum(e.rejected for e in ours) / max(1, actions))
    return scores


__all__ = [
    "ENDED",
    "FEEDBACK_LIMIT",
    "TOOL_CLASSES",
    "TOOL_NOTE",
    "InformationIntegrityTools",
    "PiiRedactionTools",
    "SelectiveVerificationTools",
    "ToolEnv",
    "dataset",
    "environment_factory",
    "grade_reward",
    "observation_text",
    "rows",
    "system_text",
]
