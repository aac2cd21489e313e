"""Speed of pii_redaction: steps/s, oracle episodes/s, grading and step cost against document size.

Prints one JSON object. Every figure is the median of several repeats measured in this run;
ratios compare against a naive all-pairs matcher (what a straightforward implementation does)
and against the floor of merely sorting the spans.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import integrity_gym
import timing
from integrity_gym.agents import make_agent
from integrity_gym.core.spans import iou
from integrity_gym.envs.pii_redaction.env import PiiRedactionEnv
from integrity_gym.envs.pii_redaction.grader import grade_redactions
from integrity_gym.envs.pii_redaction.models import Document, Entity, Redaction
from integrity_gym.envs.pii_redaction.reward import PRESETS

REPEATS = 5


def median_seconds(fn: Callable[[], Any], repeats: int = REPEATS) -> float:
    return timing.median_seconds(fn, repeats)


def big_document(n: int) -> Document:
    """``n`` ten-character entities separated by ten characters of filler."""
    parts, entities = [], []
    for i in range(n):
        text = f"e{i:09d}"
        entities.append(Entity(start=20 * i, end=20 * i + 10, label="EMAIL", text=text))
        parts.append(text + " filler.. ")
    return Document(id=f"bench-{n}", kind="contract", text="".join(parts), entities=tuple(entities))


def naive_match(pred: list[Redaction], gold: list[Entity]) -> int:
    """All-pairs greedy matching, O(n·m): the peer our sort-and-sweep replaces."""
    pairs = sorted(
        ((iou(p.start, p.end, g.start, g.end), i, j) for i, p in enumerate(pred) for j, g in enumerate(gold)),
        reverse=True,
    )
    used_p: set[int] = set()
    used_g: set[int] = set()
    for score, i, j in pairs:
        if score > 0.6 and i not in used_p and j not in used_g:
            used_p.add(i)
            used_g.add(j)
    return len(used_g)


def steps_per_second(mix: list[str], steps: int = 2000) -> float:
    env = integrity_gym.make("pii_redaction/security_logs_hard-v4", max_steps=10**9)
    env.reset(seed=0)
    length = env.observation().document_length
    redacts = iter(range(10**9))

    def run() -> None:
        env.reset(seed=0)
        for k in range(steps):
            action = mix[k % len(mix)]
            if action == "REDACT":
                obs = env.observation()
                i = next(redacts) % max(1, len(obs.visible_text) - 12)
                s = obs.cursor_position + i
                action = f"REDACT {s} {min(length, s + 6)} NAME"
            env.step(action)

    return steps / median_seconds(run)


def oracle_episodes_per_second(task: str, episodes: int = 20) -> float:
    def run() -> None:
        for seed in range(episodes):
            env = integrity_gym.make(task)
            agent = make_agent("oracle", env, seed=seed)
            obs = env.reset(seed=seed)
            while not env.done:
                obs = env.step(agent.act(obs)).observation

    return episodes / median_seconds(run, repeats=3)


def grading(n: int) -> dict[str, float]:
    doc = big_document(n)
    redactions = [Redaction(start=e.start + 1, end=e.end, label=e.label) for e in doc.entities]
    ours = median_seconds(lambda: grade_redactions(doc, redactions, PRESETS["default"], 0.9))
    floor = median_seconds(lambda: sorted((r.start, r.end) for r in redactions))
    out = {"entities": n, "grade_ms": ours * 1e3, "ratio_to_sort_floor": ours / floor}
    if n <= 3000:
        naive = median_seconds(lambda: naive_match(redactions, list(doc.entities)), repeats=1)
        out["naive_all_pairs_ms"] = naive * 1e3
        out["speedup_vs_naive"] = naive / ours
    return out


def step_cost_vs_redactions(n_existing: int, total: int = 21_000, measured: int = 25) -> float:
    """Median µs of a REDACT step with ``n_existing`` redactions already committed.

    The document and the window are the same for every ``n_existing``: the earlier redactions
    lie at the end of the document, the measured ones in the first window, so only the number
    of committed spans changes between measurements. Matching, coverage and reward work per step
    is independent of that number; what remains is the observation's own list of every
    committed span (its copy is linear, and shows only past a few thousand spans).
    """
    doc = big_document(total)
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v4", max_steps=10**9, reward_preset="reference")
    assert isinstance(env, PiiRedactionEnv)
    env.reset(seed=0, options={"document": doc})
    for e in doc.entities[total - n_existing :]:
        env.step(f"REDACT {e.start} {e.end} EMAIL")
    snapshot = env.state()
    times = []
    for _ in range(REPEATS):
        env.load_state(snapshot)
        for e in doc.entities[:measured]:
            start = time.perf_counter()
            env.step(f"REDACT {e.start} {e.end} EMAIL")
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def main() -> None:
    mixes = {
        "SKIP": ["SKIP"],
        "NEXT_CHUNK": ["NEXT_CHUNK", "NEXT_CHUNK", "PREV_CHUNK"],
        "REDACT": ["REDACT"],
        "mixed": ["REDACT", "REDACT", "NEXT_CHUNK", "SKIP", "PREV_CHUNK"],
    }
    step_costs = {n: step_cost_vs_redactions(n) for n in (10, 1000, 5000, 20000)}
    result = {
        "steps_per_second": {name: steps_per_second(mix) for name, mix in mixes.items()},
        "oracle_episodes_per_second": {
            spec.id: oracle_episodes_per_second(spec.id) for spec in integrity_gym.list_tasks("pii_redaction/*")
        },
        "grade": [grading(n) for n in (100, 1000, 3000, 10000, 20000)],
        "redact_step_us_by_existing_redactions": step_costs,
        "redact_step_cost_ratio_1000_vs_10": step_costs[1000] / step_costs[10],
        "redact_step_cost_ratio_20000_vs_10": step_costs[20000] / step_costs[10],
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
