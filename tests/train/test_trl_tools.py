"""TRL's ``environment_factory`` adapter (``integrations.trl``): the tools alone, then inside TRL's own loop.

The unit tests need nothing but integrity-gym. The GRPO tests run one step of TRL 1.16's
``GRPOTrainer`` with the adapter and ``grade_reward`` on a tiny randomly initialised Llama whose
tokenizer (SmolLM2's) carries TRL's own Qwen2.5 chat template, the one TRL knows how to parse tool
calls from. A random model never writes a tool call, so a second run scripts the model's
``generate``: TRL then parses the scripted calls, calls the tools and feeds their results back,
exactly as it would for a real model. Nothing here is about learning. Those two need the train extra
and the SmolLM2 weights; skipped without them unless IGYM_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

import pytest

from integrity_gym import make
from integrity_gym.agents.prompts import get_adapter
from integrity_gym.core.env import EpisodeFinishedError
from integrity_gym.integrations.trl import (
    ENDED,
    TOOL_NOTE,
    ToolEnv,
    environment_factory,
    grade_reward,
    observation_text,
    rows,
)

from .conftest import require_training

II = "information_integrity/easy-v3"
II_HARD = "information_integrity/hard-v3"
PII = "pii_redaction/gdpr_contract_easy-v4"
SEED = 5


def tools_for(task: str, seed: int = SEED) -> ToolEnv:
    """A tool environment reset on the ``dataset`` row of ``seed``."""
    tools = environment_factory(task)()
    (row,) = rows(task, episodes=1, seed=seed)
    assert tools.reset(**row) is None  # the row already ends with the first observation
    return tools


def call(tools: ToolEnv, action: dict[str, Any]) -> str:
    """Call the tool that carries out ``action`` (an action mapping of the environment) with its fields."""
    fields = {k: v for k, v in action.items() if v is not None and k not in ("type", "action_type")}
    name = str(action.get("type") or action.get("action_type")).lower()
    result: str = getattr(tools, name)(**fields)
    return result


def oracle_calls(tools: ToolEnv) -> list[str]:
    """Play the oracle's actions through the tools to the end; the tools' returns."""
    cls = type(tools.env)
    returns = []
    while not tools.env.done:
        returns.append(call(tools, cls.oracle_action(tools.env.state()).model_dump()))
    return returns


def rejection(out: str) -> str:
    """The line of a tool's return that says why the action was rejected ("" if none)."""
    prefix = "Your last action was rejected: "
    return next((line.removeprefix(prefix) for line in out.splitlines() if line.startswith(prefix)), "")


def direct_oracle_grade(task: str, seed: int) -> float:
    """The oracle's grade on the same item, stepping the environment directly."""
    env = make(task, partition="train")
    env.reset(seed=seed)
    while not env.done:
        env.step(type(env).oracle_action(env.state()))
    return float(env.grade().score)


# --------------------------------------------------------------------------- the tools alone


@pytest.mark.parametrize("task", [II, II_HARD, PII])
def test_the_oracles_actions_through_the_tools_reach_the_oracles_grade(task: str) -> None:
    tools = tools_for(task)
    returns = oracle_calls(tools)
    assert returns[-1] == ENDED and tools.rejected == 0
    grade = tools.env.grade()
    assert grade.success and grade.score == direct_oracle_grade(task, SEED)
    assert grade_reward([tools]) == [grade.score]


def test_reset_plays_the_rows_seed_and_refuses_a_row_that_shows_another_item() -> None:
    tools = environment_factory(II)()
    row3, row4 = rows(II, episodes=2, seed=3)
    assert tools.reset(**row3) is None and tools.seed == 3
    assert row3["prompt"][0]["role"] == "system" and row3["prompt"][0]["content"].endswith(TOOL_NOTE)
    with pytest.raises(ValueError, match="not the first observation"):
        tools.reset(prompt=row3["prompt"], seed=4)
    eval_row = rows(II, partition="eval", episodes=1, seed=4)[0]
    with pytest.raises(ValueError, match="not the first observation"):
        tools.reset(**eval_row)  # a train-partition environment would show another item than it plays
    with pytest.raises(ValueError, match="integer 'seed'"):
        tools.reset(prompt=[{"role": "user", "content": ""}])  # TRL's placeholder rows, without a dataset
    # An empty last message gets the observation, which TRL appends to it.
    text = tools.reset(prompt=[{"role": "user", "content": ""}], seed=4)
    assert text == row4["prompt"][1]["content"] and tools.seed == 4 and tools.actions == ()


