"""The learned attacks on pii_redaction, and the eval partition that keeps them under the bar.

Each test names the code change (mutation) it catches. Seeds: eval 0-19 for every attack against
the bar (the red team's sample), train 0-299 to fit on (``TRAIN_EPISODES``), 300 train and 100 eval
documents for the train/eval overlap, eval 0-299 in order for the memory test (paired arms), 100
for its controls. No learned reader is held to the bar here: a token classifier fitted on train
tokens reads PII, which is doing the task (the environment's README gives its numbers).
"""

from __future__ import annotations

import functools
import re
import statistics
from random import Random

import pytest
from scipy import stats

import integrity_gym
from integrity_gym.agents.redteam import run_attack, score_of
from integrity_gym.agents.redteam.base import play_once
from integrity_gym.agents.redteam.learned import TRAIN_EPISODES, as_attack, learned_for
from integrity_gym.agents.redteam.learned import pii_redaction as learned
from integrity_gym.core.registry import TaskSpec, make
from integrity_gym.envs.pii_redaction.templates import common

TASKS = integrity_gym.list_tasks("pii_redaction/*")
EASY, MEDIUM, HARD = (s.id for s in TASKS)
EVAL_SEEDS = range(20)
#: The memory test's episodes, played in order; the paired interval's half-width is about 0.001.
MEMORY_SEEDS = range(300)
BY_NAME = {a.name: a for a in learned.LEARNED}


def _ids(specs: list[TaskSpec]) -> list[str]:
    return [s.name for s in specs]


def test_every_learned_attack_is_declared() -> None:
    # Kills: a reader (a token classifier on train tokens) put back among the attacks.
    assert [a.name for a in learned_for("pii_redaction")] == ["line_templates", "slot_contexts", "memory"]
    assert [a.name for a in learned.LEARNED if a.memory] == ["memory"]


# --------------------------------------------------------------------------- held-out line templates


@pytest.mark.parametrize("spec", TASKS, ids=_ids(TASKS))
def test_no_eval_masked_line_template_occurs_in_train(spec: TaskSpec) -> None:
    # Kills: eval documents falling back to train frames (``Frames.of`` returning ``train`` for both
    # partitions, a template module picking ``_X.train`` or dropping ``held_out``), an eval frame
    # that copies a train frame's wording within ten characters of a slot (the context share), and
    # eval names drawn from Faker's lists again (the values share).
    found = learned.template_overlap(spec, range(300), range(100))
    assert found["lines"] >= 500, found
    assert found["exact"] == found["digits"] == found["context"] == 0.0, found
    assert found["values"] < 0.002, found


@pytest.mark.parametrize("spec", TASKS, ids=_ids(TASKS))
def test_the_overlap_measure_sees_shared_templates(spec: TaskSpec) -> None:
    # The control: two disjoint sets of train documents share most of their masked lines (measured
    # 0.76 / 0.71 / 0.90 with digits read as 0). Kills a measure that can never match (a masked
    # template that keeps the values, or keys that differ per document).
    train = learned.documents(spec, range(300), "train")
    found = learned.overlap(train[:200], train[200:])
    assert found["digits"] > 0.5 and found["context"] > 0.9, found


# --------------------------------------------------------------------------- under the bar


@pytest.mark.parametrize(
    ("name", "spec"), [(n, s) for n in BY_NAME for s in TASKS], ids=lambda x: getattr(x, "name", x)
)
def test_learned_attack_stays_under_the_bar(name: str, spec: TaskSpec) -> None:
    # Kills: reverting the held-out line templates (generator v2: line_templates scores 0.770 /
    # 0.828 / 0.634 and slot_contexts 0.983 / 0.983 / 0.634, all over the 0.5625 limit), any family
    # whose eval set repeats its train set, and a memory attack whose explorer reads (generator v3's
    # shape probes alone scored 0.624 on easy).
    result = run_attack(spec, as_attack(spec, BY_NAME[name], range(TRAIN_EPISODES)), EVAL_SEEDS)
    assert result.held, result


