"""Offline scene generator: which objects a picture holds, where they go, and how it is drawn.

A scene has a *type* (kitchen, street, farm, ...) drawn from a prior; each type gives every
category a presence rate, so objects co-occur the way they do in photographs (cups with bowls,
zebras with giraffes) and POPE's popular/adversarial negatives mean something. Composition
(cheap: categories only) is separate from placement (positions checked against glyph masks so
every object stays at least ``min_visible`` visible) and from drawing (pixels), so labels and
statistics never need pixels.

Difficulty sets object size, rotation, the occlusion allowed, clutter shapes, background texture
and pixel noise. Drawing uses only arithmetic whose results IEEE 754 fixes, so a scene has the
same pixels on every supported install (see ``render``).

Nothing global about a picture tells what is in it (generator version 2): the background colour
is drawn from one range for every kind of place, and every object is drawn in its glyph's shading
(its grey levels) mapped onto a two-colour palette drawn for that object from one range for all
categories, so neither the background nor the colours of a picture say which kind of place it
is or which objects it holds (version 1 gave each kind of place its own background and every
object its emoji's colours; a classifier on colour histograms alone then answered the claims).
"""

from __future__ import annotations

import hashlib
import io
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image

from integrity_gym.core.seeding import make_bits
from integrity_gym.envs.selective_verification.glyphs import CATEGORIES, glyph_mask, glyph_variant, tinted
from integrity_gym.envs.selective_verification.models import Clutter, Difficulty, Scene, SceneObject


@dataclass(frozen=True)
class SceneType:
    """A kind of place: how common it is and each category's presence rate (no colour of its own)."""

    name: str
    prior: float
    rates: dict[str, float]


_TYPES = (
    SceneType("street", 0.15, {
        "person": 0.8, "car": 0.7, "bus": 0.35, "truck": 0.35, "motorcycle": 0.3, "bicycle": 0.35,
        "traffic light": 0.5, "stop sign": 0.3, "handbag": 0.2, "backpack": 0.2, "umbrella": 0.15,
        "dog": 0.1, "bird": 0.1, "cell phone": 0.1}),
    SceneType("kitchen", 0.12, {
        "bowl": 0.5, "cup": 0.5, "knife": 0.4, "spoon": 0.35, "bottle": 0.4,
        "banana": 0.25, "apple": 0.25, "orange": 0.2, "broccoli": 0.2, "carrot": 0.2, "cake": 0.1,
        "person": 0.3, "potted plant": 0.1, "clock": 0.15, "scissors": 0.1, "wine glass": 0.15}),
    SceneType("dining", 0.11, {
        "pizza": 0.35, "sandwich": 0.25, "hot dog": 0.15, "donut": 0.2, "cake": 0.25, "cup": 0.45,
        "wine glass": 0.45, "knife": 0.45, "spoon": 0.3, "bowl": 0.35, "bottle": 0.35,
        "chair": 0.5, "person": 0.55, "vase": 0.15}),
    SceneType("living room", 0.11, {
        "couch": 0.6, "tv": 0.55, "chair": 0.45, "potted plant": 0.4, "book": 0.45, "clock": 0.3,
        "vase": 0.25, "cat": 0.2, "dog": 0.15, "laptop": 0.2, "teddy bear": 0.1, "cell phone": 0.2,
        "person": 0.4, "cup": 0.2}),
    SceneType("office", 0.09, {
        "laptop": 0.6, "keyboard": 0.5, "mouse": 0.5, "cell phone": 0.4, "book": 0.4, "chair": 0.5,
        "cup": 0.3, "tv": 0.25, "clock": 0.2, "scissors": 0.2, "person": 0.5, "backpack": 0.15,
        "potted plant": 0.15, "bottle": 0.15, "tie": 0.15}),
    SceneType("bedroom", 0.06, {
        "bed": 0.8, "teddy bear": 0.35, "book": 0.35, "clock": 0.35, "cell phone": 0.25,
        "laptop": 0.2, "cat": 0.2, "dog": 0.1, "tv": 0.2, "potted plant": 0.15, "person": 0.2}),
    SceneType("bathroom", 0.05, {
        "toilet": 0.8, "toothbrush": 0.6, "cup": 0.25, "bottle": 0.25, "scissors": 0.2,
        "potted plant": 0.1, "person": 0.1, "cat": 0.05, "vase": 0.1}),
    SceneType("farm", 0.07, {
        "cow": 0.5, "sheep": 0.5, "horse": 0.45, "dog": 0.3, "bird": 0.3, "person": 0.45,
        "truck": 0.25, "cat": 0.15, "bicycle": 0.1, "carrot": 0.1, "apple": 0.1}),
    SceneType("safari", 0.05, {
        "elephant": 0.55, "giraffe": 0.5, "zebra": 0.5, "bird": 0.3, "bear": 0.15, "truck": 0.2,
        "person": 0.2, "car": 0.1}),
    SceneType("park", 0.09, {
        "person": 0.8, "dog": 0.35, "frisbee": 0.25, "kite": 0.3, "sports ball": 0.3,
        "bicycle": 0.3, "skateboard": 0.25, "bird": 0.3, "backpack": 0.25, "umbrella": 0.15,
        "bear": 0.05, "cell phone": 0.15, "handbag": 0.15}),
    SceneType("travel", 0.06, {
        "airplane": 0.5, "suitcase": 0.55, "boat": 0.4, "train": 0.35, "person": 0.75,
        "backpack": 0.4, "handbag": 0.3, "cell phone": 0.25, "tie": 0.15, "bus": 0.2,
        "umbrella": 0.1}),
    SceneType("snow", 0.04, {
        "skis": 0.7, "person": 0.8, "backpack": 0.3, "dog": 0.1, "car": 0.1, "bird": 0.05,
        "umbrella": 0.05}),
)  # fmt: skip

