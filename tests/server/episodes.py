"""Reference episodes played in-process, to replay against a server and compare as JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import integrity_gym
from integrity_gym.core.registry import TaskSpec
from integrity_gym.core.seeding import make_rng
from integrity_gym.server.minimal import MINIMAL_TASK

#: Every task the test servers serve: all registered ones (so each new environment is covered
#: the moment it registers) plus the minimal protocol-test task.
SERVED: list[TaskSpec] = [*integrity_gym.list_tasks(), MINIMAL_TASK]
SPECS = {spec.id: spec for spec in SERVED}
TASK_IDS = list(SPECS)
ENV_NAMES = sorted({spec.env for spec in SERVED})


def build(task_id: str) -> Any:
    """An in-process environment of a served task."""
    spec = SPECS[task_id]
    return spec.env_class()(spec)


MAX_STEPS = 2_000  # a safety cap; every task ends far sooner (its own step budget)


@dataclass
class Transcript:
    """Everything an agent saw in one episode, as JSON strings, and the actions that produced it."""

    actions: list[Any] = field(default_factory=list)
    seen: list[str] = field(default_factory=list)
    grade: str = ""
    state: str = ""


def reference(task_id: str, seed: int) -> Transcript:
    """Play: one malformed action, two random ones, then the oracle until the episode ends."""
    env = build(task_id)
    cls = type(env)
    rng = make_rng("server-test", seed)
    out = Transcript()
    obs = env.reset(seed=seed)
    out.seen.append(obs.model_dump_json())
    plan: list[Any] = [{"no_such_field": 1}]
    while not env.done and len(out.actions) < MAX_STEPS:
        if plan:
            action: Any = plan.pop()
        elif len(out.actions) < 3:
            action = cls.sample_action(obs, rng).model_dump(mode="json")
        else:
            action = cls.oracle_action(env.state()).model_dump(mode="json")
        result = env.step(action)
        obs = result.observation
        out.actions.append(action)
        out.seen.append(result.model_dump_json())
    out.grade = env.grade().model_dump_json()
    out.state = env.state().model_dump_json()
    return out
