"""The red team: degenerate agents per environment, and the check that none of them scores.

Every environment's ``agents.redteam.<env>`` module declares ``ATTACKS`` (a tuple of
:class:`Attack`) and ``BAR`` (a :class:`Bar`). ``run_redteam`` plays each attack on each task over
eval-partition episodes and reports whether it stayed under the bar; ``igym redteam`` prints the
table and ``tests/redteam`` runs the same check in ``make test``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from types import ModuleType

from integrity_gym.agents.redteam.base import Attack, Bar, play_once
from integrity_gym.core.registry import TaskSpec, list_tasks, make
from integrity_gym.core.seeding import data_mode
from integrity_gym.core.types import Grade

__all__ = [
    "Attack",
    "AttackResult",
    "Bar",
    "attacks_for",
    "bar_for",
    "redteam_json",
    "redteam_markdown",
    "run_attack",
    "run_redteam",
    "score_of",
]


def _module(env: str) -> ModuleType:
    return importlib.import_module(f"integrity_gym.agents.redteam.{env}")


def attacks_for(env: str) -> tuple[Attack, ...]:
    """The attacks on environment ``env``: its own, then the replay attack every environment faces."""
    from integrity_gym.agents.redteam.replay import REPLAY

    attacks: tuple[Attack, ...] = _module(env).ATTACKS
    return (*attacks, REPLAY)


def score_of(spec: TaskSpec, grade: Grade) -> float:
    """What an episode scores for the red team and the task's bounds: the env's ``score_of`` hook, else the grade.

    Selective verification's text task scores the expected grade under the claim's known
    probability, which removes the label's coin flip from a one-step episode.
    """
    hook = getattr(_module(spec.env), "score_of", None)
    return grade.score if hook is None else float(hook(spec, grade))


def bar_for(env: str) -> Bar:
    """The bar every attack on environment ``env`` must stay under."""
    bar: Bar = _module(env).BAR
    return bar


@dataclass(frozen=True)
class AttackResult:
    """One attack played on one task."""

    task_id: str
    attack: str
    episodes: int
    mean: float
    successes: int
    threshold: float
    limit: float
    max_successes: int
    floor: bool = False

    @property
    def held(self) -> bool:
        """True when the attack stayed under the bar: low mean and (almost) no success."""
        return self.mean <= self.limit and self.successes <= self.max_successes


def run_attack(spec: TaskSpec, attack: Attack, seeds: Iterable[int]) -> AttackResult:
    """Play ``attack`` on ``spec``'s task (eval partition) for each seed."""
    scores: list[float] = []
    successes = 0
    for seed in seeds:
        _, grade = play_once(make(spec.id), attack.build(spec, seed), seed)
        scores.append(score_of(spec, grade))
        successes += bool(grade.success)
    bar = bar_for(spec.env)
    n = len(scores)
    return AttackResult(
        task_id=spec.id,
        attack=attack.name,
        episodes=n,
        mean=sum(scores) / n,
        successes=successes,
        threshold=spec.success_threshold,
        limit=bar.limit(spec, floor=attack.floor),
        max_successes=int(bar.max_success_rate * n + 1e-9),
        floor=attack.floor,
    )


def run_redteam(
    pattern: str = "*", episodes: int = 20, seed: int = 0, on_result: Callable[[AttackResult], None] | None = None
) -> list[AttackResult]:
    """Every attack on every task matching ``pattern``, over ``episodes`` seeds from ``seed``.

    An environment's ``Bar.episodes`` raises the count where its episodes are too noisy. Attacks
    that win by design in public mode (``secret_only``: the replay) are played only when
    the eval secret is set. ``on_result`` hears of each result as it is made (progress).
    """
    secret = data_mode() != "public"
    results = []
    for spec in list_tasks(pattern):
        for attack in attacks_for(spec.env):
            if secret or not attack.secret_only:
                result = run_attack(spec, attack, range(seed, seed + max(episodes, bar_for(spec.env).episodes)))
                results.append(result)
                if on_result is not None:
                    on_result(result)
    return results


def redteam_json(results: Iterable[AttackResult]) -> list[dict[str, object]]:
    """The results as JSON-ready rows (what ``igym report --redteam`` reads)."""
    return [{**asdict(r), "held": r.held} for r in results]


def redteam_markdown(results: Iterable[AttackResult], *, episodes: int, seed: int) -> str:
    """The red-team table as Markdown: per environment its bar and why, then every attack on every task."""
    results = list(results)
    envs = sorted({r.task_id.split("/")[0] for r in results})
    lines = [
        "# Red team",
        "",
        f"Every degenerate agent on every task, {episodes} eval episodes each from seed {seed} (more where an "
        "environment's bar asks for more); "
        "generated by `igym redteam --markdown`. An attack *holds* when its mean grade stays at or under the "
        "limit (threshold − margin) and it succeeds in at most one episode in twenty. "
        + (
            "Made in public mode: the replay attack, which wins by design there, is not played."
            if data_mode() == "public"
            else "Made under an eval secret (`IGYM_EVAL_SECRET`), so the replay attack is played too."
        ),
        "",
    ]
    for env in envs:
        bar = bar_for(env)
        lines += [f"## {env}", "", f"Margin {bar.margin:.2f} under each threshold: {bar.why}", ""]
        descriptions = {a.name: a.description for a in attacks_for(env)}
        lines += ["| task | attack | mean | limit | successes | held |", "|---|---|---|---|---|---|"]
        for r in results:
            if r.task_id.split("/")[0] == env:
                lines.append(
                    f"| `{r.task_id}` | {r.attack} | {r.mean:.3f} | {r.limit:.3f} | {r.successes}/{r.episodes} | "
                    f"{'yes' if r.held else '**no**'} |"
                )
        lines += ["", "Attacks:", ""] + [f"- **{name}**: {text}" for name, text in descriptions.items()] + [""]
    return "\n".join(lines)
