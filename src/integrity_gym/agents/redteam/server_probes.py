"""Attacks on the evaluator itself (issue 22): probes that ask a running server about the agent's item.

``IGYM_EVAL_SECRET`` keeps the public code from rebuilding eval items, but an agent that may reset
what it likes can ask the server instead. Each attack here starts its real episode (from a sealed
evaluation's handle, or, against a server that is not sealed, from the reset body the evaluator
would send), probes, then plays the real episode with what the probe learned, falling back to a
fixed honest-but-blind policy when it learned nothing:

1. :func:`second_session` (selective_verification): open another session on the same item (by
   the ``item_id`` the observation shows, or by starting the handle again), answer it with
   confidence 1 and read the truth from the reward.
2. :func:`seed_search` (information_integrity): reset seeds 0..63 in sessions of its own until a
   first observation equals the real one, then try each decision in sessions at that seed and
   read which one the reward pays.
3. :func:`probe_and_confirm` (pii_redaction): find the document again by seed search, REDACT
   each candidate span in probe sessions and keep the ones whose reward confirms them; the real
   session redacts only those.
4. :func:`explain_probe` (information_integrity): read the explanation of a session on the same
   item (the real one, or one found by seed or by name) for the rule's decision and the gold
   statements.
5. :func:`scenario_by_name` (information_integrity): reset ``scenario_id="gen_<tier>_eval_<k>"``
   to open generated eval items directly, and use one equal to the real item.

Each returns a :class:`ProbeResult`: whether the probe got anything (a refusal is a failure), what
it learned, the refusals it met, and the real session it played (its grade is read later: from
the evaluation's close on a sealed server, from ``/grade`` otherwise). :func:`fallback` plays the
same real-episode policy without probing; against a sealed server every probe must fail and do
exactly as well as it (tests/server/test_sealed.py).
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

#: A sealed evaluation's handle, or the reset body an unsealed server's evaluator would send.
Start = str | Mapping[str, Any]
#: Seeds an agent tries when it searches by first observation (the issue's 0..63).
SEARCH_SEEDS = range(64)
#: Generated eval items an agent tries to open by name.
NAMED_ITEMS = range(8)
DECISIONS = ("allow", "flag", "remove")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")


@dataclass
class ProbeResult:
    """What one attack got from the server."""

    name: str
    #: True when the probe got what it was after; a refusal counts as failure.
    succeeded: bool = False
    #: What it learned (a label, a seed, confirmed spans, a decision and statements ...).
    learned: dict[str, Any] = field(default_factory=dict)
    #: Error codes of the refusals it met, in order.
    refusals: list[str] = field(default_factory=list)
    #: The real episode's session and its rewards as played.
    session_id: str | None = None
    rewards: list[float] = field(default_factory=list)


@dataclass
class _Episode:
    """The real episode: where it is played and what it first showed."""

    url: str
    env: str
    session_id: str
    task_id: str
    observation: dict[str, Any]


class _Server:
    """Plain JSON calls to one server, noting each refusal."""

    def __init__(self, url: str, result: ProbeResult, http: httpx.Client) -> None:
        self.url = url.rstrip("/")
        self.result = result
        self.http = http

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        reply = self.http.post(self.url + path, json=body)
        data = reply.json() if reply.content else None
        if reply.status_code >= 400:
            self.result.refusals.append(str((data or {}).get("code", reply.status_code)))
        return reply.status_code, data

    def get(self, path: str) -> tuple[int, Any]:
        reply = self.http.get(self.url + path)
        data = reply.json() if reply.content else None
        if reply.status_code >= 400:
            self.result.refusals.append(str((data or {}).get("code", reply.status_code)))
        return reply.status_code, data

    def reset(self, env: str, body: Mapping[str, Any]) -> dict[str, Any] | None:
        status, data = self.post(f"/{env}/reset", dict(body))
        return data if status == 200 else None

    def step(self, env: str, session_id: str, action: Any) -> dict[str, Any] | None:
        status, data = self.post(f"/{env}/step", {"session_id": session_id, "action": action})
        return data if status == 200 else None

    def drop(self, env: str, session_id: str) -> None:
        self.http.delete(f"{self.url}/{env}/session/{session_id}")


def _start(server: _Server, env: str, start: Start) -> _Episode:
    body = {"handle": start} if isinstance(start, str) else dict(start)
    reply = server.reset(env, body)
    if reply is None:
        raise RuntimeError(f"the real episode did not start: {server.result.refusals[-1:]}")
    return _Episode(server.url, env, reply["session_id"], reply["task_id"], reply["observation"])


def _attack(
    name: str,
    env: str,
    url: str,
    start: Start,
    probe: Callable[[_Server, _Episode, Start], dict[str, Any]],
    play: Callable[[_Server, _Episode, dict[str, Any]], list[float]],
) -> ProbeResult:
    result = ProbeResult(name)
    with httpx.Client(trust_env=False, timeout=60) as http:
        server = _Server(url, result, http)
        episode = _start(server, env, start)
        result.session_id = episode.session_id
        result.learned = probe(server, episode, start)
        result.succeeded = bool(result.learned)
        result.rewards = play(server, episode, result.learned)
    return result


#: ``_same_item`` found a session on another item (not refused, no match).
OTHER = "other"


def _same_item(server: _Server, episode: _Episode, body: Mapping[str, Any]) -> str | None:
    """Reset ``body`` in a session of our own and compare its first observation with the real one.

    Returns the session's id when they are equal, ``OTHER`` when it opened another item, None when
    the reset was refused.
    """
    reply = server.reset(episode.env, body)
    if reply is None:
        return None
    if reply["observation"] == episode.observation:
        return str(reply["session_id"])
    server.drop(episode.env, reply["session_id"])
    return OTHER


def _search_seed(server: _Server, episode: _Episode) -> int | None:
    for seed in SEARCH_SEEDS:
        found = _same_item(server, episode, {"task": episode.task_id, "seed": seed})
        if found is None:
            return None  # refused outright: a search would be refused at every seed
        if found != OTHER:
            server.drop(episode.env, found)
            return seed
    return None


# --------------------------------------------------------------------------- real-episode play
def _play_verification(server: _Server, episode: _Episode, learned: Mapping[str, Any]) -> list[float]:
    """Answer with confidence 1 what the probe learned; abstain without it (the fallback)."""
    if "label" in learned:
        action = {"verdict": "SUPPORTED" if learned["label"] else "REFUTED", "confidence": 1.0}
    else:
        action = {"verdict": "ABSTAIN"}
    reply = server.step(episode.env, episode.session_id, action)
    return [] if reply is None else [float(reply["reward"])]


def _play_integrity(server: _Server, episode: _Episode, learned: Mapping[str, Any]) -> list[float]:
    """Verify the first claim, check two sources, then decide: as learned, else 'flag' with no reasoning."""
    obs = episode.observation
    actions: list[dict[str, Any]] = [{"type": "verify_claim", "claim_id": obs["claims"][0]["id"]}]
    actions += [{"type": "check_source", "source_id": s["id"]} for s in obs["available_sources"][:2]]
    reasoning = ". ".join(learned.get("statements", [])) or None
    actions.append({"type": "decide", "decision": learned.get("decision", "flag"), "reasoning": reasoning})
    rewards = []
    for action in actions:
        reply = server.step(episode.env, episode.session_id, action)
        if reply is None:
            break
        rewards.append(float(reply["reward"]))
        if reply["done"]:
            break
    return rewards


def _play_redaction(server: _Server, episode: _Episode, learned: Mapping[str, Any]) -> list[float]:
    """Redact only the confirmed spans, then finish (without any: finish at once, the fallback)."""
    rewards = []
    for start, end, label in learned.get("confirmed", []):
        reply = server.step(
            episode.env, episode.session_id, {"action_type": "REDACT", "start": start, "end": end, "label": label}
        )
        if reply is not None:
            rewards.append(float(reply["reward"]))
    reply = server.step(episode.env, episode.session_id, {"action_type": "FINISH"})
    if reply is not None:
        rewards.append(float(reply["reward"]))
    return rewards


_PLAYS = {
    "selective_verification": _play_verification,
    "information_integrity": _play_integrity,
    "pii_redaction": _play_redaction,
}


def fallback(url: str, start: Start, env: str) -> ProbeResult:
    """Play the real episode as the attacks do when their probe learned nothing (no probing at all)."""
    return _attack("fallback", env, url, start, lambda server, episode, start: {}, _PLAYS[env])


# --------------------------------------------------------------------------- 1. a second session
def _probe_second_session(server: _Server, episode: _Episode, start: Start) -> dict[str, Any]:
    item_id = episode.observation.get("item_id")
    tries: list[dict[str, Any]] = [{"task": episode.task_id, "scenario_id": item_id}]
    if isinstance(start, str):
        tries += [{"handle": start}, {"handle": start, "scenario_id": item_id}]
    else:
        tries.append(dict(start))
    for body in tries:
        reply = server.reset(episode.env, body)
        if reply is None:
            continue
        answered = server.step(episode.env, reply["session_id"], {"verdict": "SUPPORTED", "confidence": 1.0})
        server.drop(episode.env, reply["session_id"])
        if answered is not None:
            # Brier with confidence 1: reward 1 when SUPPORTED is right, 0 when it is wrong.
            return {"label": float(answered["reward"]) > 0.5, "via": {k: v for k, v in body.items() if k != "handle"}}
    return {}


def second_session(url: str, start: Start) -> ProbeResult:
    """Probe 1 (selective_verification): the truth from the reward of a second session on the item."""
    return _attack("second_session", "selective_verification", url, start, _probe_second_session, _play_verification)


# --------------------------------------------------------------------------- 2. seed search
def _best_decision(server: _Server, episode: _Episode, body: Mapping[str, Any]) -> str | None:
    """The decision whose decide step pays most, each tried at once in a session reset with ``body``."""
    paid: dict[str, float] = {}
    for decision in DECISIONS:
        reply = server.reset(episode.env, body)
        if reply is None:
            return None
        answered = server.step(episode.env, reply["session_id"], {"type": "decide", "decision": decision})
        server.drop(episode.env, reply["session_id"])
        if answered is None:
            return None
        paid[decision] = float(answered["reward"])
    best = max(paid, key=lambda d: paid[d])
    return best if paid[best] > min(paid.values()) else None


def _probe_seed_search(server: _Server, episode: _Episode, start: Start) -> dict[str, Any]:
    seed = _search_seed(server, episode)
    if seed is None:
        return {}
    learned: dict[str, Any] = {"seed": seed}
    decision = _best_decision(server, episode, {"task": episode.task_id, "seed": seed})
    if decision is not None:
        learned["decision"] = decision
    return learned


def seed_search(url: str, start: Start) -> ProbeResult:
    """Probe 2 (information_integrity): find the seed by first observation, read decisions' rewards there."""
    return _attack("seed_search", "information_integrity", url, start, _probe_seed_search, _play_integrity)


