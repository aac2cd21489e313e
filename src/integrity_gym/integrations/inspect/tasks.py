"""One inspect_ai ``@task`` per registered integrity-gym task: ``inspect eval integrity_gym/<name>``.

Importing this module registers every task under the name ``integrations.inspect.inspect_name``
gives it; the ``inspect_ai`` entry point of the package points here, so inspect finds them by name.
Each task takes ``-T`` parameters: ``partition`` (train or eval), ``episodes`` and ``seed`` (the
items ``igym bench`` plays: seeds seed .. seed + episodes - 1), ``max_steps`` (a cap on top of the
task's own budget) and ``images`` (false: never send pictures).

A sample is one item. Its input is the first turn's messages as the ``llm`` agent sends them, its
metadata the item's ids and public fields (``bench.export.prompt_row``, which holds no ground
truth); its target is empty. The solver (``play_episode``) rebuilds the environment on the
item's seed and plays the whole episode with the model under evaluation through
``integrations.verifiers.episodes.EnvEpisode``: each turn sends the ``llm`` agent's messages (the
system prompt and the current observation, with why the last reply was rejected) and its reply
schema, and the reply is read by the agent's own reader, so a reply means what it means in
``igym bench``. The grade is taken when the episode ends (or the cap or an inspect limit stops
it) and kept in the sample's store; the scorer (``grade``) reports its score as the value and
success, threshold, the breakdown and the episode's figures as metadata.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    Content,
    ContentImage,
    ContentText,
    GenerateConfig,
    Model,
    ModelOutput,
    ResponseSchema,
    get_model,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, mean, metric, scorer, stderr
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import JSONSchema

from integrity_gym.agents.llm import LLMSettings, is_format_refusal, is_image_refusal
from integrity_gym.bench.episode import explanation
from integrity_gym.bench.export import (
    PARTITIONS,
    ExportPartition,
    Item,
    item_episode,
    plan_items,
    prompt_row,
    turn_messages,
)
from integrity_gym.core.registry import get_spec
from integrity_gym.integrations.inspect import inspect_tasks
from integrity_gym.integrations.verifiers.episodes import EnvEpisode

logger = logging.getLogger(__name__)

#: Where the solver leaves the finished episode's grade and figures for the scorer (the sample's store).
STORE_KEY = "integrity_gym/episode"
#: The sample metadata keys taken from ``bench.export.prompt_row``; ``observation`` holds its ``metadata``.
HEAD_KEYS = ("task_id", "env", "tier", "partition", "index", "seed", "item_id")


# ---------------------------------------------------------------------------------- messages
def chat_messages(messages: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """OpenAI chat messages as the ``llm`` agent sends them (text, or text and image parts) as inspect's."""
    out: list[ChatMessage] = []
    for message in messages:
        raw = message["content"]
        content: str | list[Content] = (
            raw
            if isinstance(raw, str)
            else [
                ContentImage(image=part["image_url"]["url"])
                if part["type"] == "image_url"
                else ContentText(text=part["text"])
                for part in raw
            ]
        )
        role = message["role"]
        if role == "system":
            out.append(ChatMessageSystem(content=content))
        elif role == "user":
            out.append(ChatMessageUser(content=content))
        else:
            out.append(ChatMessageAssistant(content=content))
    return out


def sample_id(task_id: str, seed: int) -> str:
    """The id of item ``seed`` of ``task_id``, in a live evaluation and an exported run alike."""
    return f"{task_id}@{seed}"


# ---------------------------------------------------------------------------------- grade -> score
def episode_score(
    grade: Mapping[str, Any], *, answer: str | None, explanation: str | None, figures: Mapping[str, Any]
) -> Score:
    """An episode's inspect score: the grade's score; success, threshold, breakdown and ``figures`` as metadata."""
    metadata = {"success": bool(grade["success"]), "threshold": grade["threshold"],
                "breakdown": dict(grade["breakdown"]), **figures}  # fmt: skip
    return Score(value=float(grade["score"]), answer=answer, explanation=explanation, metadata=metadata)


@metric
def success_rate() -> Metric:
    """The share of episodes whose grade reached the task's threshold."""

    def compute(scores: list[SampleScore]) -> float:
        flags = [bool((s.score.metadata or {}).get("success")) for s in scores]
        return sum(flags) / len(flags) if flags else 0.0

    return compute