@pytest.mark.parametrize("name", ["line_templates", "slot_contexts"])
@pytest.mark.parametrize("spec", TASKS, ids=_ids(TASKS))
def test_memorised_templates_score_where_the_frames_are_shared(name: str, spec: TaskSpec) -> None:
    # The control: on train documents it was not fitted on (same frames, new values) the same attack
    # passes the bar (measured 0.711 / 0.876 / 0.789 and 0.956 / 0.983 / 0.783). Kills an attack that
    # matches nothing, which would hold the bar above for no reason.
    build = BY_NAME[name].fit(spec, range(TRAIN_EPISODES))
    scores = [
        score_of(spec, play_once(make(spec.id, partition="train"), build(spec, seed), seed)[1])
        for seed in range(300, 320)
    ]
    assert statistics.mean(scores) > 0.65, scores


# --------------------------------------------------------------------------- memory


def test_the_explorer_reads_nothing() -> None:
    # The memory attack's own policy: its spans depend on where the tokens are and on the seed, never
    # on what they say. Kills a shape rule in the explorer (digit runs as PHONE, '@' tokens as EMAIL,
    # capitalised pairs as NAME: generator v3's probes).
    text = integrity_gym.make(HARD).reset(seed=0).visible_text
    blind = re.sub(r"[A-Za-z0-9@]", "x", text)
    assert learned.explore(text, Random(7)) == learned.explore(blind, Random(7))
    labels = {label for _, _, label in learned.explore(text * 20, Random(7))}
    assert labels == {"NAME", "EMAIL", "PHONE", "ADDRESS", "DOB", "SSN"}


def test_memory_reuses_what_paid() -> None:
    # Kills a memory that stores but never recalls (a test of "memory gains nothing" would then pass
    # for no reason): a remembered string, context, left context and position each come back first,
    # with the label that paid.
    spec = integrity_gym.get_spec(MEDIUM)
    bank = learned.MemoryBank()
    bank.values[("Torvan Kelvark", "NAME")] = learned._Record(paid=1)
    bank.contexts[("seen by ", " today", False, False, "NAME")] = learned._Record(paid=1)
    bank.lefts[("mobile ", False, 1, "PHONE")] = learned._Record(paid=1)
    bank.positions[(1, 0, 5, "DOB")] = learned._Record(paid=1)
    agent = learned.MemoryAgent(spec, 0, bank)
    text = "Torvan Kelvark was seen by Ada Vell today\n1.2.3 mobile 555-0101 and more"
    plan = agent.plan(text)
    recalled = sorted((s, e, label) for score, s, e, label in plan if score >= 1.5)
    start = text.index("\n") + 1
    assert recalled == [
        (0, 14, "NAME"),
        (27, 35, "NAME"),
        (start, start + 5, "DOB"),
        (text.index("555"), text.index("555") + 8, "PHONE"),
    ], recalled
    bank.values[("Torvan Kelvark", "NAME")].failed = 1  # failed as often as it paid: no longer used
    assert (0, 14, "NAME") not in {(s, e, label) for score, s, e, label in agent.plan(text) if score >= 1.5}


def test_the_wiped_control_really_forgets() -> None:
    # Kills a wiped control that keeps its memory (the test below would then compare memory with itself).
    spec = integrity_gym.get_spec(HARD)
    for wiped, kept in ((True, 0), (False, 1)):
        bank = learned.MemoryBank()
        agent = learned.memory_build(wiped=wiped, bank=bank)(spec, 0)
        bank.values[("Torvan", "NAME")] = learned._Record(paid=1)
        agent.start_episode()
        assert len(bank) == kept and bank.episodes == 1