# --------------------------------------------------------------------------- 3. probe and confirm
def _probe_and_confirm(server: _Server, episode: _Episode, start: Start) -> dict[str, Any]:
    obs = episode.observation
    offset = int(obs["cursor_position"])
    candidates = [(offset + m.start(), offset + m.end(), "EMAIL") for m in _EMAIL.finditer(obs["visible_text"])]
    seed = _search_seed(server, episode)
    if seed is None or not candidates:
        return {}
    confirmed = []
    for span in candidates:
        reply = server.reset(episode.env, {"task": episode.task_id, "seed": seed})
        if reply is None:
            break
        start_, end, label = span
        answered = server.step(
            episode.env, reply["session_id"], {"action_type": "REDACT", "start": start_, "end": end, "label": label}
        )
        server.drop(episode.env, reply["session_id"])
        if answered is not None and float(answered["reward"]) > 0:
            confirmed.append(list(span))
    return {"seed": seed, "confirmed": confirmed} if confirmed else {}


def probe_and_confirm(url: str, start: Start) -> ProbeResult:
    """Probe 3 (pii_redaction): confirm candidate spans through the rewards of probe sessions."""
    return _attack("probe_and_confirm", "pii_redaction", url, start, _probe_and_confirm, _play_redaction)


# --------------------------------------------------------------------------- 4. explain of a probe
_RULE = re.compile(r"The rule's decision is (allow|flag|remove)")
_GOLD = re.compile(r"expected: (.*)\.\s*$", re.M)