@scorer(metrics=[mean(), stderr(), success_rate()])
def grade() -> Scorer:
    """The environment's grade of the episode the solver played."""

    async def score(state: TaskState, target: Target) -> Score:
        played = state.store.get(STORE_KEY)
        if played is None:
            raise RuntimeError("no episode was played for this sample: use the play_episode solver")
        return episode_score(played["grade"], answer=state.output.completion or None,
                             explanation=played["explanation"], figures=played["figures"])  # fmt: skip

    return score


# ---------------------------------------------------------------------------------- playing
def _response_schema(episode: EnvEpisode) -> ResponseSchema:
    """The reply schema the ``llm`` agent asks for (strict, named ``action``)."""
    schema = JSONSchema.model_validate(episode.adapter.schema(episode.observation))
    return ResponseSchema(name="action", json_schema=schema, strict=True)


async def _ask(model: Model, episode: EnvEpisode, schema: bool) -> tuple[ModelOutput, list[ChatMessage], bool]:
    """The model's reply to the episode's current turn, the messages sent, and whether the schema still is.

    An endpoint that refuses pictures is asked again with the text-only message, one that refuses
    the schema without it, for the rest of the episode (the ``llm`` agent's fallbacks).
    """
    while True:
        sent = chat_messages(turn_messages(episode))
        config = GenerateConfig(response_schema=_response_schema(episode) if schema else None)
        try:
            return await model.generate(sent, config=config), sent, schema
        except Exception as exc:
            if episode.images and not isinstance(episode.user_message(), str) and is_image_refusal(exc):
                episode.images = False
            elif schema and is_format_refusal(exc):
                schema = False
            else:
                raise


def openai_compatible(model: Model) -> bool:
    """Ask a model served at an OpenAI-compatible endpoint as the ``llm`` agent asks it; whether that changed.

    inspect's ``openai`` provider takes a model name it does not know (``SmolLM2-135M-Instruct``,
    ``Qwen/Qwen2.5-7B-Instruct``) for OpenAI's newest model: it sends it to the Responses API, which
    many OpenAI-compatible servers lack and which llama.cpp serves without enforcing the reply
    schema, and it leaves out the temperature. Such a name at a base URL other than OpenAI's is
    asked as a plain chat model instead: chat completions (unless ``-M responses_api=...`` chose),
    a system message, the temperature and seed as configured.
    """
    api = model.api
    if type(api).__name__ != "OpenAIAPI":
        return False
    base = api.base_url or os.environ.get("OPENAI_BASE_URL") or os.environ.get("INSPECT_EVAL_MODEL_BASE_URL")
    is_latest = getattr(api, "is_latest", None)
    if not base or "api.openai.com" in base or not callable(is_latest) or not is_latest():
        return False  # OpenAI itself, or a name inspect knows (gpt-*, o-series): its choices stand
    # inspect 0.3.285 reads the family from this method alone (temperature, system role, token limit).
    api.is_latest = lambda: False  # type: ignore[attr-defined]
    if "responses_api" not in model.model_args:
        api.responses_api = False  # type: ignore[attr-defined]
    logger.warning(
        "integrity-gym asks %s at %s as an OpenAI-compatible chat model (chat completions, temperature, "
        "system message), not as OpenAI's newest model, which inspect takes a name it does not know for; "
        "pass -M responses_api=true to use the Responses API",
        model.name, base,
    )  # fmt: skip
    return True


def _keep_grade(state: TaskState, episode: EnvEpisode) -> None:
    """Leave the episode's grade, explanation and figures in the sample's store for the scorer."""
    figures = {"steps": episode.steps, "total_return": episode.reward_sum, "truncated": not episode.done,
               "unreadable_replies": episode.unreadable}  # fmt: skip
    state.store.set(STORE_KEY, {"grade": episode.grade().model_dump(mode="json"),
                                "explanation": explanation(episode.env), "figures": figures})  # fmt: skip


