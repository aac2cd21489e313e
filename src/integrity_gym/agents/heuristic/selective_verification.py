"""Baselines of selective_verification: a vision heuristic, a blind prior and the exact posterior.

* ``HeuristicAgent`` looks at the picture: it searches it for the claimed object by fitting the
  committed glyph's grey-level shading and silhouette to every window, at several sizes and
  rotations (objects are drawn in palettes of their own, so colour says nothing; see
  ``match_score``), and maps the best match score to a probability with an isotonic calibration table
  fitted on the task's *train* partition (``data/heuristic_calibration.json``). On the text
  variant it reads the table but ignores the known facts (the object's overall rate).
* ``BlindAgent`` never looks: P(claim true | claim text), fitted on the train partition.
* ``PosteriorAgent`` (text variant) computes the exact posterior from the passage.

All three answer honestly: the verdict with the larger probability, that probability as the
confidence, and ABSTAIN when it is below the threshold stated in the observation (the flat payoff's
q*, or on a threshold task the item's own risk threshold t, so they track it as the Bayes policy does).

Refit the calibration table after changing the generator or the matcher::

    python -m integrity_gym.agents.heuristic.selective_verification --fit [--items 600]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import itertools
import json
import re
import threading
from collections import OrderedDict
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image
from scipy.fft import next_fast_len
from scipy.optimize import isotonic_regression

from integrity_gym.core.registry import TaskSpec
from integrity_gym.envs.selective_verification import glyphs
from integrity_gym.envs.selective_verification.env import VerificationConfig, blind_prior, source_for
from integrity_gym.envs.selective_verification.generator import png_bytes
from integrity_gym.envs.selective_verification.models import VerificationAction, VerificationObservation
from integrity_gym.envs.selective_verification.textgen import posterior_from_passage

CALIBRATION_PATH = Path(glyphs.__file__).parent / "data" / "heuristic_calibration.json"
_CLAIM = re.compile(r"^There (?:is an?|are) (.+) in the image\.$")
#: Template sizes as fractions of the picture side, and rotations in degrees.
_SIZES = (0.14, 0.17, 0.2, 0.23, 0.27, 0.31, 0.36)
_ANGLES = (0.0, -14.0, 14.0, -28.0, 28.0)
#: Pictures are matched at half resolution (speed; glyphs are large).
_DOWNSCALE = 2
#: Width in (half-resolution) pixels of the surround a glyph's silhouette is told apart from.
_RING = 2
#: Grey-level spread (on 0..1) below which a window counts as flat: its fit is shrunk towards 0.
_FLAT = 4 / 255


def honest_answer(p_true: float, q_star: float) -> VerificationAction:
    """Answer with the likelier verdict and its probability, or ABSTAIN below ``q_star``."""
    confidence = max(p_true, 1.0 - p_true)
    if confidence < q_star:
        return VerificationAction(verdict="ABSTAIN")
    verdict = "SUPPORTED" if p_true >= 0.5 else "REFUTED"
    return VerificationAction.model_validate({"verdict": verdict, "confidence": round(confidence, 6)})


def decode_image(data_url: str) -> np.ndarray:
    """Return the picture of a ``data:image/png;base64,...`` URL as a float RGB array in [0, 1]."""
    _, _, payload = data_url.partition(",")
    with Image.open(io.BytesIO(base64.b64decode(payload))) as img:
        return np.asarray(img.convert("RGB"), dtype=np.float64) / 255.0


def claimed_category(claim: str) -> str:
    """Return the object an image claim is about."""
    m = _CLAIM.match(claim.strip())
    if not m:
        raise ValueError(f"cannot read the object of the claim {claim!r}")
    return m.group(1)


def _dilate(mask: np.ndarray, steps: int) -> np.ndarray:
    """Grow a boolean mask by ``steps`` pixels through its four neighbours (exact, integer-free)."""
    out = mask.copy()
    for _ in range(steps):
        grown = out.copy()
        grown[1:] |= out[:-1]
        grown[:-1] |= out[1:]
        grown[:, 1:] |= out[:, :-1]
        grown[:, :-1] |= out[:, 1:]
        out = grown
    return out


@cache
def _templates(category: str, side: int) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]:
    """Return (zero-mean grey template, silhouette, surround) triples of ``category`` for a ``side``-px picture.

    The glyph is scaled and rotated by the scenes' own IEEE-exact helpers (``glyphs.glyph_variant``),
    not Pillow's resampling, so the templates have the same bits with every supported Pillow and
    numpy. The silhouette is the variant's opaque pixels (alpha >= 128), where the grey level is
    un-premultiplied; the surround is the ``_RING`` pixels just outside it. Grey levels, not
    colours: pictures draw every object's shading in a palette of its own (``glyphs.tinted``), an
    affine map of the grey level, which the fit in ``match_score`` ignores.
    """
    out = []
    for frac in _SIZES:
        size = max(4, round(side * frac / _DOWNSCALE))
        for angle in _ANGLES:
            variant = np.pad(
                glyphs.glyph_variant(category, size, angle).astype(np.float64), ((_RING,) * 2,) * 2 + ((0, 0),)
            )
            alpha = variant[..., 3]
            inside = alpha >= 128
            surround = _dilate(inside, _RING) & ~inside
            grey = glyphs.shading(variant) / np.maximum(alpha, 1.0) * inside
            mean = grey.sum() / inside.sum()
            out.append(((grey - mean) * inside, inside.astype(np.float64), surround.astype(np.float64)))
    return tuple(out)


@cache
def _template_spectra(category: str, side: int, shape: tuple[int, int]) -> tuple[tuple[Any, ...], ...]:
    """Return, per template, the spectra of its flipped grey levels, silhouette and surround at FFT size ``shape``."""
    out = []
    for tmpl, inside, surround in _templates(category, side):
        spectra = tuple(np.fft.rfft2(a[::-1, ::-1], s=shape) for a in (tmpl, inside, surround))
        out.append((*spectra, inside.shape, inside.sum(), surround.sum(), float((tmpl**2).sum())))
    return tuple(out)


def match_score(picture: np.ndarray, category: str) -> float:
    """Return how well ``category``'s glyph explains the best window of ``picture`` (0 to 1).

    In each window the grey levels are fitted by the glyph's shading (any brightness and positive
    contrast) inside its silhouette and by one flat level on the surround; the score is the share
    of the window's grey-level variance that fit explains, shrunk towards 0 on nearly flat windows.
    A glyph drawn in any palette on any background scores near 1 where it is; its shape counts as
    well as its shading. Every window's sums come from one FFT of the picture and of its squares.
    """
    small = picture[::_DOWNSCALE, ::_DOWNSCALE] if _DOWNSCALE > 1 else picture
    grey = (small[..., 0] + small[..., 1] + small[..., 2]) / 3.0
    h, w = grey.shape
    side = max(picture.shape[:2])
    biggest = (
        max(m.shape[0] for _, m, _ in _templates(category, side)),
        max(m.shape[1] for _, m, _ in _templates(category, side)),
    )
    shape = (next_fast_len(h + biggest[0] - 1, real=True), next_fast_len(w + biggest[1] - 1, real=True))
    img = np.fft.rfft2(grey, s=shape)
    img_sq = np.fft.rfft2(grey**2, s=shape)
    best = -1.0
    for t_spec, in_spec, out_spec, (th, tw), n_in, n_out, t_var in _template_spectra(category, side, shape):
        if th > h or tw > w:
            continue
        valid = (slice(th - 1, h), slice(tw - 1, w))

        def window(spectrum: Any, of: Any = img, valid: tuple[slice, slice] = valid) -> np.ndarray:
            summed: np.ndarray = np.fft.irfft2(of * spectrum, s=shape)[valid]
            return summed

        cross = np.maximum(window(t_spec), 0.0)  # a negative slope (an inverted glyph) earns nothing
        s_in, q_in = window(in_spec), window(in_spec, img_sq)
        s_out, q_out = window(out_spec), window(out_spec, img_sq)
        total = q_in + q_out - (s_in + s_out) ** 2 / (n_in + n_out)
        residual = (q_in - s_in * s_in / n_in - cross * cross / t_var) + (q_out - s_out * s_out / n_out)
        explained = (total - residual) / (total + (n_in + n_out) * _FLAT**2)
        best = max(best, float(explained.max()))
    # numpy's FFT may differ between releases in the last bits; rounding keeps the score, and the
    # answer read from it, the same on every supported install except on a rounding boundary.
    return round(best, 9)


#: Match scores kept per process, by (SHA-256 of the picture's data URL, category): the red team and
#: the audit play the heuristic's belief under several policies on the same pictures.
_SCORES: OrderedDict[tuple[str, str], float] = OrderedDict()
_SCORES_LOCK = threading.Lock()
_SCORES_KEPT = 4096


def picture_score(data_url: str, category: str) -> float:
    """``match_score`` of a picture given as a data URL, remembered for the pictures seen last."""
    key = (hashlib.sha256(data_url.encode()).hexdigest(), category)
    with _SCORES_LOCK:
        if key in _SCORES:
            _SCORES.move_to_end(key)
            return _SCORES[key]
    found = match_score(decode_image(data_url), category)
    with _SCORES_LOCK:
        _SCORES[key] = found
        while len(_SCORES) > _SCORES_KEPT:
            _SCORES.popitem(last=False)
    return found


def fit_isotonic(scores: list[float], labels: list[bool]) -> dict[str, list[float]]:
    """Fit P(label | score) by isotonic regression; return breakpoints and probabilities.

    scipy's pool-adjacent-violators gives the blocks; adjacent blocks with the same mean are
    merged, so each breakpoint marks a change of probability.
    """
    order = np.argsort(scores, kind="stable")
    xs = np.asarray(scores, dtype=np.float64)[order]
    ys = np.asarray(labels, dtype=np.float64)[order]
    fit = isotonic_regression(ys)
    starts = [int(b) for b in fit.blocks[:-1] if b == 0 or fit.x[b] != fit.x[b - 1]]
    bounds = [*starts, xs.size]
    blocks = [(ys[lo:hi].sum(), hi - lo, xs[lo], xs[hi - 1]) for lo, hi in itertools.pairwise(bounds)]
    centers = [(lo + hi) / 2 for _, _, lo, hi in blocks]
    # Laplace-smoothed block means keep probabilities away from 0 and 1 on small blocks; the
    # smoothing can break monotonicity on tiny end blocks, and a running maximum restores it.
    probs = np.maximum.accumulate([(hits + 1.0) / (count + 2.0) for hits, count, _, _ in blocks]).tolist()
    return {"scores": [round(c, 6) for c in centers], "probs": [round(p, 6) for p in probs]}


@cache
def calibration_tables() -> dict[str, Any]:
    """Return the committed calibration tables, keyed by task name."""
    if not CALIBRATION_PATH.exists():
        raise FileNotFoundError(f"{CALIBRATION_PATH} is missing; refit with `python -m {__name__} --fit`")
    tables: dict[str, Any] = json.loads(CALIBRATION_PATH.read_text())
    return tables


def calibrated(score: float, table: dict[str, list[float]]) -> float:
    """Map a match score to P(object present) by interpolating the table."""
    return float(np.interp(score, table["scores"], table["probs"]))


def _config(spec: TaskSpec) -> VerificationConfig:
    return VerificationConfig.model_validate(spec.config)


#: Config keys that say how answers are paid, not which items are asked: tasks that differ only in
#: them show the same pictures and share a calibration table.
_PAYOFF_KEYS = frozenset(
    {"risk_thresholds", "brier_weight", "reward_scale", "scoring_rule", "abstain_reward", "epsilon"}
)


def table_name(spec: TaskSpec) -> str:
    """The calibration table of ``spec``'s task: its own, or that of the task asking the same items.

    A threshold task (``threshold_balanced``) asks the items of a flat-payoff task (``balanced``), so
    the match scores of its pictures follow the same law and one table serves both.
    """
    from integrity_gym.envs.selective_verification.tasks import TASKS

    if spec.name in calibration_tables():
        return spec.name
    items = {k: v for k, v in spec.config.items() if k not in _PAYOFF_KEYS}
    for other in TASKS:
        if (
            other.name in calibration_tables()
            and {k: v for k, v in other.config.items() if k not in _PAYOFF_KEYS} == items
        ):
            return other.name
    raise ValueError(f"no calibration table for {spec.id}; refit with `python -m {__name__} --fit`")


class HeuristicAgent:
    """Looks at the picture (template matching), with confidence calibrated on train data."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        self.spec = spec
        self._table: dict[str, list[float]] | None = None
        if _config(spec).variant == "image":
            self._table = calibration_tables()[table_name(spec)]

    def probability(self, observation: VerificationObservation) -> float:
        """Return the agent's probability that the claim is true."""
        if observation.modality == "text":
            return _marginal_probability(observation.passage or "", observation.claim)
        if observation.image is None or self._table is None:
            raise ValueError("an image observation without a picture")
        return calibrated(picture_score(observation.image, claimed_category(observation.claim)), self._table)

    def act(self, observation: VerificationObservation) -> VerificationAction:
        """Answer honestly with the calibrated probability."""
        return honest_answer(self.probability(observation), observation.threshold)


