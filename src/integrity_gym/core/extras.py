"""What an environment adds to the generic tools, declared once on its class (``Env.extras``).

Every tool that has something environment-specific to do (the heuristic agent, the LLM prompt and
training prefill, the red team, the playground's page view, the report's radar axes, a seed client's
dialect) reads it from here and falls back to its generic behaviour when the environment declares
nothing. References are module names, imported only by the tool that uses them, so an environment's
folder imports no layer above it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

#: The kinds of module an environment may name (each field of ``EnvExtras`` says what it must define).
ModuleKind = Literal["agents", "prompt", "redteam", "learned"]


@dataclass(frozen=True)
class Dialect:
    """How one seed client's messages map onto ours, and ours onto what it parses (``igym serve --profile``)."""

    name: str
    #: Reset arguments in the client's spelling -> ours.
    reset_data: Callable[[dict[str, Any]], dict[str, Any]]
    #: The client's action and the env it is sent to -> (ours, fields recorded in the step's metadata).
    action: Callable[[Any, Any], tuple[Any, dict[str, Any]]]
    #: Our observation (JSON-ready dict), reward, the step's info and the session -> the client's observation.
    observation: Callable[[dict[str, Any], float | None, dict[str, Any], Any], dict[str, Any]] | None


@dataclass(frozen=True)
class EnvExtras:
    """An environment's additions; each is optional and ``None`` means the generic behaviour."""

    #: Module of the environment's own agents (``AGENTS``), ``heuristic`` among them.
    agents: str | None = None
    #: Module of the LLM prompt adapter (``make_adapter(spec)``) and its training prefill (``PREFILL``).
    prompt: str | None = None
    #: Module of the red team's attacks on the environment and the bar they must stay under
    #: (``ATTACKS``, ``BAR``, ``DEGRADED``).
    redteam: str | None = None
    #: Module of the learned attacks (``LEARNED``: models fitted on the train partition).
    learned: str | None = None
    #: A JavaScript file beside the environment's module (``view.js``) that draws its observation in
    #: the playground and viewer; without it the observation is shown as a JSON tree.
    view: str | None = None
    #: Breakdown keys that are not scores (never a radar axis in the report), beyond the generic ones.
    not_dimensions: tuple[str, ...] = ()
    #: Seed clients' dialects this environment speaks (``igym serve --profile NAME``): name -> module
    #: defining ``DIALECT``.
    profiles: Mapping[str, str] = field(default_factory=dict)

    def own_agents(self) -> dict[str, Any]:
        """The environment's own agents by name (its ``agents`` module's ``AGENTS``; none without one)."""
        return dict(getattr(self.module("agents"), "AGENTS", {}))

    def module(self, kind: ModuleKind) -> ModuleType | None:
        """The declared module of ``kind``, imported; None when the environment declares none."""
        name: str | None = getattr(self, kind)
        return None if name is None else importlib.import_module(name)
