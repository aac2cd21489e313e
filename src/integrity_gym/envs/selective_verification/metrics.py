"""Dataset-level calibration and selective-prediction metrics, exact and order-independent.

All functions take confidences (probability that the verdict is correct) and correctness of the
*answered* items, plus optional non-negative weights (integer counts: a bootstrap resample is a
reweighting, so the sort is done once). Items with equal confidence form a *tie group*; since
nothing distinguishes them, every metric treats a tie group as a whole:

* ``ece``: 15 bins of equal mass over the items sorted by confidence; a tie group that straddles
  a bin edge is split fractionally between the bins, each share carrying the group's accuracy.
* ``aurc``: area under the risk-coverage curve, averaged over every order of the tied items. The
  expected number of errors among the first ``j`` items of a tie group of size ``n`` with ``e``
  errors is ``j e / n``, so the expectation has a closed form in harmonic numbers.
* ``e_aurc``: ``aurc`` minus the area of a perfect ranking (all errors last) with the same errors.
* ``smooth_ece``: the smooth ECE of Błasiok and Nakkiran (2023): the L1 norm of the
  kernel-smoothed residual with a reflected Gaussian kernel whose width is the fixed point
  ``smECE(sigma) = sigma``, computed on a 512-point grid.

An undefined metric (nothing answered) is ``None``, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import digamma

FloatArray = NDArray[np.float64]
ECE_BINS = 15
_EULER = 0.5772156649015329


def _harmonic(x: FloatArray) -> FloatArray:
    """Harmonic numbers H(x) = sum_{i<=x} 1/i, extended to reals (H(0) = 0)."""
    out: FloatArray = digamma(np.asarray(x, dtype=np.float64) + 1.0) + _EULER
    return out


def _floats(values: ArrayLike) -> FloatArray:
    """``values`` as a flat float64 array (booleans and integers included)."""
    out: FloatArray = np.asarray(values, dtype=np.float64).ravel()
    return out


@dataclass(frozen=True)
class TieGroups:
    """Answered items grouped by equal confidence, ascending; ``index`` maps items to groups."""

    confidence: FloatArray
    index: NDArray[np.intp]
    correct: FloatArray  # per item, 0/1

    @classmethod
    def build(cls, confidence: ArrayLike, correct: ArrayLike) -> TieGroups:
        """Group items by confidence (validated to lie in [0, 1])."""
        conf = _floats(confidence)
        corr = _floats(correct)
        if conf.shape != corr.shape:
            raise ValueError(f"confidence has {conf.size} items but correct has {corr.size}")
        if conf.size and (not np.all(np.isfinite(conf)) or conf.min() < 0 or conf.max() > 1):
            raise ValueError("confidences must be finite and in [0, 1]")
        if corr.size and not np.all((corr == 0) | (corr == 1)):
            raise ValueError("correct must hold 0/1 (or booleans)")
        uniq, index = np.unique(conf, return_inverse=True)
        return cls(uniq, index.ravel(), corr)

    def totals(self, weight: FloatArray | None = None) -> tuple[FloatArray, FloatArray]:
        """Return per-group (mass, correct mass) under ``weight`` (default 1 per item)."""
        g = self.confidence.size
        w = np.ones(self.index.size) if weight is None else weight
        return (
            np.bincount(self.index, weights=w, minlength=g).astype(np.float64),
            np.bincount(self.index, weights=w * self.correct, minlength=g).astype(np.float64),
        )


def _ece(groups: TieGroups, mass: FloatArray, hits: FloatArray, bins: int) -> float | None:
    total = mass.sum()
    if total <= 0:
        return None
    keep = mass > 0
    conf, mass, hits = groups.confidence[keep], mass[keep], hits[keep]
    end = np.cumsum(mass)
    start = end - mass
    edges = np.linspace(0.0, total, bins + 1)
    overlap = np.clip(
        np.minimum(end[:, None], edges[None, 1:]) - np.maximum(start[:, None], edges[None, :-1]), 0.0, None
    )
    gap = hits / mass - conf  # accuracy minus confidence of each group
    return float(np.abs(overlap.T @ gap).sum() / total)


def _aurc(mass: FloatArray, hits: FloatArray) -> tuple[float, float] | None:
    """Return (AURC, E-AURC) with tie orders averaged out."""
    total = mass.sum()
    if total <= 0:
        return None
    keep = mass > 0
    n, e = mass[keep][::-1], (mass - hits)[keep][::-1]  # most confident first
    s = np.cumsum(n) - n
    before = np.cumsum(e) - e
    dh = _harmonic(s + n) - _harmonic(s)
    area = before * dh + (e / n) * (n - s * dh)
    aurc = float(area.sum() / total)
    errors = float(e.sum())
    good = total - errors
    optimal = (errors - good * float(_harmonic(np.array(total)) - _harmonic(np.array(good)))) / total
    return aurc, float(aurc - optimal)


def ece(confidence: ArrayLike, correct: ArrayLike, bins: int = ECE_BINS) -> float | None:
    """Return the equal-mass, tie-aware expected calibration error (``None`` if no items)."""
    if bins < 1:
        raise ValueError(f"bins must be >= 1, got {bins}")
    groups = TieGroups.build(confidence, correct)
    return _ece(groups, *groups.totals(), bins)


def aurc(confidence: ArrayLike, correct: ArrayLike) -> float | None:
    """Return the area under the risk-coverage curve, expected over tie orders."""
    groups = TieGroups.build(confidence, correct)
    out = _aurc(*groups.totals())
    return None if out is None else out[0]


def e_aurc(confidence: ArrayLike, correct: ArrayLike) -> float | None:
    """Return AURC minus the AURC of a perfect ranking with the same errors."""
    groups = TieGroups.build(confidence, correct)
    out = _aurc(*groups.totals())
    return None if out is None else out[1]


def brier(confidence: ArrayLike, correct: ArrayLike) -> float | None:
    """Return the mean squared gap between confidence and correctness (``None`` if no items)."""
    conf = _floats(confidence)
    corr = _floats(correct)
    return float(np.mean((conf - corr) ** 2)) if conf.size else None


_GRID = 512


def _reflected_kernel(sigma: float) -> FloatArray:
    t = (np.arange(_GRID) + 0.5) / _GRID
    x = t
    d = t[:, None] - x[None, :]
    k = np.exp(-0.5 * (d / sigma) ** 2)
    k += np.exp(-0.5 * ((t[:, None] + x[None, :]) / sigma) ** 2)
    k += np.exp(-0.5 * ((t[:, None] - (2.0 - x[None, :])) / sigma) ** 2)
    out: FloatArray = k / (sigma * np.sqrt(2 * np.pi))
    return out


def smooth_ece(confidence: ArrayLike, correct: ArrayLike, weight: ArrayLike | None = None) -> float | None:
    """Return the smooth ECE (Błasiok & Nakkiran 2023) with its fixed-point bandwidth."""
    conf = _floats(confidence)
    corr = _floats(correct)
    w = np.ones_like(conf) if weight is None else _floats(weight)
    total = w.sum()
    if conf.size == 0 or total <= 0:
        return None
    cell = np.minimum((conf * _GRID).astype(np.intp), _GRID - 1)
    residual = np.bincount(cell, weights=w * (corr - conf), minlength=_GRID) / total

    def sm(sigma: float) -> float:
        return float(np.abs(_reflected_kernel(sigma) @ residual).sum() / _GRID)

    lo, hi = 1e-4, 1.0
    if sm(lo) <= lo:
        return sm(lo)
    for _ in range(40):
        mid = (lo * hi) ** 0.5
        if sm(mid) > mid:
            lo = mid
        else:
            hi = mid
    return sm(hi)


@dataclass(frozen=True)
class Selective:
    """Per-item outcomes of a set of episodes, arranged for fast (re)weighted metrics."""

    answered: FloatArray
    correct: FloatArray
    confidence: FloatArray
    reward: FloatArray
    groups: TieGroups  # over answered items only
    answered_index: NDArray[np.intp]

    @classmethod
    def build(cls, answered: ArrayLike, correct: ArrayLike, confidence: ArrayLike, reward: ArrayLike) -> Selective:
        """Arrange per-episode values (``correct``/``confidence`` are ignored where not answered)."""
        ans = _floats(answered)
        corr = _floats(correct)
        conf = _floats(confidence)
        rew = _floats(reward)
        if not ans.size == corr.size == conf.size == rew.size:
            raise ValueError("answered, correct, confidence and reward must have the same length")
        idx = np.flatnonzero(ans > 0)
        return cls(ans, corr, conf, rew, TieGroups.build(conf[idx], corr[idx]), idx)

    def metrics(self, weight: FloatArray | None = None) -> dict[str, float | None]:
        """Return the dataset metrics under ``weight`` (default: every episode once)."""
        w = np.ones_like(self.answered) if weight is None else weight
        n = w.sum()
        if n <= 0:
            raise ValueError("no episodes to summarise")
        answered = float((w * self.answered).sum())
        wa = w[self.answered_index]
        mass, hits = self.groups.totals(wa)
        curve = _aurc(mass, hits)
        conf = self.confidence[self.answered_index]
        corr = self.correct[self.answered_index]
        return {
            "coverage": float(answered / n),
            "accuracy": float(hits.sum() / answered) if answered else None,
            "mean_confidence": float((wa * conf).sum() / answered) if answered else None,
            "ece": _ece(self.groups, mass, hits, ECE_BINS),
            "brier": float((wa * (conf - corr) ** 2).sum() / answered) if answered else None,
            "aurc": None if curve is None else curve[0],
            "e_aurc": None if curve is None else curve[1],
            "mean_reward": float((w * self.reward).sum() / n),
        }


#: Threshold-task figures ``summarize`` gives a 95% bootstrap interval for (those a task defines).
RISK_INTERVAL_KEYS = ("utility", "integrated_utility", "tracking_error", "decision_regret", "calibration_regret")


@dataclass(frozen=True)
class RiskSet:
    """Per-episode outcomes of a threshold task, for its threshold figures under any weighting.

    ``bins`` is each episode's threshold bin (``risk.ThresholdRule.bin``). The ``text`` inputs need
    the claim's exact probability and are ``None`` elsewhere:

    * ``skill``: the mean grade's gain over always abstaining (which grades each item's ``t``) towards
      always sure and right, ``sum(g - a) / sum(1 - a)``; ``blind_skill`` the same of the claim
      text's prior, ``skill_over_blind`` the difference;
    * ``utility``: the mean utility (+1 right, -t/(1-t) wrong, 0 abstaining): the task's skill;
    * ``integrated_utility``: the mean utility of each threshold bin, averaged over the bins, i.e.
      the utility integrated over the published range of thresholds (each bin weighs the same,
      whatever the number of its episodes);
    * ``tracking_error`` (text): the mean over bins of |abstain rate - the Bayes policy's abstain
      rate| (the Bayes policy abstains exactly when the likelier verdict's probability is below t);
    * ``decision_regret`` (text): the mean expected utility the agent's decisions lose to the Bayes
      policy's, confidence set aside (each decision scored with a truthful confidence);
    * ``calibration_regret`` (text): mean (p - q)² over answered episodes, ``p`` the stated and ``q``
      the true probability that the verdict is correct: the Brier score's excess over the truth's;
    * ``expected_utility`` and ``integrated_expected_utility`` (text): the same as the first two with
      the expected utility under the known probability in place of the realised one.

    Bins without an episode (under a resample's weights) are left out of the means over bins.
    """

    grade: FloatArray
    abstain_grade: FloatArray
    blind_grade: FloatArray
    bins: NDArray[np.intp]
    utility: FloatArray
    abstained: FloatArray
    answered: FloatArray
    bayes_abstains: FloatArray | None
    decision_gap: FloatArray | None
    calibration_error: FloatArray | None
    expected_utility: FloatArray | None

    @classmethod
    def build(
        cls,
        *,
        grade: ArrayLike,
        abstain_grade: ArrayLike,
        blind_grade: ArrayLike,
        bins: ArrayLike,
        utility: ArrayLike,
        abstained: ArrayLike,
        answered: ArrayLike,
        bayes_abstains: ArrayLike | None = None,
        decision_gap: ArrayLike | None = None,
        calibration_error: ArrayLike | None = None,
        expected_utility: ArrayLike | None = None,
    ) -> RiskSet:
        """Arrange per-episode values; the text inputs come all together or not at all."""
        text = (bayes_abstains, decision_gap, calibration_error, expected_utility)
        if any(x is None for x in text) and not all(x is None for x in text):
            raise ValueError(
                "the text figures need bayes_abstains, decision_gap, calibration_error and expected_utility"
            )
        b = _floats(bins)
        if b.size and (b.min() < 0 or not np.all(b == np.round(b))):
            raise ValueError("bins must be non-negative integers")
        arrays = [_floats(x) for x in (grade, abstain_grade, blind_grade)]
        if arrays[1].size and arrays[1].max() >= 1.0:
            raise ValueError("abstaining must grade below 1 on every item")
        arrays += [_floats(x) for x in (utility, abstained, answered)]
        extra = [None if x is None else _floats(x) for x in text]
        if any(a.size != b.size for a in [*arrays, *[e for e in extra if e is not None]]):
            raise ValueError("every per-episode input must have one value per episode")
        g, ag, bg, *rest = arrays
        return cls(g, ag, bg, b.astype(np.intp), *rest, *extra)

    @property
    def keys(self) -> tuple[str, ...]:
        """The figures this set defines."""
        base = ("skill", "blind_skill", "skill_over_blind", "utility", "integrated_utility")
        if self.bayes_abstains is None:
            return base
        return (*base, "tracking_error", "decision_regret", "calibration_regret", "expected_utility",
                "integrated_expected_utility")  # fmt: skip

    def _per_bin(self, weight: FloatArray, values: FloatArray) -> tuple[FloatArray, NDArray[np.bool_]]:
        mass = np.bincount(self.bins, weights=weight)
        sums = np.bincount(self.bins, weights=weight * values, minlength=mass.size)
        filled = mass > 0
        return np.divide(sums, mass, out=np.zeros_like(sums), where=filled), filled

    def metrics(self, weight: FloatArray | None = None) -> dict[str, float | None]:
        """The threshold figures under ``weight`` (default: every episode once)."""
        w = np.ones_like(self.utility) if weight is None else weight
        n = w.sum()
        if n <= 0:
            raise ValueError("no episodes to summarise")
        util, filled = self._per_bin(w, self.utility)
        room = float((w * (1.0 - self.abstain_grade)).sum())
        own = float((w * (self.grade - self.abstain_grade)).sum()) / room
        prior = float((w * (self.blind_grade - self.abstain_grade)).sum()) / room
        out: dict[str, float | None] = {
            "skill": own,
            "blind_skill": prior,
            "skill_over_blind": own - prior,
            "utility": float((w * self.utility).sum() / n),
            "integrated_utility": float(util[filled].mean()),
        }
        if self.bayes_abstains is None:
            return out
        assert self.decision_gap is not None and self.calibration_error is not None
        assert self.expected_utility is not None
        rate, _ = self._per_bin(w, self.abstained)
        bayes, _ = self._per_bin(w, self.bayes_abstains)
        expected, _ = self._per_bin(w, self.expected_utility)
        answered = float((w * self.answered).sum())
        out |= {
            "tracking_error": float(np.abs(rate - bayes)[filled].mean()),
            "decision_regret": float((w * self.decision_gap).sum() / n),
            "calibration_regret": (
                float((w * self.answered * self.calibration_error).sum() / answered) if answered else None
            ),
            "expected_utility": float((w * self.expected_utility).sum() / n),
            "integrated_expected_utility": float(expected[filled].mean()),
        }
        return out