def _read_explanation(text: str) -> dict[str, Any]:
    learned: dict[str, Any] = {}
    rule = _RULE.search(text)
    if rule:
        learned["decision"] = rule.group(1)
    gold = _GOLD.search(text)
    if gold:
        learned["statements"] = [s.strip() for s in gold.group(1).split(";") if s.strip()]
    return learned


def _probe_explain(server: _Server, episode: _Episode, start: Start) -> dict[str, Any]:
    # The real session's own explanation, before the episode ends.
    status, data = server.get(f"/web/api/explain/{episode.env}/{episode.session_id}")
    if status == 200:
        return _read_explanation(data["explain"])
    # A probe session on the same item: by seed, else by name.
    bodies = []
    seed = _search_seed(server, episode)
    if seed is not None:
        bodies.append({"task": episode.task_id, "seed": seed})
    tier = episode.observation.get("task_difficulty", "easy")
    bodies += [{"task": episode.task_id, "scenario_id": f"gen_{tier}_eval_{k}"} for k in NAMED_ITEMS]
    for body in bodies:
        found = _same_item(server, episode, body)
        if found is None:
            return {}  # refused: the server hands out no session of its own choosing
        if found == OTHER:
            continue
        server.step(episode.env, found, {"type": "decide", "decision": "flag"})
        status, data = server.get(f"/web/api/explain/{episode.env}/{found}")
        server.drop(episode.env, found)
        if status == 200:
            return _read_explanation(data["explain"])
    return {}


