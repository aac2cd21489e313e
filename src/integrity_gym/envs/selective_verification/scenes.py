"""Offline scene generator: which objects a picture holds, where they go, and how it is drawn.

A scene has a *type* (kitchen, street, farm, ...) drawn from a prior; each type gives every
category a presence rate, so objects co-occur the way they do in photographs (cups with bowls,
zebras with giraffes) and POPE's popular/adversarial negatives mean something. Composition
(cheap: categories only) is separate from placement (positions checked against glyph masks so
every object stays at least ``min_visible`` visible) and from drawing (pixels), so labels and
statistics never need pixels.

Difficulty sets object size, rotation, the occlusion allowed, clutter shapes, background texture
and pixel noise.
"""

from __future__ import annotations

import io
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw

from integrity_gym.core.seeding import make_np_rng
from integrity_gym.envs.selective_verification.glyphs import CATEGORIES, load_glyph
from integrity_gym.envs.selective_verification.models import Clutter, Difficulty, Scene, SceneObject


@dataclass(frozen=True)
class SceneType:
    """A kind of place: how common it is, its background colour and each category's presence rate."""

    name: str
    prior: float
    background: tuple[int, int, int]
    rates: dict[str, float]


_TYPES = (
    SceneType("street", 0.15, (176, 178, 182), {
        "person": 0.8, "car": 0.7, "bus": 0.35, "truck": 0.35, "motorcycle": 0.3, "bicycle": 0.35,
        "traffic light": 0.5, "stop sign": 0.3, "handbag": 0.2, "backpack": 0.2, "umbrella": 0.15,
        "dog": 0.1, "bird": 0.1, "cell phone": 0.1}),
    SceneType("kitchen", 0.12, (238, 226, 200), {
        "bowl": 0.5, "cup": 0.5, "knife": 0.4, "spoon": 0.35, "bottle": 0.4,
        "banana": 0.25, "apple": 0.25, "orange": 0.2, "broccoli": 0.2, "carrot": 0.2, "cake": 0.1,
        "person": 0.3, "potted plant": 0.1, "clock": 0.15, "scissors": 0.1, "wine glass": 0.15}),
    SceneType("dining", 0.11, (222, 196, 160), {
        "pizza": 0.35, "sandwich": 0.25, "hot dog": 0.15, "donut": 0.2, "cake": 0.25, "cup": 0.45,
        "wine glass": 0.45, "knife": 0.45, "spoon": 0.3, "bowl": 0.35, "bottle": 0.35,
        "chair": 0.5, "person": 0.55, "vase": 0.15}),
    SceneType("living room", 0.11, (214, 206, 226), {
        "couch": 0.6, "tv": 0.55, "chair": 0.45, "potted plant": 0.4, "book": 0.45, "clock": 0.3,
        "vase": 0.25, "cat": 0.2, "dog": 0.15, "laptop": 0.2, "teddy bear": 0.1, "cell phone": 0.2,
        "person": 0.4, "cup": 0.2}),
    SceneType("office", 0.09, (225, 232, 238), {
        "laptop": 0.6, "keyboard": 0.5, "mouse": 0.5, "cell phone": 0.4, "book": 0.4, "chair": 0.5,
        "cup": 0.3, "tv": 0.25, "clock": 0.2, "scissors": 0.2, "person": 0.5, "backpack": 0.15,
        "potted plant": 0.15, "bottle": 0.15, "tie": 0.15}),
    SceneType("bedroom", 0.06, (236, 214, 222), {
        "bed": 0.8, "teddy bear": 0.35, "book": 0.35, "clock": 0.35, "cell phone": 0.25,
        "laptop": 0.2, "cat": 0.2, "dog": 0.1, "tv": 0.2, "potted plant": 0.15, "person": 0.2}),
    SceneType("bathroom", 0.05, (206, 230, 236), {
        "toilet": 0.8, "toothbrush": 0.6, "cup": 0.25, "bottle": 0.25, "scissors": 0.2,
        "potted plant": 0.1, "person": 0.1, "cat": 0.05, "vase": 0.1}),
    SceneType("farm", 0.07, (170, 206, 140), {
        "cow": 0.5, "sheep": 0.5, "horse": 0.45, "dog": 0.3, "bird": 0.3, "person": 0.45,
        "truck": 0.25, "cat": 0.15, "bicycle": 0.1, "carrot": 0.1, "apple": 0.1}),
    SceneType("safari", 0.05, (222, 204, 150), {
        "elephant": 0.55, "giraffe": 0.5, "zebra": 0.5, "bird": 0.3, "bear": 0.15, "truck": 0.2,
        "person": 0.2, "car": 0.1}),
    SceneType("park", 0.09, (190, 224, 170), {
        "person": 0.8, "dog": 0.35, "frisbee": 0.25, "kite": 0.3, "sports ball": 0.3,
        "bicycle": 0.3, "skateboard": 0.25, "bird": 0.3, "backpack": 0.25, "umbrella": 0.15,
        "bear": 0.05, "cell phone": 0.15, "handbag": 0.15}),
    SceneType("travel", 0.06, (200, 214, 232), {
        "airplane": 0.5, "suitcase": 0.55, "boat": 0.4, "train": 0.35, "person": 0.75,
        "backpack": 0.4, "handbag": 0.3, "cell phone": 0.25, "tie": 0.15, "bus": 0.2,
        "umbrella": 0.1}),
    SceneType("snow", 0.04, (236, 242, 248), {
        "skis": 0.7, "person": 0.8, "backpack": 0.3, "dog": 0.1, "car": 0.1, "bird": 0.05,
        "umbrella": 0.05}),
)  # fmt: skip