SCENE_TYPES: dict[str, SceneType] = {t.name: t for t in _TYPES}
#: Objects per picture.
MIN_OBJECTS, MAX_OBJECTS = 3, 6
#: Every channel of a background colour, whatever the kind of place (uniform, inclusive).
BACKGROUND_RANGE = (150, 250)
#: Every channel of an object's palette: the colour of its darkest and of its lightest shading.
SHADOW_RANGE, HIGHLIGHT_RANGE = (0, 110), (140, 255)
#: The least difference, on some channel, between an object's light colour and the background, so
#: a light object never melts into the picture.
MIN_CONTRAST = 60


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
    rng: random.Random, *, about: str | None = None, present: bool = True
) -> tuple[str, tuple[str, ...]]:
    """Draw a scene type and the categories in it; with ``about``, one where its presence is ``present``.

    With ``about``, the type is drawn from P(type | ``about`` present) and the categories as if
    ``about`` were present; when it must be absent it is then swapped for a category of that type
    not yet in the picture (drawn by presence rate). So the surroundings, the number of objects and
    everything drawn from them (sizes, positions, occlusion) are distributed the same whether a
    claim about ``about`` is true or false: only the objects themselves tell.
    """
    weights = type_weights_given(about) if about else [t.prior for t in _TYPES]
    stype = rng.choices(_TYPES, weights=weights)[0]
    cats = sorted(stype.rates)
    for _ in range(100):
        chosen = [c for c in cats if rng.random() < stype.rates[c]]
        if about and about not in chosen:
            chosen.append(about)
        if MIN_OBJECTS <= len(chosen) <= MAX_OBJECTS:
            break
    else:  # Rates too sparse for the bounds (never expected): fill by weight deterministically.
        fill = sorted((c for c in cats if c != about), key=lambda c: -stype.rates[c])
        chosen = fill[: MIN_OBJECTS - (1 if about else 0)] + ([about] if about else [])
    if about and not present:
        spare = [c for c in cats if c not in chosen]
        if spare:
            substitute = rng.choices(spare, weights=[stype.rates[c] for c in spare])[0]
        else:
            substitute = rng.choice([c for c in CATEGORIES if c not in chosen])
        chosen = [substitute if c == about else c for c in chosen]
    return stype.name, tuple(sorted(chosen))


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
    shown: list[int] = []  # pixels of each placed object still visible, kept up to date
    placed: list[tuple[str, int, int, int, float]] = []
    for idx, cat in enumerate(order):
        shrink = 1.0
        for attempt in range(400):
            if attempt and attempt % 40 == 0:
                shrink *= 0.85
            size = max(8, round(side * rng.uniform(*prof.size) * shrink))
            angle = round(rng.uniform(-prof.max_angle, prof.max_angle), 1) if prof.max_angle else 0.0
            mask = glyph_mask(cat, size, angle)
            mh, mw = mask.shape
            if mw > width or mh > height:
                continue
            x, y = rng.randint(0, width - mw), rng.randint(0, height - mh)
            region = owner[y : y + mh, x : x + mw]
            covered = region[mask]
            covered = covered[covered >= 0]
            lost = np.bincount(covered, minlength=len(areas)) if covered.size else np.zeros(len(areas), np.int64)
            if all(shown[j] - int(lost[j]) >= prof.min_visible * areas[j] - 1e-9 for j in range(len(areas))):
                region[mask] = idx
                shown = [shown[j] - int(lost[j]) for j in range(len(areas))]
                areas.append(int(mask.sum()))
                shown.append(areas[-1])
                placed.append((cat, x, y, size, angle))
                break
        else:  # pragma: no cover - 400 attempts with shrinking sizes always succeed in practice
            raise RuntimeError(f"could not place {cat!r} in a {width}x{height} picture")
    objects = []
    for idx, (cat, x, y, size, angle) in enumerate(placed):
        mask = glyph_mask(cat, size, angle)
        mys, mxs = np.nonzero(mask)
        box = (x + int(mxs.min()), y + int(mys.min()), x + int(mxs.max()) + 1, y + int(mys.max()) + 1)
        visible = round(shown[idx] / areas[idx], 4)
        objects.append(SceneObject(category=cat, x=x, y=y, size=size, angle=angle, box=box, visible_fraction=visible))
    return tuple(objects)


