"""Multi-step GRPO: the benchmark runner plays whole episodes against the policy being trained.

TRL 1.16's ``GRPOTrainer(rollout_func=...)`` calls ``rollout_func(prompts, trainer)`` with the batch's
prompts (TRL's sampler has already repeated each one ``num_generations`` times) and takes back one
``prompt_ids``/``completion_ids`` pair per prompt, ``logprobs`` (only read with vLLM; ``None``, as
TRL's own transformers generation returns) and any other field, which reaches the reward functions
as a keyword argument. An ``env_mask`` field marks the completion tokens the loss uses (1) and those
that came from elsewhere (0); TRL multiplies it into the loss mask.

``EpisodeRollout`` is that rollout function. Each prompt stands for one train-partition item; its
episode is played by ``bench.runner.play_episode`` with the ``llm`` agent, the turn cap
(``max_turns``) and the train partition, exactly as ``igym bench`` plays an episode, against an
in-process endpoint (``endpoint.serve``) whose completer is ``EpisodeRecorder``. So each
observation is worded by the agent's adapter (with the last rejection, as the agent sends it), each
reply is read by the agent's ``read_action`` with the prefill put back, and the environment decides
when the episode is over. The agent runs in conversation mode (``LLMSettings.conversation``): each
request carries the whole episode so far, and ``igym train`` evaluates with the same mode, so the
trained policy is evaluated in the context it was trained in. The recorder checks that each request
extends the conversation it recorded, samples the reply (``sampler``: the GRPO config's generation
settings, from the trainer's model; no private TRL method) and keeps the tokens as one sequence —
the first prompt, then the model's sampled tokens (mask 1) with the environment's tokens between
them (mask 0: the chat template's turn boundaries, the next observation, the prefill).

The episode's reward is its grade (``env.grade().score``, the figure the benchmark reports), whether
the episode ended by itself or at the cap; its return is logged beside it.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from integrity_gym.agents.llm import LLMSettings
from integrity_gym.agents.prompts import get_adapter
from integrity_gym.core.registry import get_spec, make
from integrity_gym.train.grpo import StepLog, TrainConfig, bf16_autocast, first_prompt, rendered_row, reply_flags
from integrity_gym.train.model import render

Generate = Callable[[list[int]], list[int]]


@dataclass
class EpisodeTokens:
    """One episode as TRL trains on it: the first prompt, then everything after it with its mask."""

    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    #: 1 on a token the model sampled, 0 on one the environment or the chat template wrote.
    env_mask: list[int] = field(default_factory=list)
    conversation: list[dict[str, Any]] = field(default_factory=list)
    #: The text the tokens stand for, as the chat template renders the conversation so far.
    text: str = ""
    generate_s: float = 0.0

    @property
    def model_tokens(self) -> int:
        """Tokens the model sampled (the ones trained on)."""
        return sum(self.env_mask)


def _turns(messages: list[dict[str, Any]], prefill: str | None) -> list[dict[str, Any]]:
    """The conversation of a request of the ``llm`` agent in conversation mode, without the prefill."""
    if prefill:
        if messages[-1:] != [{"role": "assistant", "content": prefill}]:
            raise ValueError(f"the rollout expects each request to end with the prefill {prefill!r}")
        messages = messages[:-1]
    roles = [m.get("role") for m in messages]
    expected = ["system", *["user", "assistant"] * ((len(messages) - 2) // 2), "user"]
    if roles != expected:
        raise ValueError(f"the rollout expects the llm agent's conversation {expected}; got {roles}")
    if not all(isinstance(m.get("content"), str) for m in messages):
        raise ValueError("the rollout trains text-only models: the observation must be text (LLM_IMAGES=0)")
    return messages


class EpisodeRecorder:
    """The endpoint's completer during rollouts: continues one episode's conversation and keeps its tokens.

    Inside ``recording()`` each request of the agent adds a turn to the episode it yields. Requests
    must come one at a time, from one episode (``EpisodeRollout`` plays episodes in turn).
    """

    def __init__(self, tokenizer: Any, prefill: str | None, generate: Generate | None = None) -> None:
        self.tokenizer = tokenizer
        self.prefill = prefill
        #: Samples a reply to a token sequence; set by ``EpisodeRollout`` to TRL's generation.
        self.generate = generate
        self.special = set(tokenizer.all_special_ids)
        self.lock = threading.Lock()
        self.episode: EpisodeTokens | None = None

    @contextlib.contextmanager
    def recording(self) -> Iterator[EpisodeTokens]:
        """Record one episode while the context is open; yield its tokens as they grow."""
        self.episode = EpisodeTokens()
        try:
            yield self.episode
        finally:
            self.episode = None

    def complete(self, body: dict[str, Any]) -> tuple[str, int, int, str]:
        """Append the request's observation, sample the reply; ``(reply, prompt tokens, new tokens, finish)``."""
        with self.lock:
            episode = self.episode
            if episode is None or self.generate is None:
                raise RuntimeError("a request arrived outside a recorded episode")
            turns = _turns(body["messages"], self.prefill)
            if turns[:-1] != (episode.conversation or turns[:1]):
                raise ValueError(
                    "the agent's conversation is not the one the rollout recorded: it must send the whole "
                    "episode (LLMSettings.conversation)"
                )
            episode.conversation = list(turns)
            tail = [{"role": "assistant", "content": self.prefill}] if self.prefill else []
            text = render(self.tokenizer, episode.conversation + tail)
            if not text.startswith(episode.text):
                raise ValueError("the chat template rewrote an earlier turn; the episode cannot be one sequence")
            between = self.tokenizer(text[len(episode.text) :], add_special_tokens=False)["input_ids"]
            last = episode.completion_ids[-1:]
            if last and last[0] in self.special and between[:1] == last:
                between = between[1:]  # the model closed its turn itself: that token is already in the sequence
            if not episode.prompt_ids:
                episode.prompt_ids = list(between)
            else:
                episode.completion_ids += between
                episode.env_mask += [0] * len(between)
            started = time.perf_counter()
            reply_ids = list(self.generate(episode.prompt_ids + episode.completion_ids))
            episode.generate_s += time.perf_counter() - started
            episode.completion_ids += reply_ids
            episode.env_mask += [1] * len(reply_ids)
            reply = self.tokenizer.decode(reply_ids, skip_special_tokens=True)
            episode.text = text + reply
            whole = (self.prefill or "") + reply
            episode.conversation.append({"role": "assistant", "content": whole})
            stopped = bool(reply_ids) and reply_ids[-1] in self.special
            total = len(episode.prompt_ids) + len(episode.completion_ids)
            # The whole reply, prefill included: a continuation that itself starts with the prefill would
            # otherwise be taken by the agent for a whole reply, and its turn would differ from these tokens.
            return whole, total - len(reply_ids), len(reply_ids), "stop" if stopped else "length"


