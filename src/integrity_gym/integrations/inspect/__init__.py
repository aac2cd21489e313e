"""integrity-gym's tasks as inspect_ai tasks, and ``igym bench`` runs as inspect logs (docs/interop.md).

``pip install 'integrity-gym[inspect]'``. Two modules import inspect_ai, so importing this package
does not:

* ``tasks``: one inspect ``@task`` per registered task, found by ``inspect eval
  integrity_gym/<name>`` through the ``inspect_ai`` entry point; a solver plays the whole episode
  with the model under evaluation, worded and read as the ``llm`` agent does, and a scorer
  reports the environment's grade;
* ``logs``: a stored run folder as one inspect ``EvalLog`` per task (``igym inspect-log``).

The inspect name of a task is its environment and the last word of its name, joined by an
underscore, without the version (the newest registered version is played):
``pii_redaction/security_logs_hard-v4`` is ``pii_redaction_hard``, ``information_integrity/easy-v3``
is ``information_integrity_easy``, ``selective_verification/text-v3`` is ``selective_verification_text``.
Where tasks of one environment share their last word, a task named by that word alone keeps the
short name and the others use their whole name: ``selective_verification/threshold_text-v1`` is
``selective_verification_threshold_text``.
"""

from __future__ import annotations

from typing import Any

from integrity_gym.core.registry import list_tasks

#: inspect_ai's namespace of these tasks (``inspect eval integrity_gym/<name>``): the package's name.
NAMESPACE = "integrity_gym"
#: The extra that installs inspect_ai.
EXTRA = "inspect"


def short_name(env: str, name: str) -> str:
    """``<env>_<last word of name>``: the inspect name of a task unless another task shares it."""
    return f"{env}_{name.rsplit('_', 1)[-1]}"


def _newest() -> list[Any]:
    """The newest registered version of every task, sorted by id."""
    newest: dict[tuple[str, str], Any] = {}
    for spec in list_tasks("*"):
        key = (spec.env, spec.name)
        if key not in newest or spec.version > newest[key].version:
            newest[key] = spec
    return sorted(newest.values(), key=lambda s: s.id)


def _names(tasks: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The inspect name of each ``(env, name)``: the short name, or the whole name where it is shared.

    Within an environment the names differ: a task named by the shared word alone keeps the short
    name, and every other sharer's name holds an underscore, so its whole name is another string.
    """
    shared: dict[str, int] = {}
    for env, name in tasks:
        shared[short_name(env, name)] = shared.get(short_name(env, name), 0) + 1
    out = {}
    for env, name in tasks:
        short = short_name(env, name)
        out[(env, name)] = short if shared[short] == 1 or "_" not in name else f"{env}_{name}"
    return out


def inspect_name(env: str, name: str) -> str:
    """The inspect name of task ``name`` of environment ``env``; the short name for a task no longer registered."""
    return _names([(s.env, s.name) for s in _newest()]).get((env, name), short_name(env, name))


def inspect_tasks() -> dict[str, str]:
    """Every registered task's inspect name and the task id it plays (the newest version), sorted by id.

    Two tasks given the same name (only environments whose names run into each other's could be) are
    refused with a ``ValueError`` naming both.
    """
    specs = _newest()
    names = _names([(s.env, s.name) for s in specs])
    out: dict[str, str] = {}
    for spec in specs:
        name = names[(spec.env, spec.name)]
        if name in out:
            raise ValueError(f"the tasks {out[name]} and {spec.id} would both be the inspect task {name!r}")
        out[name] = spec.id
    return out


__all__ = ["EXTRA", "NAMESPACE", "inspect_name", "inspect_tasks", "short_name"]