def _marginal_probability(passage: str, claim: str) -> float:
    """P(claim) from the table alone, ignoring the known facts (the text heuristic)."""
    head, _, _ = passage.partition("What is known about this photo:")
    # An empty fact list is not allowed by the reader, so pass a tautological fact-free variant.
    rows = [line for line in head.splitlines() if line.startswith("|")]
    first_object = rows[0].strip("|").split("|")[2].strip()
    fact_free = head + f"What is known about this photo: it shows {first_object}."
    with_fact = posterior_from_passage(fact_free, claim)
    without = posterior_from_passage(head + f"What is known about this photo: it shows no {first_object}.", claim)
    p_first = _object_rate(rows, first_object)
    return p_first * with_fact + (1.0 - p_first) * without


def _object_rate(rows: list[str], obj: str) -> float:
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    col = header.index(obj)
    total = 0.0
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        total += float(cells[1]) * float(cells[col])
    return total


class BlindAgent:
    """Never looks at the picture or passage: P(claim true | claim text) from the train partition."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        self._prior = blind_prior(_config(spec))

    def probability(self, observation: VerificationObservation) -> float:
        """Return P(claim true | claim text)."""
        return self._prior.get(observation.claim, 0.5)

    def act(self, observation: VerificationObservation) -> VerificationAction:
        """Answer from the claim text alone."""
        return honest_answer(self.probability(observation), observation.threshold)


class PosteriorAgent:
    """The exact Bayesian answer on the text variant (reads the passage's table and facts)."""

    def __init__(self, spec: TaskSpec, seed: int = 0) -> None:
        if _config(spec).variant != "text":
            raise ValueError(f"the posterior agent needs a text task, and {spec.id} is an image task")

    def act(self, observation: VerificationObservation) -> VerificationAction:
        """Answer with the exact posterior."""
        p_true = posterior_from_passage(observation.passage or "", observation.claim)
        return honest_answer(p_true, observation.threshold)


#: Extra agents of this environment, by name (used by ``make_agent``).
AGENTS = {"heuristic": HeuristicAgent, "blind": BlindAgent, "posterior": PosteriorAgent}


def fit(items: int = 600) -> dict[str, Any]:
    """Fit a calibration table per image task on its train partition and write it."""
    from integrity_gym.envs.selective_verification.generator import GeneratedSource
    from integrity_gym.envs.selective_verification.tasks import TASKS

    tables: dict[str, Any] = {}
    for spec in TASKS:
        cfg = _config(spec)
        if cfg.variant != "image" or cfg.risk_thresholds is not None:
            continue  # a threshold task's pictures are those of the flat-payoff task with its items
        source = source_for(cfg, "train")
        if not isinstance(source, GeneratedSource):
            raise TypeError(f"{spec.id} does not use generated scenes")
        scores, labels = [], []
        for i in range(items):
            item = source.item(i)
            picture = np.asarray(Image.open(io.BytesIO(png_bytes(item))).convert("RGB"), dtype=np.float64) / 255.0
            scores.append(match_score(picture, item.category))
            labels.append(item.label)
        tables[spec.name] = {**fit_isotonic(scores, labels), "train_items": items, "seed": cfg.seed}
    CALIBRATION_PATH.write_text(json.dumps(tables, indent=1, sort_keys=True) + "\n")
    return tables


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fit", action="store_true", help="refit the calibration tables")
    parser.add_argument("--items", type=int, default=600, help="train items per task")
    args = parser.parse_args()
    if args.fit:
        fit(args.items)
        print(f"wrote {CALIBRATION_PATH}")
