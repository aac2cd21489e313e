"""Sealed evaluations (``igym serve --sealed``): the server draws every item and hands each out once.

``IGYM_EVAL_SECRET`` keeps the public code from rebuilding eval items; a sealed server also keeps
the agent from *asking the evaluator* about them. An agent that may reset whatever it likes can
open a second session on its item and answer it to read the truth from the reward, search seeds
until a first observation matches its own, confirm candidate answers in probe sessions, read the
explanation of a probe, or name an eval item outright (``scenario_id="gen_hard_eval_5"``). Here:

* ``POST /evaluations`` ``{"tasks": [...], "episodes": N, "repeat_of": null}`` draws, for each
  task, ``N`` seeds the server chose (``secrets``), on the task's own (eval) partition, never an
  item that an earlier evaluation under the same secret was given (the store keeps a record of the
  items each task handed out), unless ``repeat_of`` names an earlier evaluation, whose items are
  then reused in the same order. It answers one unguessable *handle* per episode.
* ``POST /<env>/reset`` ``{"handle": ...}`` (and a WebSocket ``reset`` with that data) starts the
  handle's episode once, in a new session. Every other reset is refused (403 ``SEALED``).
* Observations and step ``info`` of sealed sessions carry none of the env's ``ITEM_FIELDS``; the
  grade, the explanation and the full state wait for ``POST /evaluations/{id}/close``
  (403 ``SEALED_UNTIL_CLOSED`` before, unless the admin token is presented), which grades every
  started episode as it stands, closes their sessions and returns every result.

The evaluation id is its owner's credential (like a session id): the runner keeps it and hands
the agent only handles. Records live in the session store (``sessions.py``): in this process for
the memory store, in Redis (surviving restarts, shared by every process) for the Redis store.

Modules: ``models`` (the wire models), ``sealing`` (what a sealed server hides and refuses),
``items`` (naming tasks, item pools, drawing fresh seeds), ``lifecycle`` (:class:`Evaluations`:
creating, starting, recording and closing) and ``routes`` (the ``/evaluations`` routes).
"""

from __future__ import annotations

from integrity_gym.server.evaluations.items import SEED_BITS
from integrity_gym.server.evaluations.lifecycle import Claim, Evaluations, WsEpisode, snapshot
from integrity_gym.server.evaluations.models import (
    MAX_EPISODES,
    EpisodeResult,
    EpisodeStatus,
    EvaluationCreated,
    EvaluationRequest,
    EvaluationResults,
    EvaluationStatus,
    HandedOut,
)
from integrity_gym.server.evaluations.routes import EvaluationIdPath, add_evaluation_routes
from integrity_gym.server.evaluations.sealing import (
    NAMING_FIELDS,
    NOT_SEALED,
    PROFILE_ITEM_FIELDS,
    SEALED_RESET,
    SEALED_UNTIL_CLOSED,
    refuse_handle,
    refuse_unsealed_reset,
    seal_info,
    seal_observation,
    seal_profile_observation,
)

__all__ = [
    "MAX_EPISODES",
    "NAMING_FIELDS",
    "NOT_SEALED",
    "PROFILE_ITEM_FIELDS",
    "SEALED_RESET",
    "SEALED_UNTIL_CLOSED",
    "SEED_BITS",
    "Claim",
    "EpisodeResult",
    "EpisodeStatus",
    "EvaluationCreated",
    "EvaluationIdPath",
    "EvaluationRequest",
    "EvaluationResults",
    "EvaluationStatus",
    "Evaluations",
    "HandedOut",
    "WsEpisode",
    "add_evaluation_routes",
    "refuse_handle",
    "refuse_unsealed_reset",
    "seal_info",
    "seal_observation",
    "seal_profile_observation",
    "snapshot",
]