def explain_probe(url: str, start: Start) -> ProbeResult:
    """Probe 4 (information_integrity): the rule's decision and gold statements from an explanation."""
    return _attack("explain_probe", "information_integrity", url, start, _probe_explain, _play_integrity)


# --------------------------------------------------------------------------- 5. scenario by name
def _probe_by_name(server: _Server, episode: _Episode, start: Start) -> dict[str, Any]:
    tier = episode.observation.get("task_difficulty", "easy")
    names = [f"gen_{tier}_eval_{k}" for k in NAMED_ITEMS]
    if isinstance(start, str):  # the handle with a name beside it
        server.reset(episode.env, {"handle": start, "scenario_id": names[0]})
    opened: list[str] = []
    for name in names:
        body = {"task": episode.task_id, "scenario_id": name}
        found = _same_item(server, episode, body)
        if found is None:
            continue
        opened.append(name)
        if found != OTHER:
            server.drop(episode.env, found)
            learned: dict[str, Any] = {"opened": opened, "scenario_id": name}
            decision = _best_decision(server, episode, body)
            if decision is not None:
                learned["decision"] = decision
            return learned
    return {"opened": opened} if opened else {}


def scenario_by_name(url: str, start: Start) -> ProbeResult:
    """Probe 5 (information_integrity): open generated eval items by name, use the one equal to ours."""
    return _attack("scenario_by_name", "information_integrity", url, start, _probe_by_name, _play_integrity)


#: Every probe, with the environment its handle must be of.
PROBES: dict[str, tuple[str, Callable[[str, Start], ProbeResult]]] = {
    "second_session": ("selective_verification", second_session),
    "seed_search": ("information_integrity", seed_search),
    "probe_and_confirm": ("pii_redaction", probe_and_confirm),
    "explain_probe": ("information_integrity", explain_probe),
    "scenario_by_name": ("information_integrity", scenario_by_name),
}


# --------------------------------------------------------------------------- the red-team table
#: The task each environment's probes play (any version: the server serves the newest).
PROBE_TASKS = {
    "selective_verification": "selective_verification/text",
    "information_integrity": "information_integrity/hard",
    "pii_redaction": "pii_redaction/gdpr_contract_easy",
}


@dataclass(frozen=True)
class ProbeRow:
    """One probe played on ``episodes`` items of a sealed server, and on an unsealed one as the control."""

    probe: str
    task: str
    episodes: int
    #: Sealed server: items where the probe got anything, the refusals it met, and the mean grade of
    #: the probed episodes against the same play without probing on the same items.
    sealed_successes: int
    refusals: tuple[str, ...]
    probed: float
    unprobed: float
    #: Unsealed server with the same kind of secret: items where the probe learned something.
    open_successes: int

    @property
    def held(self) -> bool:
        """Refused every time on the sealed server, and no better than not probing."""
        return self.sealed_successes == 0 and self.probed <= self.unprobed + 1e-9


def _serve(sealed: bool, secret: str, admin: str) -> tuple[subprocess.Popen[str], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("IGYM_")}
    env.update({"IGYM_EVAL_SECRET": secret, "IGYM_ADMIN_TOKEN": admin})
    command = [sys.executable, "-m", "integrity_gym", "serve", "--host", "127.0.0.1", "--port", "0"]
    proc = subprocess.Popen(command + (["--sealed"] if sealed else []), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)  # fmt: skip
    assert proc.stdout is not None
    deadline, seen = time.monotonic() + 120, []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", line)
        if found:
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep the pipe drained
            return proc, found.group(1)
    proc.kill()
    raise RuntimeError("the probe server did not start:\n" + "".join(seen))


