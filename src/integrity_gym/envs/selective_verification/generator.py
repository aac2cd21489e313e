"""Deterministic item generators: object-presence claims about generated pictures.

Every item is built from ``(generator version, seed, difficulty, index)`` alone, so any index
can be produced directly, in any process, byte for byte. Pictures are assigned to the train or
eval partition by the SHA-256 of their image id, so a picture (and every claim about it) lives
in exactly one partition.

Samplers:

* ``balanced`` (default): one claim per picture about a uniformly drawn category, true half the
  time *for every category*. The picture is composed as if the category were present (its kind of
  place drawn given that category) and, for a false claim, the category is then swapped for
  another object, so neither the object's name, the surroundings nor the number, sizes and
  positions of the objects give the answer away.
* ``random`` / ``popular`` / ``adversarial`` (POPE): six claims per picture, three about objects
  in it and three about absent ones chosen uniformly, among the most frequent categories, or
  among those that co-occur most with the objects present. Frequencies and co-occurrence are
  counted on training-partition layouts only. A task's first ``PICTURE_STRIDE`` items each ask one
  of those claims (a shuffled slot: true half the time) about a picture of their own, so no episode
  shows a picture an earlier one showed.
* ``all``: the three POPE samplers interleaved, each item drawing its own.

Version 2 pictures say nothing through their global statistics: the background and every
object's colours are drawn apart from the kind of place and the categories (see ``scenes``).
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from integrity_gym.core.seeding import PartitionChoice, make_rng, partition_of, stable_id
from integrity_gym.envs.selective_verification.glyphs import CATEGORIES
from integrity_gym.envs.selective_verification.models import DIFFICULTIES, Difficulty, Item
from integrity_gym.envs.selective_verification.scenes import (
    build_scene,
    encode_png,
    pixel_digest,
    render,
    sample_composition,
)

#: Version 2: backgrounds and object colours drawn apart from the scene type and the categories
#: (version 1 gave each kind of place a background and each object its emoji's colours).
GENERATOR_VERSION = "selective_verification/gen-v2"
POPE_SPLITS = ("random", "popular", "adversarial")
DifficultyChoice = Literal["easy", "medium", "hard", "mixed"]
#: Claims per picture in the POPE samplers (half true, half false).
QUESTIONS_PER_IMAGE = 6
#: Pictures per block of POPE item indices (see ``GeneratedSource._locate``): the first
#: ``PICTURE_STRIDE`` items of a task each show a picture of their own (version 1 walked blocks of
#: 64, so seed 64 asked about seed 0's picture again, and an agent that remembered earlier episodes
#: counted how many of a picture's three true claims it had already seen).
PICTURE_STRIDE = 10_000
_STATS_POOL = 6000

_PLURAL = frozenset({"skis", "scissors"})


def claim_text(category: str) -> str:
    """Return the claim that ``category`` appears in the picture."""
    if category in _PLURAL:
        return f"There are {category} in the image."
    article = "an" if category[0] in "aeiou" else "a"
    return f"There is {article} {category} in the image."


@dataclass(frozen=True)
class ClaimDraft:
    """A claim before its picture is laid out (cheap: no pixels, no placement)."""

    item_id: str
    image_id: str
    split: str
    category: str
    label: bool


@cache
def cooccurrence_stats() -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Count, over training-partition layouts only, pictures per category and per category pair."""
    freq = dict.fromkeys(CATEGORIES, 0)
    pairs: dict[tuple[str, str], int] = {}
    for i in range(_STATS_POOL):
        layout_id = stable_id(GENERATOR_VERSION, "stats", i)
        if partition_of(layout_id) != "train":
            continue
        _, present = sample_composition(make_rng(GENERATOR_VERSION, "stats", i))
        for a in present:
            freq[a] += 1
            for b in present:
                if a != b:
                    pairs[(a, b)] = pairs.get((a, b), 0) + 1
    return freq, pairs


def negatives(sampler: str, present: tuple[str, ...], rng: random.Random, k: int = 3) -> list[str]:
    """Choose ``k`` absent categories with POPE's ``random``, ``popular`` or ``adversarial`` rule."""
    absent = [c for c in CATEGORIES if c not in present]
    if sampler == "random":
        return rng.sample(absent, k)
    freq, pairs = cooccurrence_stats()
    if sampler == "popular":
        return sorted(absent, key=lambda c: (-freq[c], c))[:k]
    if sampler == "adversarial":

        def co(c: str) -> int:
            return sum(pairs.get((c, p), 0) for p in present)

        return sorted(absent, key=lambda c: (-co(c), -freq[c], c))[:k]
    raise ValueError(f"unknown negative sampler {sampler!r}; use random, popular or adversarial")


