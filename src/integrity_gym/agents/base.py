"""The agent protocol and the factory that builds agents by name."""

from __future__ import annotations

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
    """Build agent ``name`` for ``env``'s task; the environment's own agents come from ``env.extras``."""
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
    # The environment's own agents (``EnvExtras.agents``): its heuristic, and any others built like
    # it (e.g. selective_verification's "blind" and "posterior").
    own = env.spec.env_class().extras.own_agents()
    if name in own:
        built: Agent = own[name](env.spec, seed=seed)
        return built
    if name == "heuristic":
        raise ValueError(
            f"no heuristic agent for environment {env.spec.env!r} (its EnvExtras.agents declares none); "
            "use random, noop or oracle, or add one (docs/adding-an-environment.md)"
        )
    # The red team's degenerate agents (``agents.redteam.<env>``) play like any other agent.
    from integrity_gym.agents.redteam import attacks_for

    attacks = {attack.name: attack for attack in attacks_for(env.spec.env)}
    if name in attacks:
        attacker: Agent = attacks[name].build(env.spec, seed)
        return attacker
    choices = ", ".join(dict.fromkeys([*AGENTS, *own, *attacks]))
    raise ValueError(f"unknown agent {name!r}; choose one of {choices}")