class EpisodeRollout:
    """TRL's ``rollout_func`` and reward function for a multi-step task (see the module docstring)."""

    def __init__(self, config: TrainConfig, tokenizer: Any, log_path: Path, label: str) -> None:
        self.config = config
        self.spec = get_spec(config.task)
        self.tokenizer = tokenizer
        self.label = label
        self.recorder = EpisodeRecorder(tokenizer, config.prefill)
        self.log = StepLog(log_path)
        self.seed_of: dict[str, int] = {}
        self.item_ids: dict[int, str] = {}
        self.url: str | None = None
        self.__name__ = "env_grade"  # TRL names the reward column after it

    def rows(self, seeds: range) -> list[dict[str, Any]]:
        """The training rows: per train seed, its first prompt as the agent would send it (the row's key)."""
        env, adapter = make(self.config.task, partition="train"), get_adapter(self.spec)
        rows = []
        for seed in seeds:
            row = rendered_row(first_prompt(env, self.spec, adapter, seed), self.tokenizer, self.config.prefill)
            prompt = row["prompt"]
            if prompt in self.seed_of:  # TRL hands the rollout prompts only: each must name one item
                raise ValueError(f"train seeds {self.seed_of[prompt]} and {seed} have the same first prompt")
            self.seed_of[prompt] = seed
            self.item_ids[seed] = row["item_id"]
            rows.append(row)
        return rows

    @contextlib.contextmanager
    def serving(self) -> Iterator[str]:
        """Serve the recorder to the agent while training runs."""
        from integrity_gym.train.endpoint import serve

        with serve(self.recorder, self.label) as url:
            self.url = url
            try:
                yield url
            finally:
                self.url = None

    def settings(self) -> LLMSettings:
        """The ``llm`` agent's settings in training: the recorder's URL, the prefill, text only."""
        if self.url is None:
            raise RuntimeError("EpisodeRollout.serving() must be open while the trainer runs")
        c = self.config
        return LLMSettings(
            api_base_url=self.url, model_name=self.label, temperature=c.temperature,
            max_tokens=max(16, c.max_new_tokens), prefill=c.prefill, response_format="none", images=False,
            conversation=True, timeout_s=3600.0, retries=0,
        )  # fmt: skip

    def play(self, seed: int, index: int = 0) -> tuple[dict[str, Any], EpisodeTokens]:
        """Play train seed ``seed`` with the runner; the episode's log entry and its tokens."""
        from integrity_gym.bench.runner import BenchConfig, play_episode

        settings = self.settings()
        bench = BenchConfig.build(
            tasks=self.config.task, agent="llm", seeds=(seed,), partition="train", max_steps=self.config.max_turns,
            keep_observations=False, llm=settings.public(),
        )  # fmt: skip
        started = time.perf_counter()
        with self.recorder.recording() as tokens:
            record = play_episode(self.spec, bench, index, seed, llm_settings=settings)
        if record.error or record.score is None or not tokens.prompt_ids:
            raise RuntimeError(f"train episode seed {seed} failed: {record.error or 'the model was never asked'}")
        flags = [reply_flags(s) for s in record.trajectory]
        entry = {
            "seed": seed,
            "item_id": self.item_ids[seed],
            "grade": record.score,
            "return": record.total_return,
            "turns": record.steps,
            "truncated": record.truncated,
            "malformed_turns": sum(f[0] for f in flags),
            "abstain_turns": sum(f[1] for f in flags),
            "replies": [(s.llm or {}).get("raw") for s in record.trajectory],
            "prompt_tokens": len(tokens.prompt_ids),
            "model_tokens": tokens.model_tokens,
            "env_tokens": len(tokens.env_mask) - tokens.model_tokens,
            "seconds": round(time.perf_counter() - started, 2),
            "generate_seconds": round(tokens.generate_s, 2),
        }
        return entry, tokens

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """TRL's rollout: play one episode per prompt, sampling from the trainer's model; tokens, masks, episodes."""
        generate = self.sampler(trainer)
        self.recorder.generate = generate
        out: dict[str, list[Any]] = {"prompt_ids": [], "completion_ids": [], "env_mask": [], "episode": []}
        for index, prompt in enumerate(prompts):
            if prompt not in self.seed_of:
                raise ValueError("the rollout got a prompt that is not one of its training rows")
            entry, tokens = self.play(self.seed_of[prompt], index)
            out["prompt_ids"].append(tokens.prompt_ids)
            out["completion_ids"].append(tokens.completion_ids)
            out["env_mask"].append(tokens.env_mask)
            out["episode"].append(entry)
        return {**out, "logprobs": None}

    def sampler(self, trainer: Any) -> Generate:
        """How replies are sampled during ``trainer``'s rollouts: from its model (``sampler``)."""
        return sampler(trainer.model, trainer.args, self.tokenizer, self.config.bf16)

    def reward(
        self, prompts: list[Any], completions: list[Any], episode: list[dict[str, Any]], **_: Any
    ) -> list[float]:
        """The reward function: each episode's grade; the step's line goes to the log."""
        grades = [float(e["grade"]) for e in episode]
        self.log.write(
            grades,
            (sum(e["malformed_turns"] for e in episode), sum(e["abstain_turns"] for e in episode),
             sum(e["turns"] for e in episode)),
            [], [e["item_id"] for e in episode], [e["seed"] for e in episode],
            (episode[0]["replies"] or [""])[0] or "", reward="grade", returns=[e["return"] for e in episode],
            episodes=episode,
        )  # fmt: skip
        return grades