class GeneratedSource:
    """The items of one (split, partition, seed, difficulty) configuration, built lazily."""

    def __init__(
        self,
        split: str,
        partition: PartitionChoice = "eval",
        seed: int = 0,
        difficulty: DifficultyChoice = "mixed",
        image_size: int = 192,
        eval_fraction: float = 0.2,
    ) -> None:
        if split not in ("balanced", *POPE_SPLITS, "all"):
            raise ValueError(f"unknown split {split!r}; use balanced, random, popular, adversarial or all")
        if partition not in ("train", "eval", "all"):
            raise ValueError(f"partition must be train, eval or all, not {partition!r}")
        if difficulty not in (*DIFFICULTIES, "mixed"):
            raise ValueError(f"difficulty must be easy, medium, hard or mixed, not {difficulty!r}")
        self.split, self.partition, self.seed = split, partition, seed
        self.difficulty, self.image_size, self.eval_fraction = difficulty, image_size, eval_fraction
        self._family = "balanced" if split == "balanced" else "pope"
        self._images: list[int] = []  # kept candidate image numbers, in order
        self._next_candidate = 0
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ indexing
    def _image_id(self, j: int) -> str:
        key = (GENERATOR_VERSION, self._family, self.seed, self.difficulty, self.image_size, j)
        return f"img-{stable_id(*key)}"

    def partition_of_image(self, image_id: str) -> str:
        """Return the partition (``train`` or ``eval``) a picture belongs to."""
        return partition_of(image_id, self.eval_fraction)

    def _image_number(self, k: int) -> int:
        # Sources are shared between env instances (and server threads): extend under a lock so
        # the kept-picture list is the same whatever the interleaving.
        with self._lock:
            while len(self._images) <= k:
                j = self._next_candidate
                self._next_candidate += 1
                if self.partition == "all" or self.partition_of_image(self._image_id(j)) == self.partition:
                    self._images.append(j)
            return self._images[k]

    def _locate(self, index: int) -> tuple[str, int, int]:
        """Map an item index to (sampler, picture number, question slot)."""
        if index < 0:
            raise ValueError(f"item index must be >= 0, got {index}")
        if self.split == "balanced":
            return "balanced", self._image_number(index), 0
        sampler, pope_index = self.split, index
        if self.split == "all":
            # Each item draws its sampler from a key of its own and walks the pictures as any POPE
            # split does. (Version 1 took sampler index % 3 on POPE index index // 3, so three
            # consecutive items showed one picture and question slot, and remembering whether the
            # claim had changed since the last episode answered the next one.)
            draw = make_rng(GENERATOR_VERSION, "all/sampler", self.seed, self.difficulty, self.image_size, index)
            sampler = POPE_SPLITS[draw.randrange(len(POPE_SPLITS))]
        # Consecutive indices visit different pictures: blocks of PICTURE_STRIDE pictures are
        # walked question slot by question slot, so no picture is asked about twice before index
        # PICTURE_STRIDE (beyond every default task's 1,000 items).
        block, rest = divmod(pope_index, QUESTIONS_PER_IMAGE * PICTURE_STRIDE)
        picture = block * PICTURE_STRIDE + rest % PICTURE_STRIDE
        return sampler, self._image_number(picture), rest // PICTURE_STRIDE

    def _image_rng(self, j: int) -> random.Random:
        return make_rng(GENERATOR_VERSION, self._family, self.seed, self.difficulty, self.image_size, j)

    # ------------------------------------------------------------------ claims
    def _compose(self, j: int) -> tuple[random.Random, str, tuple[str, ...], list[str], list[int]]:
        """Return the picture's rng, scene type, categories present, claimed categories, slots.

        Balanced pictures have one claimed category (``label`` comes from ``_draft``); POPE
        pictures have three present ones, and ``slots`` orders the six questions (slot values
        0-2 are the positives, 3-5 the sampler's negatives).
        """
        rng = self._image_rng(j)
        if self._family == "balanced":
            category = rng.choice(CATEGORIES)
            label = rng.random() < 0.5
            stype, present = sample_composition(rng, about=category, present=label)
            return rng, stype, present, [category], [0 if label else 3]
        stype, present = sample_composition(rng)
        positives = rng.sample(present, 3)
        slots = list(range(QUESTIONS_PER_IMAGE))
        rng.shuffle(slots)
        return rng, stype, present, positives, slots

    def draft(self, index: int) -> ClaimDraft:
        """Return the claim and label of item ``index`` without laying out its picture."""
        draft, _ = self._draft_and_layout(index)
        return draft

    def _draft_and_layout(self, index: int) -> tuple[ClaimDraft, tuple[random.Random, str, tuple[str, ...]]]:
        sampler, j, slot = self._locate(index)
        image_id = self._image_id(j)
        rng, stype, present, claimed, slots = self._compose(j)
        if self._family == "balanced":
            category, label = claimed[0], slots[0] == 0
        else:
            neg_rng = make_rng(GENERATOR_VERSION, "negatives", sampler, self.seed, image_id)
            claims = claimed + negatives(sampler, present, neg_rng)
            category, label = claims[slots[slot]], slots[slot] < 3
        item_id = f"sv-{sampler}-{stable_id(GENERATOR_VERSION, image_id, sampler, slot)}"
        draft = ClaimDraft(item_id=item_id, image_id=image_id, split=sampler, category=category, label=label)
        return draft, (rng, stype, present)

    def item(self, index: int) -> Item:
        """Return item ``index`` with its picture laid out (pixels are drawn by ``render``)."""
        draft, (rng, stype, present) = self._draft_and_layout(index)
        levels: tuple[Difficulty, ...] = ("easy", "medium", "hard")
        level: Difficulty = rng.choice(levels) if self.difficulty == "mixed" else self.difficulty
        scene = build_scene(draft.image_id, stype, present, level, rng, self.image_size)
        return Item(
            item_id=draft.item_id,
            source="generated",
            split=draft.split,
            modality="image",
            category=draft.category,
            claim=claim_text(draft.category),
            label=draft.label,
            scene=scene,
        )

    def drafts(self, n: int) -> Iterator[ClaimDraft]:
        """Yield the first ``n`` claim drafts."""
        for i in range(n):
            yield self.draft(i)


