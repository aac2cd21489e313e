"""The return-vs-grade audit: the sum of step rewards must rank policies as the grade does.

An RL trainer climbs the **return**; the grade is what the task is judged on. If a policy with a
clearly better mean grade had a lower mean return, training would push away from the task. The
audit plays a panel of policies on each task — the baselines (oracle, heuristic, random, noop,
and the environment's own extras), every red-team attack, and degraded versions of the oracle and
the heuristic (each environment's ``DEGRADED``: skip half the work, drop the reasoning, a wrong
answer on a third of the items) — and reports, per task and reward preset, every policy's mean
return and mean grade, the Spearman rank correlation between the two, and every *inversion*: a
pair of policies where one's mean grade is at least ``INVERSION_GAP`` higher but its mean return
is lower.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from scipy.stats import spearmanr

from integrity_gym.agents.base import Agent, make_agent
from integrity_gym.agents.redteam.base import Kind, Policy, play_once
from integrity_gym.core.env import Env
from integrity_gym.core.registry import TaskSpec, list_tasks, make
from integrity_gym.core.seeding import data_mode

#: A pair of policies is an inversion when the mean grades differ by at least this much and the
#: mean returns are ordered the other way.
INVERSION_GAP = 0.05
#: Reward presets the audit knows; a task whose environment has no ``reward_preset`` plays its one reward.
PRESETS = ("default", "reference")


@dataclass(frozen=True)
class PolicyResult:
    """One policy's episodes on one task under one preset."""

    policy: str
    kind: Kind
    episodes: int
    mean_return: float
    mean_grade: float
    successes: int


@dataclass(frozen=True)
class Inversion:
    """``better`` grades at least ``INVERSION_GAP`` above ``worse`` but returns less."""

    better: str
    worse: str
    grade_gap: float
    return_gap: float


@dataclass(frozen=True)
class TaskAudit:
    """The panel on one task under one preset."""

    task_id: str
    preset: str
    results: tuple[PolicyResult, ...]
    spearman: float
    inversions: tuple[Inversion, ...] = field(default_factory=tuple)

    @property
    def oracle_on_top(self) -> bool:
        """True when no policy returns more than the oracle."""
        by_name = {r.policy: r for r in self.results}
        if "oracle" not in by_name:
            return True
        best = by_name["oracle"].mean_return
        return all(r.mean_return <= best + 1e-9 for r in self.results)


def _baseline(name: str, description: str) -> Policy:
    return Policy(name, "baseline", description, lambda env, seed: make_agent(name, env, seed=seed))


def _extras(spec: TaskSpec) -> list[Policy]:
    """The environment's own named agents besides its heuristic that play ``spec``'s task (``EnvExtras.agents``)."""
    extra = {k: v for k, v in spec.env_class().extras.own_agents().items() if k != "heuristic"}
    found = []
    for name, cls in extra.items():
        try:
            cls(spec, seed=0)
        except ValueError:  # e.g. the posterior agent, which plays text tasks only
            continue
        found.append(_baseline(name, (cls.__doc__ or name).strip().splitlines()[0]))
    return found


def _from_attack(build: Callable[[TaskSpec, int], Any]) -> Callable[[Env[Any, Any, Any], int], Agent]:
    """An attack's builder (spec, seed) as a panel builder (env, seed): attacks never see the env."""

    def from_env(env: Env[Any, Any, Any], seed: int) -> Agent:
        agent: Agent = build(env.spec, seed)
        return agent

    return from_env


def panel(spec: TaskSpec, *, presidio: bool = False) -> list[Policy]:
    """Every policy the audit plays on ``spec``'s task, baselines first, each name once."""
    from integrity_gym.agents.redteam import attacks_for

    env_name = spec.env
    policies = [
        _baseline("oracle", "Reads ground truth: the upper bound."),
        _baseline("heuristic", "The offline baseline."),
        _baseline("random", "Random valid-looking actions."),
        _baseline("noop", "The do-nothing action at every step."),
        *_extras(spec),
    ]
    if presidio and env_name == "pii_redaction":
        policies.append(_baseline("presidio", "Microsoft Presidio, window by window."))
    secret = data_mode() != "public"
    for attack in attacks_for(env_name):
        if attack.name == "do_nothing" or (attack.secret_only and not secret):
            continue  # do_nothing is noop; the replay wins by design in public mode
        policies.append(Policy(attack.name, "attack", attack.description, _from_attack(attack.build)))
    degraded: tuple[Policy, ...] = getattr(spec.env_class().extras.module("redteam"), "DEGRADED", ())
    policies.extend(degraded)
    seen: set[str] = set()
    return [p for p in policies if not (p.name in seen or seen.add(p.name))]  # type: ignore[func-returns-value]


def _config(spec: TaskSpec, preset: str) -> dict[str, Any] | None:
    """The task config for ``preset``, or None when the environment has no such preset."""
    if preset == "default":
        return {}
    try:
        make(spec.id, reward_preset=preset).close()
    except ValueError:
        return None
    return {"reward_preset": preset}