@solver
def play_episode(max_steps: int | None = None, images: bool = True) -> Solver:
    """Play the sample's whole episode with the model under evaluation, one action per reply."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        item = Item(get_spec(meta["task_id"]), int(meta["index"]), int(meta["seed"]))
        episode = item_episode(item, meta["partition"], images)
        model, schema = get_model(), True
        openai_compatible(model)
        conversation: list[ChatMessage] = []
        try:
            while not episode.done and (max_steps is None or episode.steps < max_steps):
                output, sent, schema = await _ask(model, episode, schema)
                if not conversation or sent[0].text != conversation[0].text:
                    conversation.append(sent[0])
                conversation += [*sent[1:], output.message]
                state.messages, state.output = conversation, output
                episode.step(output.completion)
        except BaseException:  # an inspect limit (or a cancelled time limit) still gets the episode graded
            with contextlib.suppress(Exception):
                _keep_grade(state, episode)
            raise
        else:
            _keep_grade(state, episode)
        finally:
            episode.close()
        return state

    return solve


# ---------------------------------------------------------------------------------- tasks
def samples(task_id: str, partition: ExportPartition, *, episodes: int, seed: int, images: bool) -> list[Sample]:
    """The items of ``task_id`` as ``igym bench`` numbers them, each a sample with its first prompt."""
    out = []
    for item in plan_items(task_id, episodes=episodes, seed=seed):
        row = prompt_row(item, partition, images=images)
        metadata = {**{k: row[k] for k in HEAD_KEYS}, "observation": row["metadata"]}
        out.append(Sample(id=sample_id(row["task_id"], row["seed"]), input=chat_messages(row["messages"]),
                          metadata=metadata))  # fmt: skip
    return out


def episode_task(
    task_id: str,
    *,
    partition: str = "eval",
    episodes: int = 5,
    seed: int = 0,
    max_steps: int | None = None,
    images: bool = True,
) -> Task:
    """The inspect task that plays ``task_id``'s items (see the module's docstring for the parameters).

    Sampling and retries default to the ``llm`` agent's (temperature, reply tokens, seed, retries);
    inspect's own options (``--temperature``, ``--max-retries`` ...) override them.
    """
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be train or eval, not {partition!r}")
    if episodes < 1 or seed < 0 or (max_steps is not None and max_steps < 1):
        raise ValueError("episodes and max_steps must be at least 1, seed at least 0")
    spec = get_spec(task_id)
    llm = LLMSettings()
    chosen: ExportPartition = "train" if partition == "train" else "eval"
    return Task(
        dataset=MemoryDataset(samples(task_id, chosen, episodes=episodes, seed=seed, images=images), name=task_id),
        solver=play_episode(max_steps=max_steps, images=images),
        scorer=grade(),
        # The agent's retries too: an endpoint's refusal (of pictures, say) comes back, to be answered as it does.
        config=GenerateConfig(
            temperature=llm.temperature, max_tokens=llm.max_tokens, seed=llm.seed, max_retries=llm.retries
        ),
        version=spec.version,
        description=spec.description,
        metadata={"igym_task_id": task_id, "env": spec.env, "tier": spec.tier, "partition": partition},
    )


def _register(name: str, task_id: str) -> Callable[..., Task]:
    """Register ``task_id`` with inspect as ``integrity_gym/<name>``."""

    def make(
        partition: str = "eval", episodes: int = 5, seed: int = 0, max_steps: int | None = None, images: bool = True
    ) -> Task:
        return episode_task(task_id, partition=partition, episodes=episodes, seed=seed, max_steps=max_steps,
                            images=images)  # fmt: skip

    make.__name__ = make.__qualname__ = name
    make.__doc__ = f"{task_id}: {get_spec(task_id).description}"
    registered: Callable[..., Task] = task(name=name)(make)
    return registered


#: Every registered task's inspect task factory, by inspect name (each also a module attribute).
TASKS: dict[str, Callable[..., Task]] = {name: _register(name, task_id) for name, task_id in inspect_tasks().items()}
globals().update(TASKS)

__all__ = [
    "HEAD_KEYS",
    "STORE_KEY",
    "TASKS",
    "chat_messages",
    "episode_score",
    "episode_task",
    "grade",
    "openai_compatible",
    "play_episode",
    "sample_id",
    "samples",
    "success_rate",
]