def test_bad_arguments_are_rejected_with_a_reason_and_the_episode_goes_on() -> None:
    tools = tools_for(II)
    out = tools.verify_claim("claim_99")
    assert "Your last action was rejected: unknown claim_id 'claim_99'; claims are claim_1" in out
    out = tools.check_source(3)  # a model may send any JSON
    assert "rejected: source_id: Input should be a valid string" in out
    out = tools.decide("ban")
    assert "rejected: decision: Input should be 'allow', 'flag' or 'remove'" in out
    assert tools.rejected == 3 and not tools.env.done and "Reply with the next action." in out
    assert tools.env.state().invalid == 3  # charged as the environment charges any rejected action

    pii = tools_for(PII)
    window = pii.env.observation().visible_text
    for kwargs, reason in [
        ({"start": "abc", "end": 5}, "start: Input should be a valid integer"),
        ({"start": True, "end": 5}, "start and end must be whole numbers, got True and 5"),
        ({"start": 2.5, "end": 5}, "start: Input should be a valid integer, got a number with a fractional part"),
        ({}, "redact takes either the text to hide or its start and end offsets"),
        (
            {"text": window[:5], "start": 0, "end": 5},
            "redact takes either the text to hide or its start and end offsets",
        ),
        ({"text": "no such words here at all"}, "does not appear in the window"),
        ({"text": 42}, "text must be the characters to hide"),
    ]:
        out = pii.redact("NAME", **kwargs)
        assert reason in rejection(out), (kwargs, out)
    out = pii.redact("CAT", start=0, end=5)
    assert "rejected: label: Input should be 'EMAIL'" in out
    assert pii.rejected == 8 and pii.env.observation().redacted_spans == []
    # A bound call that TRL cannot make (wrong argument name) raises; TRL sends the error back.
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        pii.redact(label="NAME", quote="x")


def test_a_quote_is_redacted_where_it_stands_in_the_window() -> None:
    pii = tools_for(PII)
    obs = pii.env.observation()
    state = pii.env.state()
    entity = next(
        e
        for e in state.document.entities
        if obs.cursor_position <= e.start
        and e.end <= obs.cursor_position + len(obs.visible_text)
        and obs.visible_text.count(e.text) == 1
    )
    pii.redact(entity.label, text=entity.text)
    assert pii.actions[-1] == {"action_type": "REDACT", "start": entity.start, "end": entity.end, "label": entity.label}
    assert pii.env.observation().redacted_spans == [(entity.start, entity.end)] and pii.rejected == 0


def test_after_the_end_every_tool_raises_and_nothing_changes() -> None:
    tools = tools_for(II)
    oracle_calls(tools)
    before = tools.env.state().model_dump_json()
    with pytest.raises(EpisodeFinishedError, match="episode has ended"):
        tools.decide("allow")
    assert tools.env.state().model_dump_json() == before
    with pytest.raises(RuntimeError, match="reset"):
        environment_factory(II)().verify_claim("claim_1")


def test_no_tool_return_holds_truth_the_agent_has_not_looked_up() -> None:
    # information_integrity: along the oracle's episode and a wasteful one, no source's stance or
    # excerpt and no claim's verdict shows before the action that reveals it, and each return is the
    # adapter's wording of an observation that does not change when every unseen fact is altered.
    for calls in (None, [("verify_claim", "claim_99"), ("check_source", "src_1"), ("decide", "allow")]):
        tools = tools_for(II_HARD)
        cls, adapter = type(tools.env), get_adapter(tools.env.spec)
        scenario = tools.env.state().scenario
        rng = random.Random(0)
        while not tools.env.done:
            if calls is None:
                out = call(tools, cls.oracle_action(tools.env.state()).model_dump())
            else:
                name, arg = calls.pop(0)
                out = getattr(tools, name)(arg)
            state = tools.env.state()
            if ENDED not in out:
                lines = {line.split(" ")[1].rstrip(":"): line for line in out.splitlines() if line.startswith("- ")}
                for source in scenario.sources:
                    if source.id not in state.checked:
                        assert lines[source.id].endswith(": not checked") and source.text not in lines[source.id]
                for claim in scenario.claims:
                    if claim.id not in state.verified:
                        assert lines[claim.id] == f"- {claim.id}: {claim.text} [unverified]"
            if tools.env.done:
                assert out == ENDED  # the outcome, right or wrong, is not told
                continue
            twin = make(tools.env.spec.id, partition="train")
            twin.load_state(cls.counterfactual(state, rng))
            assert out == observation_text(adapter, twin.observation(), rejection(out) or None)

    # pii_redaction: the same calls on an environment whose gold entities were relabelled and
    # thinned return the same texts, so nothing a tool returns depends on the gold entities.
    tools, twin_tools = tools_for(PII), tools_for(PII)
    twin_tools.env.load_state(type(tools.env).counterfactual(tools.env.state(), random.Random(1)))
    assert tools.env.state().document.entities != twin_tools.env.state().document.entities
    actions = []
    while not tools.env.done:
        actions.append(type(tools.env).oracle_action(tools.env.state()).model_dump())
        assert call(tools, actions[-1]) == call(twin_tools, actions[-1])
    assert tools.env.grade().score != twin_tools.env.grade().score  # the twin's gold really differs