def run_server_probes(episodes: int = 3) -> list[ProbeRow]:
    """Every probe on ``episodes`` items of a real sealed server (and of an unsealed control server).

    Both servers run as ``igym serve`` subprocesses under a fresh random secret. On the sealed one
    the probed items are those of one evaluation, and the same play without probing runs on the
    same items (a ``repeat_of`` evaluation, which only the admin token may open).
    """
    secret, admin = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    headers = {"authorization": f"Bearer {admin}"}
    sealed_proc, sealed_url = _serve(True, secret, admin)
    open_proc, open_url = _serve(False, secret, admin)
    rows = []
    try:
        with httpx.Client(trust_env=False, timeout=120) as http:
            tasks = sorted(set(PROBE_TASKS.values()))
            body = {"tasks": tasks, "episodes": episodes * len(PROBES)}
            attacked = http.post(f"{sealed_url}/evaluations", json=body).json()
            repeat = {**body, "repeat_of": attacked["evaluation_id"]}
            baseline = http.post(f"{sealed_url}/evaluations", json=repeat, headers=headers).json()

            def handles(evaluation: dict[str, Any], task: str) -> list[str]:
                return [e["handle"] for e in evaluation["episodes"] if e["task_id"].startswith(task + "-v")]

            played: dict[str, list[tuple[str, int]]] = {}
            sealed_wins: dict[str, int] = {}
            refused: dict[str, set[str]] = {}
            used = dict.fromkeys(tasks, 0)
            for name, (env, probe) in PROBES.items():
                task = PROBE_TASKS[env]
                for _ in range(episodes):
                    index = used[task]
                    used[task] += 1
                    result = probe(sealed_url, handles(attacked, task)[index])
                    fallback(sealed_url, handles(baseline, task)[index], env)
                    sealed_wins[name] = sealed_wins.get(name, 0) + result.succeeded
                    refused.setdefault(name, set()).update(result.refusals)
                    played.setdefault(name, []).append((task, index))
            grades = {}
            for evaluation in (attacked, baseline):
                closed = http.post(f"{sealed_url}/evaluations/{evaluation['evaluation_id']}/close").json()
                grades[evaluation["evaluation_id"]] = {
                    (e["task_id"].split("-v")[0], e["index"]): (e["grade"] or {}).get("score", 0.0)
                    for e in closed["episodes"]
                }
            for name, (env, probe) in PROBES.items():
                task = PROBE_TASKS[env]
                opened = sum(probe(open_url, {"task": task, "seed": seed}).succeeded for seed in range(episodes))
                keys = played[name]
                rows.append(ProbeRow(
                    name, task, episodes, sealed_wins[name], tuple(sorted(refused[name])),
                    sum(grades[attacked["evaluation_id"]][k] for k in keys) / len(keys),
                    sum(grades[baseline["evaluation_id"]][k] for k in keys) / len(keys), opened,
                ))  # fmt: skip
    finally:
        for proc in (sealed_proc, open_proc):
            proc.terminate()
            proc.wait(timeout=30)
    return rows


def probes_markdown(rows: list[ProbeRow]) -> str:
    """The probes' table for docs/redteam.md."""
    lines = [
        "## Probes of the evaluator (a sealed server)",
        "",
        "Each probe asks a running server about the agent's own item (docs/evaluation.md). Played on items of a "
        "real `igym serve --sealed` (refusals met, mean grade of the probed episodes against the same play "
        "without probing on the same items) and, as the control that the probe works, on an unsealed server "
        "holding a secret (items where it learned the answer). Generated by `igym redteam --server-probes`.",
        "",
        "| probe | task | sealed: learned | refusals | grade probed | grade not probed | unsealed: learned | held |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.probe} | `{r.task}` | {r.sealed_successes}/{r.episodes} | {', '.join(r.refusals) or '-'} | "
        f"{r.probed:.3f} | {r.unprobed:.3f} | {r.open_successes}/{r.episodes} | {'yes' if r.held else '**no**'} |"
        for r in rows
    ]
    return "\n".join([*lines, ""])