def png_bytes(item: Item) -> bytes:
    """Draw a generated item's picture and return it as PNG bytes."""
    if item.scene is None:
        raise ValueError(f"item {item.item_id} has no generated scene")
    return encode_png(render(item.scene))


def golden_samples() -> list[dict[str, Any]]:
    """Return the first items of every sampler at seed 0 (eval partition), for the contract suite.

    Then the first three episodes of every threshold task with the risk thresholds they state.
    Pictures are summarised by the SHA-256 of their decoded pixels (``pixel_digest``), not of
    their PNG bytes, which depend on the zlib build.
    """
    from integrity_gym.envs.selective_verification.textgen import TextSource

    out: list[dict[str, Any]] = []
    for split in ("balanced", *POPE_SPLITS):
        source = GeneratedSource(split, "eval", seed=0)
        for i in range(3):
            item = source.item(i)
            assert item.scene is not None
            out.append(
                {
                    "item_id": item.item_id,
                    "split": split,
                    "claim": item.claim,
                    "label": item.label,
                    "scene_type": item.scene.scene_type,
                    "difficulty": item.scene.difficulty,
                    "objects": [[o.category, *o.box, o.visible_fraction] for o in item.scene.objects],
                    "pixels_sha256": pixel_digest(render(item.scene)),
                }
            )
    text = TextSource("eval", seed=0)
    for i in range(3):
        item = text.item(i)
        out.append(
            {
                "item_id": item.item_id,
                "split": "text",
                "claim": item.claim,
                "label": item.label,
                "passage_sha256": hashlib.sha256((item.passage or "").encode()).hexdigest(),
                "true_probability": item.true_probability,
            }
        )
    return out + _threshold_samples()


def _threshold_samples() -> list[dict[str, Any]]:
    """The first episodes of every threshold task: the items are those above, the stated thresholds new."""
    from integrity_gym.core.registry import make
    from integrity_gym.envs.selective_verification.tasks import TASKS

    out: list[dict[str, Any]] = []
    for spec in TASKS:
        if "risk_thresholds" not in spec.config:
            continue
        env = make(spec.id)
        for i in range(3):
            obs = env.reset(seed=i)
            out.append(
                {
                    "task": spec.id,
                    "item_id": obs.item_id,
                    "risk_threshold": obs.threshold,
                    "abstain_reward": obs.abstain_reward,
                    "system_prompt_sha256": hashlib.sha256(obs.system_prompt.encode()).hexdigest(),
                }
            )
        env.close()
    return out


def label_rate_by_claim(labels: list[tuple[str, bool]]) -> dict[str, float]:
    """Return the Laplace-smoothed share of true claims per claim text (the blind prior)."""
    counts: dict[str, list[int]] = {}
    for claim, label in labels:
        c = counts.setdefault(claim, [0, 0])
        c[0] += int(label)
        c[1] += 1
    return {claim: (k + 1) / (n + 2) for claim, (k, n) in counts.items()}