def sampler(model: Any, args: Any, tokenizer: Any, bf16: bool) -> Generate:
    """Sample a reply to a token sequence from ``model`` with the GRPO config's generation settings.

    As TRL samples its own completions: ``max_completion_length``, ``temperature``, ``top_p``,
    ``top_k``, ``min_p``, ``repetition_penalty`` and ``generation_kwargs`` from ``args``; every end id
    the model or the tokenizer declares ends the reply, and that id is kept.
    """
    torch = importlib.import_module("torch")
    transformers = importlib.import_module("transformers")
    declared = model.generation_config.eos_token_id
    eos = [declared] if isinstance(declared, int) else list(declared or [])
    eos = list(dict.fromkeys([tokenizer.eos_token_id, *eos]))
    config = transformers.GenerationConfig(
        max_new_tokens=args.max_completion_length, do_sample=True, temperature=args.temperature, top_p=args.top_p,
        top_k=args.top_k, min_p=args.min_p, repetition_penalty=args.repetition_penalty,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=eos, **(args.generation_kwargs or {}),
    )  # fmt: skip

    def generate(ids: list[int]) -> list[int]:
        # It runs in the endpoint's thread, and autocast is per thread: enter it here.
        inputs = torch.tensor([ids], device=model.device)
        with bf16_autocast(bf16), torch.no_grad():
            out = model.generate(input_ids=inputs, attention_mask=torch.ones_like(inputs), generation_config=config)
        new: list[int] = out[0, len(ids) :].tolist()
        ends = [i for i, token in enumerate(new) if token in eos]
        return new[: ends[0] + 1] if ends else new

    return generate