def test_tool_schemas_are_what_transformers_makes_of_the_signatures() -> None:
    require_training()
    import transformers.utils as utils

    tools = tools_for(PII)
    schema = utils.get_json_schema(tools.redact)["function"]
    assert schema["parameters"]["required"] == ["label"]
    assert schema["parameters"]["properties"]["label"]["enum"] == ["EMAIL", "PHONE", "SSN", "NAME", "ADDRESS", "DOB"]
    assert schema["parameters"]["properties"]["start"]["type"] == "integer"
    decide = utils.get_json_schema(tools_for(II).decide)["function"]
    assert decide["parameters"]["properties"]["decision"]["enum"] == ["allow", "flag", "remove"]


def test_grade_reward_leaves_other_environments_out_and_needs_environments() -> None:
    logged: dict[str, float] = {}
    tools = tools_for(II)
    tools.verify_claim("claim_99")
    rewards = grade_reward([tools, object()], log_metric=logged.__setitem__)
    assert rewards == [tools.env.grade().score, None]
    assert logged == {"igym/finished": 0.0, "igym/actions": 1.0, "igym/rejected": 1.0}
    with pytest.raises(TypeError, match="environment_factory"):
        grade_reward(prompts=["x"])


# --------------------------------------------------------------------------- inside TRL's loop


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    """SmolLM2's tokenizer with TRL's Qwen2.5 template, which renders tool calls and TRL can parse."""
    require_training()
    from trl.chat_template_utils import qwen2_5_chat_template

    from integrity_gym.train.model import load_tokenizer

    tok = load_tokenizer()
    tok.chat_template = qwen2_5_chat_template
    return tok


def tiny_model(tokenizer: Any, generate: Any = None) -> Any:
    """A randomly initialised 1-layer Llama; ``generate``, if given, replaces its sampling."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = LlamaForCausalLM(config)
    if generate is not None:
        model.generate = generate
    return model


def grpo_step(tokenizer: Any, model: Any, factory: Any, tmp_path: Path, max_completion_length: int) -> Any:
    """One GRPO step of 2 rollouts of the item of seed ``SEED``, with ``grade_reward``; the trainer."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    from trl import GRPOConfig, GRPOTrainer

    from integrity_gym.integrations.trl import dataset

    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=max_completion_length,
        max_tool_calling_iterations=4,
        max_steps=1,
        logging_steps=1,
        learning_rate=1e-3,
        report_to="none",
        save_strategy="no",
        activation_checkpointing=False,  # default on in TRL; a 1-layer model gains nothing from it
        bf16=False,
        use_cpu=True,
        seed=0,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=grade_reward,
        args=args,
        train_dataset=dataset(II, episodes=1, seed=SEED),
        processing_class=tokenizer,
        environment_factory=factory,
    )
    trainer.train()
    return trainer


def recording_factory(resets: list[dict[str, Any]]) -> type[ToolEnv]:
    """``environment_factory(II)`` whose instances record the rows they are reset with."""
    base = environment_factory(II)

    class Recording(base):
        def reset(self, **row: Any) -> str | None:
            resets.append(row)
            return super().reset(**row)

    return Recording


def logged_rewards(trainer: Any) -> list[float]:
    """The per-completion rewards TRL logged for ``grade_reward`` (kept for its completions table)."""
    rewards = list(trainer._logs["rewards"]["grade_reward"])
    (step,) = [x for x in trainer.state.log_history if "rewards/grade_reward/mean" in x]
    assert step["rewards/grade_reward/mean"] == pytest.approx(sum(rewards) / len(rewards))
    return rewards


