"""Learned attacks on selective_verification: fitted on the train partition, or remembering eval episodes.

* ``picture_stats`` (picture tasks): gradient boosting on the claimed object's name and global
  statistics of the picture only (per-channel and coarse joint colour histograms, a grey-level
  histogram, mean and spread of each channel, the border colour, the share of pixels that differ
  from it, the PNG's size), plus how well those histograms match the claimed object's committed
  glyph (its colours and its grey levels, computed from the public glyph files: a function of the
  object's name, never of where anything is drawn), and the claim text's train prior (the blind
  baseline's). No feature depends on where a pixel is. It answers honestly at the model's
  calibrated probability, abstaining below q*.
* ``claim_words`` (the text task): logistic regression on the bag of words (and word pairs) of the
  claim, marked apart, and of the passage, fitted on the train episodes' revealed probability of
  the claim.
* ``memory`` (every task): plays the eval seeds in order and remembers every earlier episode's
  picture (or passage) hash, claim and revealed truth. It reuses the truth of an identical
  (picture, object) or (passage, claim), flips it for the negated claim on the same passage, and on
  a POPE picture seen before it counts the slots left (three true and three false claims per
  picture); otherwise it answers from the claim text's train prior, updated with the labels
  the eval episodes revealed so far. It never abstains (an abstention reveals nothing): it answers
  the likelier verdict at its belief, at least ``PROBE`` (just over one half), so every reward
  reveals the truth at some cost against abstaining when unsure. ``memory_attack(spec,
  remember=False)`` is the same agent with its memory wiped before every episode (the tests
  compare the two).

Labels of the train episodes come from what a train episode reveals: each train item is answered
SUPPORTED at confidence 1, whose reward is 1 when the claim is true and 0 when it is false (on the
text task the grade's ``true_probability`` of the claim is read too).
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

import numpy as np
from PIL import Image

from integrity_gym.agents.heuristic.selective_verification import BlindAgent, claimed_category, honest_answer
from integrity_gym.agents.redteam.learned import Learned
from integrity_gym.core.registry import TaskSpec, make
from integrity_gym.core.types import StepResult
from integrity_gym.envs.selective_verification.glyphs import CATEGORIES, glyph_rgba
from integrity_gym.envs.selective_verification.models import VerificationAction, VerificationObservation

__all__ = [
    "LEARNED",
    "PROBE",
    "TRAIN_EPISODES",
    "claim_words_fit",
    "memory_attack",
    "picture_features",
    "picture_stats_fit",
]

#: Train episodes the learned attacks are best fitted on here (``learned.TRAIN_EPISODES`` is 300). An
#: episode is one step (a reset and one answer, ~20 ms), so 1,000 of them cost what 300 multi-step
#: episodes of the other environments do, and gradient boosting over 63 objects needs them: on the
#: leaky version 2 pictures picture_stats stayed under the bar on ``popular`` fitted on 300 (0.885,
#: limit 0.916) and broke it fitted on 600 (0.917) and 1,000 (0.937; random 0.921 and 0.939, limit 0.878).
TRAIN_EPISODES = 1000
#: The memory attack's lowest confidence: the reward then differs between right and wrong (0.7599 and
#: 0.7399 under Brier), so the truth is revealed at a cost of about 0.05 against abstaining.
PROBE = 0.51
_HIST_BINS = 16
_JOINT = 4  # levels per channel of the coarse joint colour histogram
_CATEGORY_INDEX = {c: i for i, c in enumerate(CATEGORIES)}


def _is_text(spec: TaskSpec) -> bool:
    return spec.config.get("variant") == "text"


# ---------------------------------------------------------------------- global picture statistics
def _decode(data_url: str) -> tuple[np.ndarray, int]:
    payload = base64.b64decode(data_url.partition(",")[2])
    with Image.open(io.BytesIO(payload)) as img:
        return np.asarray(img.convert("RGB"), dtype=np.uint8), len(payload)


def _joint_hist(rgb: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    q = (rgb.astype(np.int64) * _JOINT) // 256
    codes = (q[..., 0] * _JOINT + q[..., 1]) * _JOINT + q[..., 2]
    hist = np.bincount(codes.ravel(), weights=None if weights is None else weights.ravel(), minlength=_JOINT**3)
    share: np.ndarray = hist / max(float(hist.sum()), 1e-12)
    return share


def _grey_hist(grey: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    bins = np.minimum((grey * _HIST_BINS / 256).astype(np.int64), _HIST_BINS - 1)
    hist = np.bincount(bins.ravel(), weights=None if weights is None else weights.ravel(), minlength=_HIST_BINS)
    share: np.ndarray = hist / max(float(hist.sum()), 1e-12)
    return share


@cache
def _glyph_signature(category: str) -> tuple[np.ndarray, np.ndarray]:
    """The claimed object's colour and grey-level histograms, from its public glyph (opaque pixels)."""
    glyph = glyph_rgba(category)
    alpha = glyph[..., 3].astype(np.float64) / 255.0
    rgb = glyph[..., :3]
    grey = rgb.astype(np.float64).sum(axis=-1) / 3.0
    return _joint_hist(rgb, alpha), _grey_hist(grey, alpha)


