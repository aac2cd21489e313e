import hashlib
import subprocess
import sys
from collections import Counter, defaultdict

import numpy as np
import pytest

from integrity_gym.envs.selective_verification.generator import (
    PICTURE_STRIDE,
    GeneratedSource,
    cooccurrence_stats,
    golden_samples,
    png_bytes,
)
from integrity_gym.envs.selective_verification.glyphs import CATEGORIES
from integrity_gym.envs.selective_verification.scenes import PROFILES
from integrity_gym.envs.selective_verification.textgen import TextSource, posterior_from_passage


@pytest.mark.parametrize("split", ["balanced", "random", "popular", "adversarial", "all"])
def test_partitions_never_share_an_image(split: str) -> None:
    train = {GeneratedSource(split, "train").draft(i).image_id for i in range(600)}
    evals = {GeneratedSource(split, "eval").draft(i).image_id for i in range(300)}
    assert train and evals and not train & evals
    source = GeneratedSource(split, "eval")
    assert all(source.partition_of_image(image) == "eval" for image in evals)


def test_pope_samplers_share_pictures_and_positives_and_differ_in_negatives() -> None:
    drafts = {s: [GeneratedSource(s, "eval").draft(i) for i in range(60)] for s in ("random", "popular", "adversarial")}
    for i in range(60):
        r, p, a = (drafts[s][i] for s in ("random", "popular", "adversarial"))
        assert r.image_id == p.image_id == a.image_id and r.label == p.label == a.label
        if r.label:
            assert r.category == p.category == a.category
    # every item of a task's first PICTURE_STRIDE shows a picture of its own (version 2 came back to
    # seed 0's picture at seed 64), true half the time...
    source = GeneratedSource("random", "eval")
    first = list(source.drafts(600))
    assert len({d.image_id for d in first}) == 600
    assert abs(np.mean([d.label for d in first]) - 0.5) < 0.07
    # ...and a picture's six claims, one per block of PICTURE_STRIDE items, are three true and three false
    for j in (0, 5):
        claims = [source.draft(j + k * PICTURE_STRIDE) for k in range(6)]
        assert len({d.image_id for d in claims}) == 1 and len({d.category for d in claims}) == 6
        assert sum(d.label for d in claims) == 3


def test_popular_and_adversarial_negatives_follow_training_statistics() -> None:
    freq, pairs = cooccurrence_stats()
    popular = GeneratedSource("popular", "eval")
    adversarial = GeneratedSource("adversarial", "eval")
    top = sorted(CATEGORIES, key=lambda c: -freq[c])[:8]
    negatives = [d.category for d in popular.drafts(300) if not d.label]
    assert set(negatives) <= set(top)
    random_negs = [d.category for d in GeneratedSource("random", "eval").drafts(600) if not d.label]
    assert len(set(random_negs)) > 40

    # adversarial negatives co-occur with what is present far more than random ones do
    def co(source: GeneratedSource, n: int) -> float:
        values = []
        for i in range(n):
            item = source.item(i)
            if item.label or item.scene is None:
                continue
            present = {o.category for o in item.scene.objects}
            values.append(sum(pairs.get((item.category, p), 0) for p in present))
        return float(np.mean(values))

    assert co(adversarial, 60) > 3 * co(GeneratedSource("random", "eval"), 60)