def test_grpo_resets_each_rollout_on_its_rows_seed_and_is_paid_the_grade(tokenizer: Any, tmp_path: Path) -> None:
    resets: list[dict[str, Any]] = []
    trainer = grpo_step(tokenizer, tiny_model(tokenizer), recording_factory(resets), tmp_path, 16)
    (row,) = rows(II, episodes=1, seed=SEED)
    assert [r["seed"] for r in resets] == [SEED, SEED] and all(r["prompt"] == row["prompt"] for r in resets)
    envs = trainer.environments
    assert len(envs) == 2 and all(e.seed == SEED for e in envs)
    assert logged_rewards(trainer) == [e.env.grade().score for e in envs]
    assert {"verify_claim", "check_source", "decide"} <= {t.__name__ for t in trainer.tools}
    assert not {"reset", "env", "seed", "actions", "rejected"} & {t.__name__ for t in trainer.tools}


def test_grpo_parses_the_models_tool_calls_steps_the_env_and_feeds_the_returns_back(
    tokenizer: Any, tmp_path: Path
) -> None:
    import torch

    scenario = tools_for(II).env.state().scenario

    def tool_call(name: str, **arguments: Any) -> str:
        return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call><|im_end|>"

    # Rollout 0 verifies a claim and decides right; rollout 1 names an unknown claim, then sends an
    # argument the tool does not take; both then stop. TRL's loop regenerates only rollouts that
    # called a tool, in batch order, which is how each turn below finds its rollout.
    turns = [
        [
            tool_call("verify_claim", claim_id="claim_1"),
            tool_call("decide", decision=scenario.label),
            "Done.<|im_end|>",
        ],
        [tool_call("verify_claim", claim_id="claim_99"), tool_call("verify_claim", claim="claim_1"), "Done.<|im_end|>"],
    ]
    seen: list[list[str]] = []  # per generate call, the decoded input of each rollout in it

    def generate(input_ids: Any, attention_mask: Any, **kwargs: Any) -> Any:
        active = [i for i in range(2) if turns[i]][: len(input_ids)]
        assert len(active) == len(input_ids)
        seen.append([tokenizer.decode(ids[mask.bool()]) for ids, mask in zip(input_ids, attention_mask, strict=True)])
        out = [tokenizer(turns[i].pop(0), add_special_tokens=False)["input_ids"] for i in active]
        width = max(map(len, out))
        pad = tokenizer.pad_token_id
        tail = torch.tensor([ids + [pad] * (width - len(ids)) for ids in out], dtype=input_ids.dtype)
        return torch.cat([input_ids, tail], dim=1)

    trainer = grpo_step(tokenizer, tiny_model(tokenizer, generate), environment_factory(II), tmp_path, 2048)
    assert turns == [[], []] and [len(call) for call in seen] == [2, 2, 2]
    ok, bad = trainer.environments
    # The calls TRL parsed reached the environment as actions.
    assert ok.actions == (
        {"type": "verify_claim", "claim_id": "claim_1"},
        {"type": "decide", "decision": scenario.label, "reasoning": None},
    )
    assert ok.env.done and ok.rejected == 0
    assert bad.actions == ({"type": "verify_claim", "claim_id": "claim_99"},) and bad.rejected == 1
    # What the tools returned is what the model saw next, as tool messages.
    replay = tools_for(II)
    first, second = replay.verify_claim("claim_1"), replay.decide(scenario.label)
    assert second == ENDED and first in seen[1][0] and ENDED in seen[2][0]
    refused = "Your last action was rejected: unknown claim_id 'claim_99'; claims are claim_1"
    assert refused in seen[1][1]
    assert "unexpected keyword argument 'claim'" in seen[2][1]  # TRL's own {"error": ...}
    completions = list(trainer._logs["completion"])
    assert [m["content"] for m in completions[0] if m["role"] == "tool"] == [first, ENDED]
    # The reward TRL logged is each episode's grade; the episode that decided right scored.
    rewards = logged_rewards(trainer)
    assert rewards == [ok.env.grade().score, bad.env.grade().score] and rewards[0] > 0 == rewards[1]
    metrics = trainer.state.log_history[0]
    assert metrics["tools/call_frequency"] == 2.0 and metrics["tools/failure_frequency"] == 0.25
