"""The red team: degenerate agents per environment, and the check that none of them scores.

Every environment's ``agents.redteam.<env>`` module declares ``ATTACKS`` (a tuple of
:class:`Attack`) and ``BAR`` (a :class:`Bar`). ``run_redteam`` plays each attack on each task over
eval-partition episodes and reports whether it stayed under the bar; ``igym redteam`` prints the
table and ``tests/redteam`` runs the same check in ``make test``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any

from integrity_gym.agents.redteam.base import Attack, Bar, play_once
from integrity_gym.agents.redteam.learned import Overlap, as_attack, learned_for, train_episodes_for
from integrity_gym.core.registry import TaskSpec, env_extras, list_tasks, make
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


def _module(env: str) -> ModuleType | None:
    """The red-team module environment ``env`` declares (``EnvExtras.redteam``), if any."""
    return env_extras(env).module("redteam")


def attacks_for(env: str) -> tuple[Attack, ...]:
    """The attacks on environment ``env``: its own, then the replay attack every environment faces."""
    from integrity_gym.agents.redteam.replay import REPLAY

    module = _module(env)
    attacks: tuple[Attack, ...] = () if module is None else module.ATTACKS
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
    module = _module(env)
    if module is None:
        raise ValueError(f"environment {env!r} declares no red team (EnvExtras.redteam): it has no bar")
    bar: Bar = module.BAR
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


def _scores(spec: TaskSpec, build: Callable[[TaskSpec, int], Any], seeds: Iterable[int]) -> tuple[list[float], int]:
    """The red team's score of each episode an agent built by ``build`` plays, and its number of successes."""
    scores: list[float] = []
    successes = 0
    for seed in seeds:
        _, grade = play_once(make(spec.id), build(spec, seed), seed)
        scores.append(score_of(spec, grade))
        successes += bool(grade.success)
    return scores, successes


#: The honest agents' means, by (task, agent, seeds, data mode): kept per process.
_RESTATED: dict[tuple[str, Callable[[TaskSpec, int], Any], tuple[int, ...], str], float] = {}


def _restated_mean(spec: TaskSpec, build: Callable[[TaskSpec, int], Any], seeds: tuple[int, ...]) -> float:
    """The honest agent's mean on these seeds in this data mode: every attack restating it is held to it.

    Several attacks restate one agent (its verdicts at confidence 1, never abstaining); it is played
    once for all of them.
    """
    key = (spec.id, build, seeds, data_mode())
    if key not in _RESTATED:
        scores, _ = _scores(spec, build, seeds)
        _RESTATED[key] = sum(scores) / len(scores)
    return _RESTATED[key]


def run_attack(spec: TaskSpec, attack: Attack, seeds: Iterable[int]) -> AttackResult:
    """Play ``attack`` on ``spec``'s task (eval partition) for each seed."""
    seeds = list(seeds)
    scores, successes = _scores(spec, attack.build, seeds)
    bar = bar_for(spec.env)
    n = len(scores)
    limit = bar.limit(spec, floor=attack.floor)
    if attack.restates is not None:
        limit = max(limit, _restated_mean(spec, attack.restates, tuple(seeds)))
    return AttackResult(
        task_id=spec.id,
        attack=attack.name,
        episodes=n,
        mean=sum(scores) / n,
        successes=successes,
        threshold=spec.success_threshold,
        limit=limit,
        max_successes=int(bar.max_success_rate * n + 1e-9),
        floor=attack.floor,
    )


def _attacks_on(spec: TaskSpec, *, secret: bool, learned: bool, train_episodes: int | None) -> Iterable[Attack]:
    """The attacks played on ``spec``: the environment's (those playable in this mode), then its learned ones."""
    yield from (a for a in attacks_for(spec.env) if (secret or not a.secret_only) and a.applies(spec))
    if learned:
        count = train_episodes_for(spec.env) if train_episodes is None else train_episodes
        for attack in learned_for(spec.env):
            if attack.applies(spec):
                yield as_attack(spec, attack, range(count))


