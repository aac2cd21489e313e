"""On `balanced`, nothing but the objects themselves tells whether a claim is true.

A claim is true half the time for every object, and the picture around it (kind of place, number
of objects, their sizes, positions and occlusion) is drawn the same way either way. A simple
classifier on that metadata, evaluated on held-out items, does no better than chance. And on every
task a picture's colours say nothing of what it shows: neither its background the kind of place,
nor an object's colours its category.
"""

from collections import Counter

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from integrity_gym.envs.selective_verification.env import VerificationConfig, blind_prior
from integrity_gym.envs.selective_verification.generator import GeneratedSource
from integrity_gym.envs.selective_verification.glyphs import glyph_mask
from integrity_gym.envs.selective_verification.models import Item, Scene
from integrity_gym.envs.selective_verification.scenes import MAX_OBJECTS, MIN_OBJECTS, SCENE_TYPES, render

N_ITEMS = 2400
#: Held-out accuracy a cue-free picture allows (chance 0.5; one standard error at n = 2,400 is 0.01).
MAX_ACCURACY = 0.53


@pytest.fixture(scope="module")
def items() -> list[Item]:
    source = GeneratedSource("balanced", "eval", seed=0)
    return [source.item(i) for i in range(N_ITEMS)]


def metadata(item: Item) -> list[float]:
    """Everything about a picture except what its objects are."""
    scene = item.scene
    assert scene is not None
    objs = scene.objects
    row = [float(len(objs))]
    row += [float(scene.scene_type == t) for t in sorted(SCENE_TYPES)]
    row += [float(scene.difficulty == d) for d in ("easy", "medium", "hard")]
    # how typical the claimed object is of this kind of place (the "surroundings" cue)
    row.append(SCENE_TYPES[scene.scene_type].rates.get(item.category, 0.0))
    row += sorted((float(o.size) for o in objs), reverse=True) + [0.0] * (MAX_OBJECTS - len(objs))
    row.append(float(sum((o.box[2] - o.box[0]) * (o.box[3] - o.box[1]) for o in objs)))
    for o in objs + (None,) * (MAX_OBJECTS - len(objs)):
        if o is None:
            row += [0.0] * 5
        else:
            row += [(o.box[0] + o.box[2]) / 2, (o.box[1] + o.box[3]) / 2, o.box[2] - o.box[0], o.box[3] - o.box[1]]
            row.append(o.visible_fraction)
    return row


def held_out_accuracy(x: np.ndarray, y: np.ndarray) -> float:
    model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=5000))
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    return float(cross_val_score(model, x, y, cv=folds).mean())


def test_balanced_claims_are_about_what_is_drawn(items: list[Item]) -> None:
    for item in items:
        assert item.scene is not None
        cats = [o.category for o in item.scene.objects]
        assert MIN_OBJECTS <= len(cats) == len(set(cats)) <= MAX_OBJECTS
        assert (item.category in cats) == item.label
    assert abs(np.mean([i.label for i in items]) - 0.5) < 0.03


def test_scene_metadata_predicts_the_label_no_better_than_chance(items: list[Item]) -> None:
    x = np.array([metadata(i) for i in items])
    y = np.array([i.label for i in items], dtype=int)
    assert held_out_accuracy(x[:, :1], y) <= MAX_ACCURACY  # the number of objects alone
    assert held_out_accuracy(x, y) <= MAX_ACCURACY
    # The check has the power to see a cue as weak as the one it guards against (objects counted
    # alone gave 0.58 before the fix): the same classifier on the same pictures, with labels that
    # follow the object count 60% of the time, clears the bar.
    rng = np.random.default_rng(0)
    cue = (x[:, 0] >= np.median(x[:, 0])).astype(int)
    leaky = np.where(rng.random(len(y)) < 0.6, cue, 1 - cue)
    assert held_out_accuracy(x, leaky) > MAX_ACCURACY + 0.02


def test_the_claim_text_alone_is_worth_nothing(items: list[Item]) -> None:
    prior = blind_prior(VerificationConfig(split="balanced"))
    accuracy = np.mean([(prior.get(i.claim, 0.5) >= 0.5) == i.label for i in items])
    assert accuracy <= 0.55


# ---------------------------------------------------------------------- colours (generator version 2)
def _nearest_neighbour_accuracy(x: np.ndarray, y: np.ndarray) -> float:
    from sklearn.model_selection import KFold
    from sklearn.neighbors import KNeighborsClassifier

    model = make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=15))
    return float(cross_val_score(model, x, y, cv=KFold(5, shuffle=True, random_state=0)).mean())


@pytest.fixture(scope="module")
def drawn() -> list[tuple[Scene, np.ndarray]]:
    # Easy pictures: no clutter, gradient or noise, and every object wholly visible.
    source = GeneratedSource("random", "eval", difficulty="easy")
    out = []
    for i in range(600):
        scene = source.item(i).scene
        assert scene is not None
        out.append((scene, render(scene).astype(np.float64)))
    return out


def _majority(labels: list[str]) -> float:
    return Counter(labels).most_common(1)[0][1] / len(labels)


def test_the_background_says_nothing_of_the_kind_of_place(drawn: list[tuple[Scene, np.ndarray]]) -> None:
    # Kills a background per scene type (version 1's; the classifier then reads the type every time).
    x = np.array([np.median(np.concatenate([p[0], p[-1], p[:, 0], p[:, -1]]), axis=0) for _, p in drawn])
    types = [scene.scene_type for scene, _ in drawn]
    assert _nearest_neighbour_accuracy(x, np.array(types)) <= _majority(types) + 0.05


def test_an_objects_colours_say_nothing_of_its_category(drawn: list[tuple[Scene, np.ndarray]]) -> None:
    # Kills objects drawn in their emoji's own colours (their mean colour then names the category).
    rows, cats = [], []
    for scene, pixels in drawn:
        for obj in scene.objects:
            mask = glyph_mask(obj.category, obj.size, obj.angle)
            h, w = mask.shape
            rows.append(pixels[obj.y : obj.y + h, obj.x : obj.x + w][mask].mean(axis=0))
            cats.append(obj.category)
    assert len(cats) > 2000
    assert _nearest_neighbour_accuracy(np.array(rows), np.array(cats)) <= _majority(cats) + 0.05