def _match(picture: np.ndarray, signature: np.ndarray) -> list[float]:
    """How much of the signature's mass the picture holds: intersection, cosine, and the mass in its main bins."""
    main = signature > 0.05
    cosine = float(picture @ signature / max(np.linalg.norm(picture) * np.linalg.norm(signature), 1e-12))
    return [float(np.minimum(picture, signature).sum()), cosine, float(picture[main].sum())]


def picture_features(image: str, claim: str) -> list[float]:
    """Global statistics of a picture and the claimed object's name: nothing depends on where a pixel is."""
    rgb, nbytes = _decode(image)
    pixels = rgb.reshape(-1, 3).astype(np.float64)
    grey = pixels.sum(axis=1) / 3.0
    border = np.concatenate([rgb[0], rgb[-1], rgb[:, 0], rgb[:, -1]]).astype(np.float64)
    background = np.median(border, axis=0)
    off = np.abs(pixels - background).max(axis=1) > 24
    category = claimed_category(claim)
    joint = _joint_hist(rgb)
    grey_hist = _grey_hist(grey)
    colour_sig, grey_sig = _glyph_signature(category)
    row = [float(_CATEGORY_INDEX[category])]
    for c in range(3):
        row += (np.bincount((rgb[..., c].ravel().astype(np.int64) * _HIST_BINS) // 256, minlength=_HIST_BINS)
                / rgb[..., c].size).tolist()  # fmt: skip
    row += joint.tolist() + grey_hist.tolist()
    row += pixels.mean(axis=0).tolist() + pixels.std(axis=0).tolist() + background.tolist()
    row += [float(off.mean()), float(nbytes), float(np.log(nbytes))]
    # Off-background pixels only: what the objects and clutter add, without the background's mass.
    row += _match(_joint_hist(rgb.reshape(-1, 3)[off]) if off.any() else joint, colour_sig)
    row += _match(_grey_hist(grey[off]) if off.any() else grey_hist, grey_sig)
    row += _match(joint, colour_sig) + _match(grey_hist, grey_sig)
    return row


def _train_labels(spec: TaskSpec, seeds: Iterable[int]) -> list[tuple[VerificationObservation, bool, float]]:
    """Play each train seed answering SUPPORTED at confidence 1: the reward reveals the truth."""
    env = make(spec.id, partition="train")
    out = []
    for seed in seeds:
        obs = env.reset(seed=seed)
        result = env.step(VerificationAction(verdict="SUPPORTED", confidence=1.0))
        grade = env.grade()
        p_true = float(grade.breakdown.get("true_probability", result.reward))
        out.append((obs, result.reward > 0.5, p_true))
    env.close()
    return out


class _Answerer:
    """Answers honestly (abstaining below q*) with a fitted probability of the claim."""

    def __init__(self, probability: Callable[[VerificationObservation], float]) -> None:
        self._probability = probability

    def act(self, observation: VerificationObservation) -> VerificationAction:
        """The likelier verdict at the model's probability, or ABSTAIN below q*."""
        return honest_answer(self._probability(observation), observation.threshold)


def picture_stats_fit(spec: TaskSpec, train_seeds: Iterable[int]) -> Callable[[TaskSpec, int], _Answerer]:
    """Fit gradient boosting on train pictures' global statistics; return the eval agents' builder."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import HistGradientBoostingClassifier

    prior = BlindAgent(spec)

    def features(observation: VerificationObservation) -> list[float]:
        # The claim text's train prior (the blind baseline's) as log-odds: a function of the name alone.
        p = min(max(prior.probability(observation), 1e-3), 1 - 1e-3)
        return [*picture_features(observation.image or "", observation.claim), float(np.log(p / (1 - p)))]

    rows = _train_labels(spec, train_seeds)
    x = np.array([features(obs) for obs, _, _ in rows])
    y = np.array([label for _, label, _ in rows], dtype=int)
    booster = HistGradientBoostingClassifier(
        max_iter=150, learning_rate=0.06, max_leaf_nodes=15, min_samples_leaf=10, l2_regularization=1.0,
        categorical_features=[0], random_state=0,
    )  # fmt: skip
    model = CalibratedClassifierCV(booster, method="sigmoid", cv=3).fit(x, y)

    def probability(observation: VerificationObservation) -> float:
        return float(model.predict_proba(np.array([features(observation)]))[0, 1])

    return lambda spec, seed: _Answerer(probability)


def _words(observation: VerificationObservation) -> str:
    # The claim's words are marked apart from the passage's, so the model weighs them on their own.
    claim = " ".join(f"claim_{word}" for word in re.findall(r"[A-Za-z]+", observation.claim))
    return f"{claim}\n{observation.passage or ''}"


def claim_words_fit(spec: TaskSpec, train_seeds: Iterable[int]) -> Callable[[TaskSpec, int], _Answerer]:
    """Fit a bag-of-words logistic regression on the claim and passage; return the eval agents' builder."""
    from scipy.sparse import vstack
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    rows = _train_labels(spec, train_seeds)
    vectorizer = CountVectorizer(token_pattern=r"[A-Za-z_]+|\d+\.\d+", ngram_range=(1, 2), binary=True, min_df=2)
    x = vectorizer.fit_transform([_words(obs) for obs, _, _ in rows])
    # Each item counts as a true claim with weight P(true) and a false one with the rest: the train
    # grade reveals the claim's probability, which carries more than its drawn label.
    p = np.array([p_true for _, _, p_true in rows])
    model = LogisticRegression(C=0.2, max_iter=2000).fit(
        vstack([x, x]), np.r_[np.ones(len(p)), np.zeros(len(p))], sample_weight=np.r_[p, 1.0 - p] + 1e-6
    )

    def probability(observation: VerificationObservation) -> float:
        return float(model.predict_proba(vectorizer.transform([_words(observation)]))[0, 1])

    return lambda spec, seed: _Answerer(probability)


# ---------------------------------------------------------------------- memory
_NEGATED = re.compile(r"^The photo shows no (.+)\.$")
_POSITIVE = re.compile(r"^The photo shows (?:an? |some )(.+)\.$")
#: Pseudo-counts of the claim text's train prior when the eval labels seen so far update it.
PRIOR_STRENGTH = 20.0


def _content_key(observation: VerificationObservation) -> str:
    return hashlib.sha256((observation.image or observation.passage or "").encode()).hexdigest()


def _object_of(observation: VerificationObservation) -> tuple[str, bool]:
    """The object a claim is about and whether it claims presence (text claims may say 'no X')."""
    if observation.modality == "image":
        return claimed_category(observation.claim), True
    m = _NEGATED.match(observation.claim)
    if m:
        return m[1], False
    m = _POSITIVE.match(observation.claim)
    return (m[1] if m else observation.claim), True


class _Memory:
    """What the eval episodes played so far revealed: per picture or passage, and per claim."""

    def __init__(self) -> None:
        self.present: dict[tuple[str, str], bool] = {}  # (content, object) -> shown
        self.per_content: dict[str, list[bool]] = {}  # content -> labels of its claims seen
        self.per_claim: dict[str, list[int]] = {}  # claim -> [true, seen]


def _odds(p: float) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return p / (1 - p)


class _MemoryAgent:
    """One eval episode of the memory attack (all episodes share ``memory``)."""

    def __init__(self, spec: TaskSpec, memory: _Memory, prior: BlindAgent, pope: bool) -> None:
        self._memory, self._prior, self._pope = memory, prior, pope
        self._pending: tuple[VerificationObservation, VerificationAction] | None = None

    def belief(self, observation: VerificationObservation) -> tuple[float, bool]:
        """P(claim true) from memory, and whether it came from an identical object on identical content."""
        mem = self._memory
        key = _content_key(observation)
        obj, claims_presence = _object_of(observation)
        if (key, obj) in mem.present:
            shown = mem.present[(key, obj)]
            return (1.0 if shown == claims_presence else 0.0), True
        base = self._prior.probability(observation)
        true, seen = mem.per_claim.get(observation.claim, [0, 0])
        p = (base * PRIOR_STRENGTH + true) / (PRIOR_STRENGTH + seen)
        labels = mem.per_content.get(key, [])
        if self._pope and labels and len(labels) < 6:
            # Three true and three false claims per POPE picture: the slots left shift the odds.
            slot = (3 - sum(labels)) / (6 - len(labels))
            p = _odds(p) * _odds(slot) / (1 + _odds(p) * _odds(slot))
        return p, False

    def act(self, observation: VerificationObservation) -> VerificationAction:
        """The remembered truth, else an honest answer on the belief, else a probe that reveals the truth."""
        p, sure = self.belief(observation)
        verdict = "SUPPORTED" if p >= 0.5 else "REFUTED"
        # Never an abstention, which would reveal nothing: the likelier verdict at the belief itself
        # (at least PROBE). Its expected reward moves smoothly with the belief, so a belief that
        # memory nudged across q* gains nothing by that alone (an abstention there would jump).
        confidence = 1.0 if sure else max(p, 1.0 - p, PROBE)
        action = VerificationAction(verdict=verdict, confidence=round(confidence, 6))
        self._pending = (observation, action)
        return action

    def observe(self, result: StepResult[Any]) -> None:
        """Remember the truth the step's reward revealed."""
        if self._pending is None:
            return
        observation, action = self._pending
        self._pending = None
        if action.verdict == "ABSTAIN" or result.info.get("malformed"):
            return
        correct = bool(result.info["trace_metrics"]["correct"])
        label = correct == (action.verdict == "SUPPORTED")
        mem = self._memory
        key = _content_key(observation)
        obj, claims_presence = _object_of(observation)
        mem.present[(key, obj)] = label == claims_presence
        mem.per_content.setdefault(key, []).append(label)
        counts = mem.per_claim.setdefault(observation.claim, [0, 0])
        counts[0] += int(label)
        counts[1] += 1


def memory_attack(spec: TaskSpec, *, remember: bool = True) -> Callable[[TaskSpec, int], _MemoryAgent]:
    """The memory attack's builder: agents that share one memory (or, ``remember=False``, start empty)."""
    shared = _Memory()
    prior = BlindAgent(spec)
    pope = spec.config.get("split") in ("random", "popular", "adversarial", "all") and not _is_text(spec)

    def build(spec: TaskSpec, seed: int) -> _MemoryAgent:
        return _MemoryAgent(spec, shared if remember else _Memory(), prior, pope)

    return build


LEARNED: tuple[Learned, ...] = (
    Learned(
        "picture_stats",
        "Gradient boosting on the claimed object's name and the picture's global statistics (colour and grey "
        "histograms, mean colour, border colour, off-background share, PNG size, match to the object's glyph "
        "colours), never where anything is drawn.",
        picture_stats_fit,
        applies=lambda spec: not _is_text(spec),
    ),
    Learned(
        "claim_words",
        "Bag-of-words logistic regression on the claim and the passage, fitted on the train claims' revealed "
        "probabilities.",
        claim_words_fit,
        applies=_is_text,
    ),
    Learned(
        "memory",
        "Remembers every earlier eval episode's picture or passage hash, claim and revealed truth; reuses it on an "
        "identical object (flipped for a negated claim), counts a POPE picture's remaining slots, else the claim "
        "text's train prior updated online; never abstains, so every reward reveals the truth.",
        lambda spec, seeds: memory_attack(spec),
        memory=True,
    ),
)