SCENE_TYPES: dict[str, SceneType] = {t.name: t for t in _TYPES}
#: Objects per picture.
MIN_OBJECTS, MAX_OBJECTS = 3, 6


@dataclass(frozen=True)
class DifficultyProfile:
    """Rendering parameters of one difficulty level."""

    size: tuple[float, float]  # object size as a fraction of the picture side
    max_angle: float
    min_visible: float
    clutter: tuple[int, int]
    gradient: float
    texture: float
    noise: float


PROFILES: dict[str, DifficultyProfile] = {
    "easy": DifficultyProfile((0.28, 0.36), 0.0, 1.0, (0, 0), 0.0, 0.0, 0.0),
    "medium": DifficultyProfile((0.2, 0.32), 15.0, 0.75, (2, 5), 0.15, 0.0, 4.0),
    "hard": DifficultyProfile((0.14, 0.26), 35.0, 0.5, (6, 12), 0.3, 10.0, 10.0),
}


def _check_categories() -> None:
    known = set(CATEGORIES)
    used: set[str] = set()
    for t in _TYPES:
        unknown = set(t.rates) - known
        if unknown:
            raise ValueError(f"scene type {t.name} names unknown categories {sorted(unknown)}")
        used |= set(t.rates)
    if used != known:
        raise ValueError(f"categories in no scene type: {sorted(known - used)}")
    if abs(sum(t.prior for t in _TYPES) - 1.0) > 1e-9:
        raise ValueError("scene type priors must sum to 1")


_check_categories()


def type_weights_given(category: str) -> list[float]:
    """Return P(type | category present), unnormalised: prior(type) * rate(category | type)."""
    return [t.prior * t.rates.get(category, 0.0) for t in _TYPES]


def sample_composition(
    rng: random.Random, *, require: str | None = None, exclude: str | None = None
) -> tuple[str, tuple[str, ...]]:
    """Draw a scene type and the categories present (``require``/``exclude`` one category).

    With ``require`` or ``exclude`` the type is drawn from P(type | category present), so the
    surroundings of a picture never tell whether the category is in it.
    """
    anchor = require or exclude
    weights = type_weights_given(anchor) if anchor else [t.prior for t in _TYPES]
    stype = rng.choices(_TYPES, weights=weights)[0]
    cats = sorted(stype.rates)
    for _ in range(100):
        present = [c for c in cats if rng.random() < stype.rates[c]]
        if require and require not in present:
            present.append(require)
        if exclude and exclude in present:
            present.remove(exclude)
        if MIN_OBJECTS <= len(present) <= MAX_OBJECTS:
            return stype.name, tuple(sorted(present))
    # Rates too sparse for the bounds (never expected): fill by weight deterministically.
    pool = [c for c in cats if c not in (exclude, require)]
    fill = sorted(pool, key=lambda c: -stype.rates[c])[: MIN_OBJECTS - (1 if require else 0)]
    return stype.name, tuple(sorted({*fill, *([require] if require else [])}))


@lru_cache(maxsize=1024)
def _glyph_variant(category: str, size: int, angle: float) -> Image.Image:
    # Cached and shared: callers only read the returned image (paste source, alpha channel).
    glyph = load_glyph(category)
    scale = size / max(glyph.size)
    new_size = (max(2, round(glyph.width * scale)), max(2, round(glyph.height * scale)))
    img = glyph.resize(new_size, Image.Resampling.BILINEAR)
    if angle:
        img = img.rotate(angle, resample=Image.Resampling.BILINEAR, expand=True)
    return img


@lru_cache(maxsize=4096)
def _mask(category: str, size: int, angle: float) -> np.ndarray:
    alpha = np.asarray(_glyph_variant(category, size, angle).getchannel("A"))
    return alpha > 127


