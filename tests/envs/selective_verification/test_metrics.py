import itertools
from fractions import Fraction

import numpy as np
import pytest

from integrity_gym.envs.selective_verification.metrics import Selective, aurc, brier, e_aurc, ece, smooth_ece

PINNED_SMOOTH_ECE = 0.2749848626030628
PINNED_SMOOTH_ECE_AT_ONE = 0.28743968383516644


def reference_ece(conf: np.ndarray, correct: np.ndarray, bins: int = 15) -> float:
    """Independent ECE: every item becomes `bins` unit slices carrying its tie group's accuracy."""
    group_acc = {c: Fraction(int(correct[conf == c].sum()), int((conf == c).sum())) for c in set(conf.tolist())}
    units = sorted((Fraction(c), group_acc[c]) for c in conf.tolist() for _ in range(bins))
    per_bin = len(conf)
    total = Fraction(0)
    for b in range(bins):
        chunk = units[b * per_bin : (b + 1) * per_bin]
        total += abs(sum(a for _, a in chunk) - sum(c for c, _ in chunk)) / len(units)
    return float(total)


def reference_aurc(conf: np.ndarray, correct: np.ndarray) -> float:
    """Independent AURC: the mean over every ordering consistent with the confidences."""
    values = []
    for perm in itertools.permutations(range(len(conf))):
        if all(conf[perm[i]] >= conf[perm[i + 1]] for i in range(len(perm) - 1)):
            errs = np.cumsum(1 - correct[list(perm)])
            values.append(np.mean(errs / np.arange(1, len(conf) + 1)))
    return float(np.mean(values))


@pytest.mark.parametrize("seed", range(6))
def test_ece_and_aurc_match_independent_computations(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 7
    conf = np.round(rng.choice([0.5, 0.6, 0.7, 0.8, 0.9, 1.0], n), 2)
    correct = (rng.random(n) < conf).astype(float)
    assert ece(conf, correct) == pytest.approx(reference_ece(conf, correct), abs=1e-12)
    assert aurc(conf, correct) == pytest.approx(reference_aurc(conf, correct), abs=1e-12)


def test_metrics_do_not_change_when_inputs_are_shuffled() -> None:
    rng = np.random.default_rng(1)
    n = 2000
    conf = np.round(rng.uniform(0.5, 1.0, n), 1)  # heavy ties
    correct = (rng.random(n) < conf).astype(float)
    base = (ece(conf, correct), aurc(conf, correct), e_aurc(conf, correct), smooth_ece(conf, correct))
    for _ in range(3):
        p = rng.permutation(n)
        c, y = conf[p], correct[p]
        again = (ece(c, y), aurc(c, y), e_aurc(c, y), smooth_ece(c, y))
        assert again == pytest.approx(base, abs=1e-12)


def test_perfect_ranking_has_zero_excess_area_and_calibrated_sample_small_ece() -> None:
    conf = np.array([0.9, 0.8, 0.7, 0.6, 0.55])
    correct = np.array([1, 1, 1, 0, 0], dtype=float)
    assert e_aurc(conf, correct) == pytest.approx(0.0, abs=1e-12)
    assert aurc(conf, correct) == pytest.approx(np.mean([0, 0, 0, 1 / 4, 2 / 5]))
    rng = np.random.default_rng(2)
    c = rng.uniform(0.5, 1.0, 50_000)
    y = (rng.random(50_000) < c).astype(float)
    assert ece(c, y) < 0.01 and smooth_ece(c, y) < 0.02
    assert smooth_ece(np.full(1000, 0.95), np.r_[np.ones(600), np.zeros(400)]) == pytest.approx(0.35, abs=0.03)


def test_undefined_metrics_are_none() -> None:
    for fn in (ece, aurc, e_aurc, brier, smooth_ece):
        assert fn([], []) is None
    sel = Selective.build([0, 0], [0, 0], [0, 0], [0.8, 0.8])
    metrics = sel.metrics()
    assert metrics["accuracy"] is None and metrics["ece"] is None and metrics["coverage"] == 0.0
    assert metrics["mean_reward"] == pytest.approx(0.8)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match=r"confidences must be finite and in \[0, 1\]"):
        ece([0.5, 1.2], [1, 0])
    with pytest.raises(ValueError, match="confidence has 1 items but correct has 2"):
        aurc([0.5], [1, 0])
    with pytest.raises(ValueError, match=r"^correct must hold 0/1 \(or booleans\)$"):
        ece([0.5], [0.3])


def test_matches_scikit_learn_brier_when_available() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(4)
    conf = rng.uniform(0.5, 1, 100)
    correct = (rng.random(100) < conf).astype(int)
    assert brier(conf, correct) == pytest.approx(metrics.brier_score_loss(correct, conf))