def _memory_gain(spec: TaskSpec, seeds: range) -> tuple[float, float, float]:
    """Mean of the per-seed score difference (memory minus memory wiped) and its 95% t-interval."""
    scores = {}
    for wiped in (False, True):
        build = learned.memory_build(wiped=wiped)
        scores[wiped] = [score_of(spec, play_once(make(spec.id), build(spec, s), s)[1]) for s in seeds]
    diffs = [a - b for a, b in zip(scores[False], scores[True], strict=True)]
    mean = statistics.mean(diffs)
    half = float(stats.t.ppf(0.975, len(diffs) - 1)) * statistics.stdev(diffs) / len(diffs) ** 0.5
    return mean, mean - half, mean + half


@functools.cache
def _gain(task_id: str) -> tuple[float, float, float]:
    return _memory_gain(integrity_gym.get_spec(task_id), MEMORY_SEEDS)


@pytest.mark.parametrize("spec", TASKS, ids=_ids(TASKS))
def test_memory_gains_nothing_over_itself_wiped(spec: TaskSpec) -> None:
    # An agent remembering every earlier eval episode's observations and rewards does no better than
    # the same agent forgetting them: the 95% interval of the paired gain reaches 0 (one-sided, no
    # gain; a memory that only costs steps may come out a hair below), and whatever it might hide is
    # tiny. Generator v3 (fixed eval frames, Faker names): +0.106 / +0.105 / +0.103 over seeds 0-199.
    # Generator v4, seeds 0-299: +0.0004 [-0.0004, +0.0011], +0.0001 [-0.0001, +0.0003], +0.0006
    # [-0.00001, +0.0011] (the hard tier's lower bound is close to 0: what memory still finds there is
    # the few shapes a held-out rendering repeats). Kills: eval frames that repeat across eval
    # documents, values that do (the controls below), a records-system word or agents' site shared
    # by documents.
    mean, low, high = _gain(spec.id)
    assert low <= 0.0, (mean, low, high)
    assert high < 0.003, (mean, low, high)


def test_the_memory_test_catches_values_repeated_across_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    # The control: every eval person named alike (a name pool of one) gives memory something to
    # reuse, and the interval leaves 0 far behind (measured +0.077 [+0.067, +0.087] on medium).
    monkeypatch.setattr(common, "fictional_first", lambda rng, gender: "Torvan" if gender == "m" else "Bralvine")
    monkeypatch.setattr(common, "fictional_surname", lambda rng: "Kelvark")
    mean, low, high = _memory_gain(integrity_gym.get_spec(MEDIUM), range(100))
    assert low > 0.01, (mean, low, high)


def test_the_memory_test_catches_frames_repeated_across_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    # The control: eval documents written with one fixed set of line templates (here the training
    # set's) give memory frames to reuse (measured +0.084 [+0.072, +0.095] on easy).
    monkeypatch.setattr(common.Frames, "of", lambda self, held_out: self.train)
    mean, low, high = _memory_gain(integrity_gym.get_spec(EASY), range(100))
    assert low > 0.01, (mean, low, high)


@pytest.mark.parametrize("spec", TASKS, ids=_ids(TASKS))
def test_eval_documents_rarely_repeat_what_memory_keys_on(spec: TaskSpec) -> None:
    # Measured on the gold over eval seeds 0-299 in order: share of PII occurrences whose value,
    # ten-character context or left context an earlier eval document already showed (v3, contexts
    # cut at neighbouring values: values 0.012 / 0.201 / 0.212, contexts 0.91 / 0.91 / 0.96; v4:
    # values 0.000 / 0.001 / 0.002, contexts 0 / 0 / 0.015, left contexts 0.000 / 0.001 / 0.093, on
    # hard chiefly values inside URLs, which no whole-token span reaches, and customers' tags before a
    # second chat message). Kills a pool of values or frames that shrinks again.
    found = learned.eval_recurrence(learned.documents(spec, MEMORY_SEEDS, "eval"))
    assert found["values"] < 0.005 and found["contexts"] < 0.03 and found["lefts"] < 0.15, found