def sample_background(rng: random.Random) -> tuple[int, int, int]:
    """Draw a background colour from the one range every kind of place shares."""
    lo, hi = BACKGROUND_RANGE
    return rng.randint(lo, hi), rng.randint(lo, hi), rng.randint(lo, hi)


def sample_palette(
    rng: random.Random, background: tuple[int, int, int]
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """Draw an object's (shadow, highlight) colours, the same way for every category.

    The highlight differs from the background by at least ``MIN_CONTRAST`` on some channel
    (redrawn until it does; the ranges make a few draws enough).
    """
    shadow = (rng.randint(*SHADOW_RANGE), rng.randint(*SHADOW_RANGE), rng.randint(*SHADOW_RANGE))
    while True:
        highlight = (rng.randint(*HIGHLIGHT_RANGE), rng.randint(*HIGHLIGHT_RANGE), rng.randint(*HIGHLIGHT_RANGE))
        if max(abs(h - b) for h, b in zip(highlight, background, strict=True)) >= MIN_CONTRAST:
            return shadow, highlight


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
    """Lay out a picture of ``categories`` in a ``scene_type`` place.

    The background and every object's palette are drawn after the layout and independently of the
    kind of place and of the categories: the picture's colours say nothing about what it holds.
    """
    clutter = sample_clutter(difficulty, size, size, rng)
    placed = place_objects(categories, difficulty, size, size, rng)
    background = sample_background(rng)
    objects = []
    for obj in placed:
        shadow, highlight = sample_palette(rng, background)
        objects.append(obj.model_copy(update={"shadow": shadow, "highlight": highlight}))
    return Scene(
        image_id=image_id,
        scene_type=scene_type,
        difficulty=difficulty,
        width=size,
        height=size,
        background=background,
        render_seed=rng.getrandbits(32),
        clutter=clutter,
        objects=tuple(objects),
    )


def gaussian_noise(bits: np.random.BitGenerator, shape: tuple[int, ...], sigma: float) -> np.ndarray:
    """Draw bell-shaped noise of standard deviation ``sigma`` from a bit generator's raw words.

    Each value is an Irwin-Hall sum of the four 16-bit lanes of one raw 64-bit word, centred and
    scaled (bounded at +-3.46 sigma). Only the raw stream, which numpy keeps stable for a given
    bit generator and seed, and integer and IEEE arithmetic are used; ``Generator.normal`` may
    change between numpy versions.
    """
    n = math.prod(shape)
    raw = bits.random_raw(n) if n else np.zeros(0, dtype=np.uint64)
    lanes = np.asarray(raw, dtype=np.uint64)
    mask = np.uint64(0xFFFF)
    total = lanes & mask
    for shift in (16, 32, 48):
        total = total + ((lanes >> np.uint64(shift)) & mask)
    # Sum of four uniform integers on 0..65535: mean 2 * 65535, variance 4 * (65536**2 - 1) / 12.
    scale = sigma / math.sqrt(4 * (65536**2 - 1) / 12)
    return ((total.astype(np.int64) - 2 * 65535).astype(np.float64) * scale).reshape(shape)


def shape_mask(shape: str, box: tuple[int, int, int, int], width: int, height: int) -> np.ndarray:
    """Return the pixels a clutter ``shape`` covers: those whose centre lies inside it.

    The box is half-open, (x0, y0) included and (x1, y1) excluded; the ellipse is the one inscribed
    in the box. The test runs on integers (coordinates doubled), so it is exact.
    """
    x0, y0, x1, y1 = box
    xs = 2 * np.arange(width, dtype=np.int64)[None, :] + 1
    ys = 2 * np.arange(height, dtype=np.int64)[:, None] + 1
    if shape == "rectangle":
        return (xs > 2 * x0) & (xs < 2 * x1) & (ys > 2 * y0) & (ys < 2 * y1)
    if shape == "ellipse":
        rx, ry = x1 - x0, y1 - y0  # doubled radii
        return (xs - (x0 + x1)) ** 2 * ry**2 + (ys - (y0 + y1)) ** 2 * rx**2 <= rx**2 * ry**2
    raise ValueError(f"unknown clutter shape {shape!r}; use ellipse or rectangle")


def _over(below: np.ndarray, colour: np.ndarray, alpha: np.ndarray | float) -> np.ndarray:
    # Porter-Duff "over" with a premultiplied colour: out = colour + below * (255 - alpha) / 255.
    return colour + below * (255.0 - alpha) / 255.0


def over(canvas: np.ndarray, premultiplied: np.ndarray, x: int, y: int) -> None:
    """Composite a premultiplied RGBA layer onto the opaque float RGB ``canvas`` at (x, y), in place.

    Parts outside the canvas are dropped.
    """
    h, w = canvas.shape[:2]
    lh, lw = premultiplied.shape[:2]
    cx0, cy0, cx1, cy1 = max(x, 0), max(y, 0), min(x + lw, w), min(y + lh, h)
    if cx0 >= cx1 or cy0 >= cy1:
        return
    layer = premultiplied[cy0 - y : cy1 - y, cx0 - x : cx1 - x].astype(np.float64)
    region = canvas[cy0:cy1, cx0:cx1]
    region[...] = _over(region, layer[..., :3], layer[..., 3:])


def render(scene: Scene) -> np.ndarray:
    """Draw ``scene`` as an RGB uint8 array (uses only what is visible: no labels, no scene type).

    Everything is numpy arithmetic with results fixed by IEEE 754 (no Pillow drawing, no
    transcendental functions, no distribution sampling), so a scene gives the same pixels with
    every supported numpy and Pillow.
    """
    prof = PROFILES[scene.difficulty]
    bits = make_bits("selective_verification/render", scene.render_seed)
    h, w = scene.height, scene.width
    canvas = np.empty((h, w, 3), dtype=np.float64)
    canvas[:] = np.asarray(scene.background, dtype=np.float64)
    if prof.gradient:
        ramp = np.arange(h, dtype=np.float64) * prof.gradient / max(h - 1, 1) + (1.0 - prof.gradient / 2)
        canvas *= ramp[:, None, None]
    if prof.texture:
        coarse = gaussian_noise(bits, (h // 8 + 1, w // 8 + 1, 3), prof.texture)
        canvas += np.repeat(np.repeat(coarse, 8, axis=0), 8, axis=1)[:h, :w]
    np.clip(canvas, 0.0, 255.0, out=canvas)
    for shape in scene.clutter:
        *rgb, a = shape.color
        covered = shape_mask(shape.shape, shape.box, w, h)
        canvas[covered] = _over(canvas[covered], np.array([v * a / 255 for v in rgb]), float(a))
    for obj in scene.objects:
        layer = glyph_variant(obj.category, obj.size, obj.angle)
        if obj.shadow is not None and obj.highlight is not None:
            layer = tinted(layer, obj.shadow, obj.highlight)
        over(canvas, layer, obj.x, obj.y)
    if prof.noise:
        canvas += gaussian_noise(bits, (h, w, 3), prof.noise)
    return np.clip(np.rint(canvas), 0, 255).astype(np.uint8)


def pixel_digest(pixels: np.ndarray) -> str:
    """Return the SHA-256 of a picture's decoded content: its shape, dtype and pixel bytes."""
    arr = np.ascontiguousarray(pixels)
    header = f"{arr.dtype.str}:{'x'.join(map(str, arr.shape))}:".encode()
    return hashlib.sha256(header + arr.tobytes()).hexdigest()


def encode_png(pixels: np.ndarray) -> bytes:
    """Encode an RGB array as PNG bytes (deterministic for a given zlib)."""
    buf = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(buf, format="PNG", compress_level=6)
    return buf.getvalue()
