"""Playing replies in-process as ``igym bench`` does, and scripted replies that fit an episode.

``replay`` is the reference the tasksets are compared with: the ``llm`` agent (its real openai
client, talking to a stub that returns exactly the given replies) plays the environment built by
``integrity_gym.make``. The scripts write replies from a conversation (OpenAI messages), so
that a multi-turn episode gets actions that fit what it shows.
"""

from __future__ import annotations

import json
import re
from typing import Any

import integrity_gym
from integrity_gym.agents.llm import LLMAgent, LLMSettings
from tests.agents.openai_stub import completion, openai_stub
from tests.integrations.scripted_llm import text


def replay(
    task_id: str,
    seed: int,
    replies: list[str],
    *,
    config: dict[str, Any] | None = None,
    options: Any = None,
    images: bool = True,
) -> tuple[Any, list[Any], list[str]]:
    """Play ``replies`` in-process with the llm agent; return (env, step results, messages sent).

    The messages sent are the system prompt of the first request, then every request's user message.
    """
    env = integrity_gym.make(task_id, **(config or {}))
    observation = env.reset(seed=seed, options=options)
    results = []
    with openai_stub([completion(reply) for reply in replies]) as (url, stub):
        environ = {"API_BASE_URL": url, "MODEL_NAME": "stub", "OPENAI_API_KEY": "x", "LLM_IMAGES": str(int(images))}
        settings = LLMSettings.from_env(environ)
        agent = LLMAgent(env, settings=settings)
        for _ in replies:
            result = env.step(agent.act(observation))
            agent.observe(result)
            results.append(result)
            observation = result.observation
            if env.done:
                break
    sent = [text(stub.requests[0]["messages"][0]["content"])]
    sent += [text(request["messages"][-1]["content"]) for request in stub.requests]
    return env, results, sent


def pii_script(messages: list[dict[str, Any]]) -> str:
    """Redact an e-mail address in view, quote text that is not there, say something unreadable, move on, finish."""
    turn = sum(m["role"] == "assistant" for m in messages)
    window = text(messages[-1]["content"])
    email = re.search(r"[\w.+-]+@[\w-]+\.[\w.]+", window)
    plan = [
        {"action_type": "REDACT", "text": email.group(0), "label": "EMAIL"} if email else {"action_type": "SKIP"},
        {"action_type": "REDACT", "text": "no such text anywhere", "label": "NAME"},
        None,
        {"action_type": "NEXT_CHUNK", "text": "", "label": "NAME"},
    ]
    if turn >= len(plan):
        return json.dumps({"action_type": "FINISH", "text": "", "label": "NAME"})
    return "let me read the window first" if plan[turn] is None else json.dumps(plan[turn])


def integrity_script(messages: list[dict[str, Any]]) -> str:
    """Verify the first claim, check the first source, say something unreadable, then decide."""
    turn = sum(m["role"] == "assistant" for m in messages)
    shown = text(messages[-1]["content"])
    claim = re.search(r"- (claim_\w+):", shown)
    source = re.search(r"- (src_\w+) \(about", shown)
    plan = [
        {"type": "verify_claim", "target": claim.group(1) if claim else "claim_1"},
        {"type": "check_source", "target": source.group(1) if source else "src_1"},
        None,
    ]
    if turn >= len(plan):
        return json.dumps({"type": "decide", "decision": "flag", "reasoning": "claim_1 is contested."})
    return "Thinking about the sources." if plan[turn] is None else json.dumps(plan[turn])
