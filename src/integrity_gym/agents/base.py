"""The agent protocol and the factory that builds agents by name."""

from __future__ import annotations

import importlib
from typing import Any, Protocol, runtime_checkable

from integrity_gym.core.env import Env


@runtime_checkable
class Agent(Protocol):
    """Anything that maps an observation to an action (a model, a dict, or a string)."""

    def act(self, observation: Any) -> Any:
        """Return the next action for ``observation``."""
        ...


class NoopAgent:
    """Does nothing useful: the trivial floor every task must sit far above."""

    def __init__(self, env: Env[Any, Any, Any], seed: int = 0) -> None:
        self._env_class = env.spec.env_class()

    def act(self, observation: Any) -> Any:
        """Return the environment's do-nothing action."""
        return self._env_class.noop_action(observation)


AGENTS = ("heuristic", "random", "oracle", "noop", "llm", "presidio")


def make_agent(name: str, env: Env[Any, Any, Any], *, seed: int = 0) -> Agent:
    """Build agent ``name`` for ``env``'s task. Heuristics live in ``agents.heuristic.<env>``."""
    from integrity_gym.agents.oracle import OracleAgent
    from integrity_gym.agents.random import RandomAgent

    if name == "random":
        return RandomAgent(env, seed)
    if name == "noop":
        return NoopAgent(env, seed)
    if name == "oracle":
        return OracleAgent(env, seed)
    if name == "llm":  # settings from API_BASE_URL, MODEL_NAME, ... (see agents.llm)
        from integrity_gym.agents.llm import LLMAgent

        return LLMAgent(env, seed)
    if name == "presidio":  # Microsoft Presidio, pii_redaction only (the presidio extra)
        if env.spec.env != "pii_redaction":
            raise ValueError(f"the presidio agent plays pii_redaction tasks only, not {env.spec.id!r}")
        from integrity_gym.agents.presidio import PresidioAgent

        return PresidioAgent(env.spec, seed=seed)
    if name == "heuristic":
        where = f"integrity_gym.agents.heuristic.{env.spec.env}"
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            if exc.name != where:
                raise
            raise ValueError(
                f"no heuristic agent for environment {env.spec.env!r} (none in {where}); "
                "use random, noop or oracle, or add one (docs/adding-an-environment.md)"
            ) from exc
        agent: Agent = module.HeuristicAgent(env.spec, seed=seed)
        return agent
    # Environment-specific agents: ``agents.heuristic.<env>.AGENTS`` maps extra names to classes
    # built like HeuristicAgent (e.g. selective_verification's "blind" and "posterior").
    try:
        extra = getattr(importlib.import_module(f"integrity_gym.agents.heuristic.{env.spec.env}"), "AGENTS", {})
    except ModuleNotFoundError:
        extra = {}
    if name in extra:
        built: Agent = extra[name](env.spec, seed=seed)
        return built
    # The red team's degenerate agents (``agents.redteam.<env>``) play like any other agent.
    from integrity_gym.agents.redteam import attacks_for

    try:
        attacks = {attack.name: attack for attack in attacks_for(env.spec.env)}
    except ModuleNotFoundError:  # a third-party environment without a red team
        attacks = {}
    if name in attacks:
        attacker: Agent = attacks[name].build(env.spec, seed)
        return attacker
    choices = ", ".join([*AGENTS, *extra, *attacks])
    raise ValueError(f"unknown agent {name!r}; choose one of {choices}")