def test_more_bad_inputs_are_refused_with_their_reason() -> None:
    for conf in ([0.5, float("nan")], [1.5], [-0.25, 0.5]):
        with pytest.raises(ValueError, match=r"confidences must be finite and in \[0, 1\]"):
            ece(conf, [1] * len(conf))
    with pytest.raises(ValueError, match="answered, correct, confidence and reward must have the same length"):
        Selective.build([1, 1], [1], [0.9, 0.9], [1, 1])
    with pytest.raises(ValueError, match=r"^no episodes to summarise$"):
        Selective.build([1], [1], [0.9], [1]).metrics(np.zeros(1))


def test_weighted_metrics_of_a_small_sample() -> None:
    sel = Selective.build([1, 1, 0, 1], [1, 0, 0, 1], [0.9, 0.6, 0.0, 0.7], [0.99, 0.64, 0.8, 0.91])
    metrics = sel.metrics()
    assert metrics["brier"] == pytest.approx((0.01 + 0.36 + 0.09) / 3)
    assert metrics["mean_confidence"] == pytest.approx((0.9 + 0.6 + 0.7) / 3)
    # Weights are counts: the second episode drawn twice.
    twice = sel.metrics(np.array([1.0, 2.0, 1.0, 1.0]))
    assert twice["brier"] == pytest.approx((0.01 + 2 * 0.36 + 0.09) / 4)
    assert Selective.build([0], [0], [0], [0.8]).metrics()["mean_confidence"] is None


def test_smooth_ece_of_one_item_and_a_pinned_value() -> None:
    assert smooth_ece([0.7], [1]) == pytest.approx(smooth_ece([0.7, 0.7], [1, 1]))
    # Regression pin (cell-centred grid of 512 points, reflected Gaussian kernel, fixed-point bandwidth).
    assert smooth_ece([0.55, 0.7, 0.9, 0.95], [0, 1, 1, 0]) == pytest.approx(PINNED_SMOOTH_ECE, abs=1e-12)


def test_booleans_and_integers_are_numbers() -> None:
    assert brier([True, False], [True, True]) == 0.5
    assert brier([1, 0], [1, 1]) == 0.5
    assert ece([True, True], [True, False]) == ece([1.0, 1.0], [1.0, 0.0])


def test_smooth_ece_weights_are_counts_and_a_sure_answer_lands_in_the_last_cell() -> None:
    assert smooth_ece([0.6, 0.9], [1, 0], weight=[2, 1]) == pytest.approx(smooth_ece([0.6, 0.6, 0.9], [1, 1, 0]))
    assert smooth_ece([0.6], [1], weight=[0]) is None
    assert smooth_ece([0.55, 0.7, 0.9, 1.0], [0, 1, 1, 0]) == pytest.approx(PINNED_SMOOTH_ECE_AT_ONE, abs=1e-12)


def test_accuracy_and_both_curve_figures_of_a_small_sample() -> None:
    sel = Selective.build([1, 1, 0, 1], [1, 0, 0, 1], [0.9, 0.6, 0.0, 0.7], [0.99, 0.64, 0.8, 0.91])
    metrics = sel.metrics()
    assert metrics["accuracy"] == pytest.approx(2 / 3) and metrics["coverage"] == pytest.approx(0.75)
    assert metrics["aurc"] == pytest.approx(aurc([0.9, 0.6, 0.7], [1, 0, 1]))
    assert metrics["e_aurc"] == pytest.approx(e_aurc([0.9, 0.6, 0.7], [1, 0, 1]))
    assert metrics["aurc"] != metrics["e_aurc"]


def test_ece_needs_one_bin_at_least() -> None:
    assert ece([0.9, 0.6], [1, 0], bins=1) == pytest.approx(abs((0.9 + 0.6) / 2 - 0.5))
    with pytest.raises(ValueError, match=r"^bins must be >= 1, got 0$"):
        ece([0.9], [1], bins=0)


def test_edges_of_the_metric_inputs() -> None:
    assert aurc([0.0, 0.5], [0, 1]) is not None  # a confidence of 0 is a confidence
    assert aurc([0.7], [0]) == pytest.approx(1.0) and ece([0.7], [0]) == pytest.approx(0.7)  # one item
    assert Selective.build([0, 0], [0, 0], [0, 0], [0.8, 0.8]).metrics()["brier"] is None


def test_weights_count_episodes_in_every_figure() -> None:
    """Weight 2 on an episode gives the figures of the sample with that episode twice."""
    sample = ([1, 1, 1, 1], [1, 0, 0, 1], [0.9, 0.6, 0.4, 0.7], [0.99, 0.64, 0.84, 0.91])
    twice = Selective.build(*sample).metrics(np.array([1.0, 2.0, 1.0, 1.0]))
    doubled = Selective.build(*([v[0], v[1], v[1], v[2], v[3]] for v in sample)).metrics()
    for key in ("accuracy", "ece", "aurc", "e_aurc", "brier", "mean_reward"):
        assert twice[key] == pytest.approx(doubled[key]), key
