"""Agents: ``random``, ``oracle``, ``noop`` and a ``heuristic`` per environment."""

from integrity_gym.agents.base import AGENTS, Agent, NoopAgent, make_agent
from integrity_gym.agents.oracle import OracleAgent
from integrity_gym.agents.random import RandomAgent

__all__ = ["AGENTS", "Agent", "NoopAgent", "OracleAgent", "RandomAgent", "make_agent"]