def run_redteam(
    pattern: str = "*",
    episodes: int = 20,
    seed: int = 0,
    on_result: Callable[[AttackResult], None] | None = None,
    *,
    learned: bool = False,
    train_episodes: int | None = None,
) -> list[AttackResult]:
    """Every attack on every task matching ``pattern``, over ``episodes`` seeds from ``seed``.

    An environment's bar raises the count where its episodes are too noisy (``Bar.episodes_for``). Attacks
    that win by design in public mode (``secret_only``: the replay) are played only when
    the eval secret is set. With ``learned``, each environment's learned attacks are fitted on
    ``train_episodes`` training items (by default the environment's ``TRAIN_EPISODES``, else 300) and played too
    (scikit-learn, the ``learned`` extra). ``on_result`` hears of each result as it is made.
    """
    if learned:
        try:
            import sklearn  # noqa: F401
        except ImportError as exc:
            raise ImportError("the learned attacks need scikit-learn: pip install 'integrity-gym[learned]'") from exc
    secret = data_mode() != "public"
    results = []
    for spec in list_tasks(pattern):
        seeds = range(seed, seed + max(episodes, bar_for(spec.env).episodes_for(spec)))
        for attack in _attacks_on(spec, secret=secret, learned=learned, train_episodes=train_episodes):
            result = run_attack(spec, attack, seeds)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return results


def redteam_json(results: Iterable[AttackResult]) -> list[dict[str, object]]:
    """The results as JSON-ready rows (what ``igym report --redteam`` reads)."""
    return [{**asdict(r), "held": r.held} for r in results]


def redteam_markdown(
    results: Iterable[AttackResult], *, episodes: int, seed: int, overlaps: Iterable[Overlap] = ()
) -> str:
    """The red-team table as Markdown: per environment its bar and why, then every attack on every task.

    Given ``overlaps``, each environment's section ends with how much of each kind of surface form
    its eval partition shares with train.
    """
    results, overlaps = list(results), list(overlaps)
    envs = sorted({r.task_id.split("/")[0] for r in results})
    lines = [
        "# Red team",
        "",
        f"Every degenerate agent on every task, {episodes} eval episodes each from seed {seed} (more where an "
        "environment's bar asks for more); "
        "generated by `igym redteam --markdown`. An attack *holds* when its mean grade stays at or under the "
        "limit (threshold − margin) and it succeeds in at most one episode in twenty. "
        + (
            "Rows `learned:` are models fitted on training items with only what an agent sees without doing the "
            "task, and `learned:memory`, which plays the eval seeds in order and remembers every earlier episode's "
            "observations and rewards (`igym redteam --learned`). "
            if any(r.attack.startswith("learned:") for r in results)
            else ""
        )
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
        descriptions |= {a.attack_name: a.features for a in learned_for(env)}
        descriptions = {name: text for name, text in descriptions.items() if name in {r.attack for r in results}}
        lines += ["| task | attack | mean | limit | successes | held |", "|---|---|---|---|---|---|"]
        for r in results:
            if r.task_id.split("/")[0] == env:
                lines.append(
                    f"| `{r.task_id}` | {r.attack} | {r.mean:.3f} | {r.limit:.3f} | {r.successes}/{r.episodes} | "
                    f"{'yes' if r.held else '**no**'} |"
                )
        lines += ["", "Attacks:", ""] + [f"- **{name}**: {text}" for name, text in descriptions.items()] + [""]
        rows = [o for o in overlaps if o.task_id.split("/")[0] == env]
        if rows:
            lines += [
                "Surface forms the eval partition shares with train (distinct forms in each sample; share of eval "
                "occurrences whose form training also shows):",
                "",
                "| task | form | train | eval | eval share seen in train |",
                "|---|---|---|---|---|",
                *(f"| `{o.task_id}` | {o.form} | {o.train} | {o.eval} | {o.shared:.0%} |" for o in rows),
                "",
            ]
    return "\n".join(lines)