def test_balanced_split_is_balanced_per_object_and_blind_is_near_chance() -> None:
    source = GeneratedSource("balanced", "train")
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for d in source.drafts(6000):
        counts[d.category][0] += d.label
        counts[d.category][1] += 1
    rates = np.array([k / n for k, n in counts.values()])
    assert len(counts) == len(CATEGORIES)
    assert abs(rates.mean() - 0.5) < 0.03 and np.abs(rates - 0.5).max() < 0.3
    from integrity_gym.envs.selective_verification.env import VerificationConfig, blind_prior

    prior = blind_prior(VerificationConfig(split="balanced"))
    evals = list(GeneratedSource("balanced", "eval").drafts(1500))
    from integrity_gym.envs.selective_verification.generator import claim_text

    accuracy = np.mean([(prior.get(claim_text(d.category), 0.5) >= 0.5) == d.label for d in evals])
    assert abs(accuracy - 0.5) < 0.05
    # ...while on the popular split the object's name alone answers most claims
    pprior = blind_prior(VerificationConfig(split="popular"))
    pevals = list(GeneratedSource("popular", "eval").drafts(1500))
    paccuracy = np.mean([(pprior.get(claim_text(d.category), 0.5) >= 0.5) == d.label for d in pevals])
    assert paccuracy > 0.7


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_scenes_respect_visibility_and_annotations(difficulty: str) -> None:
    source = GeneratedSource("random", "eval", difficulty=difficulty)  # type: ignore[arg-type]
    for i in range(0, 60, 6):
        item = source.item(i)
        assert item.scene is not None
        cats = [o.category for o in item.scene.objects]
        assert 3 <= len(cats) == len(set(cats)) <= 6
        assert (item.category in cats) == item.label
        for obj in item.scene.objects:
            assert obj.visible_fraction >= PROFILES[difficulty].min_visible - 1e-9
            x0, y0, x1, y1 = obj.box
            assert 0 <= x0 < x1 <= item.scene.width and 0 <= y0 < y1 <= item.scene.height


_CHILD = """
import hashlib
from integrity_gym.envs.selective_verification.generator import GeneratedSource, png_bytes
from integrity_gym.envs.selective_verification.textgen import TextSource
h = hashlib.sha256()
for split in ("balanced", "adversarial"):
    src = GeneratedSource(split, "eval", seed=5)
    for i in range(3):
        item = src.item(i)
        h.update(item.model_dump_json().encode()); h.update(png_bytes(item))
for i in range(3):
    h.update(TextSource("eval", seed=5).item(i).model_dump_json().encode())
print(h.hexdigest())
"""


def test_generation_is_byte_identical_across_processes() -> None:
    runs = {
        subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    }
    assert len(runs) == 1
    h = hashlib.sha256()
    for split in ("balanced", "adversarial"):
        src = GeneratedSource(split, "eval", seed=5)
        for i in range(3):
            item = src.item(i)
            h.update(item.model_dump_json().encode())
            h.update(png_bytes(item))
    for i in range(3):
        h.update(TextSource("eval", seed=5).item(i).model_dump_json().encode())
    assert runs == {h.hexdigest() + "\n"}


def test_any_index_is_produced_directly() -> None:
    a = GeneratedSource("popular", "eval", seed=3)
    b = GeneratedSource("popular", "eval", seed=3)
    assert a.item(25) == [b.item(i) for i in range(26)][25]
    assert GeneratedSource("popular", "eval", seed=4).draft(0).image_id != a.draft(0).image_id


def test_text_items_carry_their_exact_probability() -> None:
    source = TextSource("eval")
    items = [source.item(i) for i in range(3000)]
    for item in items[:300]:
        assert item.passage and item.true_probability is not None
        assert posterior_from_passage(item.passage, item.claim) == pytest.approx(item.true_probability, abs=1e-9)
        assert "label" not in item.passage
    tp = np.array([i.true_probability for i in items], dtype=float)
    labels = np.array([i.label for i in items], dtype=float)
    # labels are drawn from the stated model: within probability bands they match the probability
    for lo, hi in ((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 0.8), (0.8, 1.0)):
        band = (tp >= lo) & (tp < hi)
        if band.sum() > 100:
            assert abs(labels[band].mean() - tp[band].mean()) < 4 * np.sqrt(0.25 / band.sum())
    train = {TextSource("train").item(i).item_id for i in range(400)}
    assert not train & {i.item_id for i in items}


def test_golden_samples_are_stable_within_a_process() -> None:
    first = golden_samples()
    assert first == golden_samples()
    items = [s for s in first if "split" in s]
    splits = Counter(s["split"] for s in items)
    assert splits == Counter({"balanced": 3, "random": 3, "popular": 3, "adversarial": 3, "text": 3})
    assert all(len(s.get("pixels_sha256", s.get("passage_sha256", ""))) == 64 for s in items)
    # then the thresholds the first episodes of each threshold task state
    stated = [s for s in first if "risk_threshold" in s]
    assert len(stated) == len(first) - len(items) == 9 and all(0.5 <= s["risk_threshold"] <= 0.95 for s in stated)
    assert png_bytes(GeneratedSource("balanced", "eval").item(0)).startswith(b"\x89PNG")