def place_objects(
    categories: Sequence[str], difficulty: Difficulty, width: int, height: int, rng: random.Random
) -> tuple[SceneObject, ...]:
    """Place ``categories`` (in a random drawing order) so each stays ``min_visible`` visible."""
    prof = PROFILES[difficulty]
    side = min(width, height)
    order = list(categories)
    rng.shuffle(order)
    owner = np.full((height, width), -1, dtype=np.int16)
    areas: list[int] = []
    placed: list[tuple[str, int, int, int, float]] = []
    for idx, cat in enumerate(order):
        shrink = 1.0
        for attempt in range(400):
            if attempt and attempt % 40 == 0:
                shrink *= 0.85
            size = max(8, round(side * rng.uniform(*prof.size) * shrink))
            angle = round(rng.uniform(-prof.max_angle, prof.max_angle), 1) if prof.max_angle else 0.0
            mask = _mask(cat, size, angle)
            mh, mw = mask.shape
            if mw > width or mh > height:
                continue
            x, y = rng.randint(0, width - mw), rng.randint(0, height - mh)
            region = owner[y : y + mh, x : x + mw]
            covered = region[mask]
            ok = True
            if covered.size and (covered >= 0).any():
                lost = np.bincount(covered[covered >= 0], minlength=len(areas))
                for j, area in enumerate(areas):
                    still = int((owner == j).sum()) - int(lost[j])
                    if still < prof.min_visible * area - 1e-9:
                        ok = False
                        break
            if ok:
                region[mask] = idx
                areas.append(int(mask.sum()))
                placed.append((cat, x, y, size, angle))
                break
        else:  # pragma: no cover - 400 attempts with shrinking sizes always succeed in practice
            raise RuntimeError(f"could not place {cat!r} in a {width}x{height} picture")
    objects = []
    for idx, (cat, x, y, size, angle) in enumerate(placed):
        shown = int((owner == idx).sum())
        mask = _mask(cat, size, angle)
        mys, mxs = np.nonzero(mask)
        box = (x + int(mxs.min()), y + int(mys.min()), x + int(mxs.max()) + 1, y + int(mys.max()) + 1)
        visible = round(shown / areas[idx], 4)
        objects.append(SceneObject(category=cat, x=x, y=y, size=size, angle=angle, box=box, visible_fraction=visible))
    return tuple(objects)


def sample_clutter(difficulty: Difficulty, width: int, height: int, rng: random.Random) -> tuple[Clutter, ...]:
    """Draw the distracting shapes of a picture."""
    lo, hi = PROFILES[difficulty].clutter
    shapes = []
    for _ in range(rng.randint(lo, hi) if hi else 0):
        w, h = rng.randint(6, width // 5), rng.randint(6, height // 5)
        x, y = rng.randint(0, width - w), rng.randint(0, height - h)
        color = (rng.randint(0, 255), rng.randint(0, 255), rng.randint(0, 255), rng.randint(140, 255))
        shapes.append(Clutter(shape=rng.choice(("ellipse", "rectangle")), box=(x, y, x + w, y + h), color=color))
    return tuple(shapes)


def build_scene(
    image_id: str,
    scene_type: str,
    categories: Sequence[str],
    difficulty: Difficulty,
    rng: random.Random,
    size: int = 192,
) -> Scene:
    """Lay out a picture of ``categories`` in a ``scene_type`` place."""
    clutter = sample_clutter(difficulty, size, size, rng)
    objects = place_objects(categories, difficulty, size, size, rng)
    return Scene(
        image_id=image_id,
        scene_type=scene_type,
        difficulty=difficulty,
        width=size,
        height=size,
        background=SCENE_TYPES[scene_type].background,
        render_seed=rng.getrandbits(32),
        clutter=clutter,
        objects=objects,
    )


def render(scene: Scene) -> np.ndarray:
    """Draw ``scene`` as an RGB uint8 array (uses only what is visible: no labels, no scene type)."""
    prof = PROFILES[scene.difficulty]
    nrng = make_np_rng("selective_verification/render", scene.render_seed)
    h, w = scene.height, scene.width
    base = np.empty((h, w, 3), dtype=np.float32)
    base[:] = np.asarray(scene.background, dtype=np.float32)
    if prof.gradient:
        ramp = np.linspace(1.0 - prof.gradient / 2, 1.0 + prof.gradient / 2, h, dtype=np.float32)
        base *= ramp[:, None, None]
    if prof.texture:
        coarse = nrng.normal(0.0, prof.texture, size=(h // 8 + 1, w // 8 + 1, 3)).astype(np.float32)
        base += np.kron(coarse, np.ones((8, 8, 1), dtype=np.float32))[:h, :w]
    canvas = Image.fromarray(np.clip(base, 0, 255).astype(np.uint8), "RGB").convert("RGBA")
    if scene.clutter:
        layer = Image.new("RGBA", (w, h), (0, 0, 0, 0))
        draw = ImageDraw.Draw(layer)
        for shape in scene.clutter:
            (draw.ellipse if shape.shape == "ellipse" else draw.rectangle)(shape.box, fill=shape.color)
        canvas.alpha_composite(layer)
    for obj in scene.objects:
        canvas.alpha_composite(_glyph_variant(obj.category, obj.size, obj.angle), (obj.x, obj.y))
    out = np.asarray(canvas.convert("RGB"), dtype=np.float32)
    if prof.noise:
        out = out + nrng.normal(0.0, prof.noise, size=out.shape).astype(np.float32)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def encode_png(pixels: np.ndarray) -> bytes:
    """Encode an RGB array as PNG bytes (deterministic for a given zlib)."""
    buf = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buf, format="PNG", compress_level=6)
    return buf.getvalue()