def play(spec: TaskSpec, policy: Policy, seeds: Iterable[int], config: dict[str, Any]) -> PolicyResult:
    """Play ``policy`` on ``spec`` (eval partition) once per seed; returns are the sums of step rewards."""
    returns: list[float] = []
    grades: list[float] = []
    successes = 0
    for seed in seeds:
        env = make(spec.id, **config)
        total, grade = play_once(env, policy.build(env, seed), seed)
        returns.append(total)
        grades.append(grade.score)
        successes += bool(grade.success)
    n = len(grades)
    return PolicyResult(policy.name, policy.kind, n, sum(returns) / n, sum(grades) / n, successes)


def inversions(results: Sequence[PolicyResult], gap: float = INVERSION_GAP) -> tuple[Inversion, ...]:
    """Every pair whose mean grades differ by ``gap`` or more while the mean returns run the other way."""
    found = [
        Inversion(a.policy, b.policy, a.mean_grade - b.mean_grade, a.mean_return - b.mean_return)
        for a in results
        for b in results
        if a.mean_grade - b.mean_grade >= gap - 1e-12 and a.mean_return < b.mean_return - 1e-12
    ]
    return tuple(sorted(found, key=lambda i: -i.grade_gap))


def rank_correlation(results: Sequence[PolicyResult]) -> float:
    """Spearman's rho between mean return and mean grade over the panel (ties ranked by their mean)."""
    returns = [r.mean_return for r in results]
    grades = [r.mean_grade for r in results]
    if len(results) < 2 or len(set(returns)) < 2 or len(set(grades)) < 2:
        return math.nan  # undefined for a constant column
    rho = spearmanr(returns, grades).statistic
    return float(rho)


def audit_task(
    spec: TaskSpec, policies: Sequence[Policy], seeds: Sequence[int], preset: str = "default"
) -> TaskAudit | None:
    """The panel on one task under ``preset``; None when the task's environment has no such preset."""
    config = _config(spec, preset)
    if config is None:
        return None
    results = tuple(play(spec, policy, seeds, config) for policy in policies)
    return TaskAudit(spec.id, preset, results, rank_correlation(results), inversions(results))


def run_audit(
    pattern: str = "*",
    *,
    episodes: int = 20,
    seed: int = 0,
    presets: Sequence[str] = PRESETS,
    presidio: bool = False,
    only: Sequence[str] | None = None,
) -> list[TaskAudit]:
    """The audit of every task matching ``pattern`` under each preset, over seeds ``seed .. seed+episodes-1``.

    ``only`` restricts the panel to the named policies (the test suite's small panel).
    """
    audits: list[TaskAudit] = []
    seeds = range(seed, seed + episodes)
    for spec in list_tasks(pattern):
        policies = [p for p in panel(spec, presidio=presidio) if only is None or p.name in only]
        for preset in presets:
            audit = audit_task(spec, policies, seeds, preset)
            if audit is not None:
                audits.append(audit)
    return audits


def passes(audit: TaskAudit, min_spearman: float = 0.9) -> bool:
    """The default presets' promise: Spearman at least ``min_spearman``, no inversion, the oracle on top."""
    return audit.spearman >= min_spearman and not audit.inversions and audit.oracle_on_top


def audit_json(audits: Iterable[TaskAudit]) -> list[dict[str, Any]]:
    """JSON-ready rows, one per task and preset."""
    return [{**asdict(a), "oracle_on_top": a.oracle_on_top} for a in audits]


def audit_markdown(audits: Sequence[TaskAudit], *, episodes: int, seed: int) -> str:
    """The audit as Markdown: a summary row per task and preset, then each panel in full."""
    lines = [
        "## Return vs grade",
        "",
        f"An RL trainer climbs the return (the sum of step rewards), so the return must rank policies as the "
        f"grade does. Every policy of the panel on every task, {episodes} eval episodes each from seed {seed}; "
        "generated by `igym redteam --markdown`. *Spearman* is the rank correlation of mean return and mean "
        f"grade over the panel; an *inversion* is a pair of policies whose mean grades differ by "
        f"{INVERSION_GAP:.2f} or more while their mean returns run the other way. Under the default presets "
        "every task must have Spearman >= 0.9, no inversion and the oracle's return on top (tested in "
        "`make test` on a small panel); `reference` keeps the seed documents' formulas and is reported as it is.",
        "",
        "| task | preset | policies | Spearman | inversions | oracle's return on top |",
        "|---|---|---|---|---|---|",
    ]
    for a in audits:
        worst = "; ".join(f"{i.better} > {i.worse}" for i in a.inversions[:3])
        more = f" (+{len(a.inversions) - 3} more)" if len(a.inversions) > 3 else ""
        inv = f"{len(a.inversions)}" + (f": {worst}{more}" if a.inversions else "")
        lines.append(
            f"| `{a.task_id}` | {a.preset} | {len(a.results)} | {a.spearman:.3f} | {inv} | "
            f"{'yes' if a.oracle_on_top else '**no**'} |"
        )
    lines += ["", "Panels (mean return, mean grade, successes):", ""]
    for a in audits:
        lines += [f"### `{a.task_id}` ({a.preset})", "", "| policy | kind | return | grade | successes |"]
        lines.append("|---|---|---|---|---|")
        for r in sorted(a.results, key=lambda r: -r.mean_grade):
            lines.append(
                f"| {r.policy} | {r.kind} | {r.mean_return:.3f} | {r.mean_grade:.3f} | {r.successes}/{r.episodes} |"
            )
        lines.append("")
    return "\n".join(lines)
