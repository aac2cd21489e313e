"""Pictures are drawn with arithmetic whose results are fixed, so every install draws the same ones.

The primitives (scaling, rotation, shape filling, compositing, noise) are checked against what
they must do; whole pictures, as an agent receives them, are pinned by the hash of their pixels.
"""

import base64
import io

import numpy as np
import pytest
from PIL import Image, ImageDraw

import integrity_gym
from integrity_gym.core.seeding import derive_seed, make_bits, public_derivation
from integrity_gym.envs.selective_verification.generator import GeneratedSource
from integrity_gym.envs.selective_verification.glyphs import glyph_mask, glyph_variant, resize, rotate, rotation, tinted
from integrity_gym.envs.selective_verification.scenes import gaussian_noise, over, pixel_digest, render, shape_mask


def _premultiplied(h: int, w: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    alpha = rng.integers(0, 256, size=(h, w, 1)).astype(np.float64)
    colour = rng.integers(0, 256, size=(h, w, 3)).astype(np.float64) * alpha / 255.0
    return np.concatenate([colour, alpha], axis=-1)


@pytest.mark.parametrize(("h", "w"), [(5, 7), (6, 6), (4, 9)])
def test_right_angle_rotations_move_every_pixel_counter_clockwise(h: int, w: int) -> None:
    arr = _premultiplied(h, w)
    # np.rot90 turns an array as displayed (rows down) counter-clockwise
    assert np.array_equal(rotate(arr, 90.0), np.rot90(arr, 1))
    assert np.array_equal(rotate(arr, -90.0), np.rot90(arr, -1))
    assert np.array_equal(rotate(arr, 180.0), np.rot90(arr, 2))


def test_a_small_positive_angle_lifts_the_right_end() -> None:
    bar = np.zeros((21, 41, 4))
    bar[9:12, 2:39] = 255.0
    turned = rotate(bar, 20.0)
    ys, xs = np.nonzero(turned[..., 3] > 128)
    left, right = ys[xs < xs.min() + 3].mean(), ys[xs > xs.max() - 3].mean()
    assert right < left - 8  # y points down: the right end is higher
    assert turned[..., 3].sum() == pytest.approx(bar[..., 3].sum(), rel=0.02)  # coverage is kept
    assert turned.shape[:2] == (34, 46)  # ceil(21 cos + 41 sin), ceil(41 cos + 21 sin)


def test_rotation_coefficients_sit_on_a_fixed_grid() -> None:
    assert rotation(30.0) == (0.866025404, 0.5)
    assert rotation(-12.3) == (0.977045574, -0.213030386)
    assert rotation(90.0) == (0.0, 1.0)
    assert rotation(180.0) == (-1.0, 0.0)


def test_resize_keeps_identity_constants_and_linear_ramps() -> None:
    arr = _premultiplied(9, 11)
    assert np.array_equal(resize(arr, 11, 9), arr)
    flat = np.full((72, 60, 4), 77.0)
    assert np.allclose(resize(flat, 23, 31), 77.0, rtol=0, atol=1e-12)
    ramp = np.broadcast_to(np.arange(72, dtype=np.float64)[None, :, None], (4, 72, 4))
    out = resize(ramp, 24, 4)  # a reduction by 3: output i sits over source (i + 0.5) * 3 - 0.5
    expected = (np.arange(24) + 0.5) * 3 - 0.5
    assert np.allclose(out[0, 1:-1, 0], expected[1:-1], rtol=0, atol=1e-9)
    big = resize(ramp, 144, 4)  # enlarging interpolates between neighbours
    assert np.allclose(big[0, 1:-1, 0], ((np.arange(144) + 0.5) / 2 - 0.5)[1:-1], rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match="at least 1 pixel"):
        resize(arr, 0, 3)


def test_glyph_variants_are_premultiplied_and_scaled_to_their_longest_side() -> None:
    variant = glyph_variant("dog", 40, 0.0)
    assert max(variant.shape[:2]) == 40 and variant.dtype == np.uint8
    assert (variant[..., :3] <= variant[..., 3:]).all()  # colour never exceeds its coverage
    assert not variant.flags.writeable
    turned = glyph_variant("dog", 40, 30.0)
    assert turned.shape[0] > variant.shape[0] and turned.shape[1] > variant.shape[1]


@pytest.mark.parametrize(("category", "size", "angle"), [("dog", 40, 0.0), ("bus", 23, -17.4), ("skis", 61, 33.9)])
def test_placement_masks_are_the_drawn_glyphs_opaque_pixels(category: str, size: int, angle: float) -> None:
    assert np.array_equal(glyph_mask(category, size, angle), glyph_variant(category, size, angle)[..., 3] >= 128)


def test_compositing_is_the_over_operator_on_premultiplied_colour() -> None:
    canvas = np.full((4, 4, 3), 100.0)
    layer = np.zeros((2, 2, 4), dtype=np.uint8)
    layer[0, 0] = (100, 0, 128, 128)  # half-covering
    layer[0, 1] = (10, 20, 30, 255)  # opaque
    over(canvas, layer, 3, 3)  # only the top-left layer pixel lands on the canvas
    assert canvas[3, 3].tolist() == [149.80392156862746, 49.80392156862745, 177.80392156862746]
    over(canvas, layer, 0, 0)
    assert canvas[0, 1].tolist() == [10.0, 20.0, 30.0]
    assert canvas[1, 0].tolist() == canvas[1, 1].tolist() == [100.0, 100.0, 100.0]  # transparent
    over(canvas, layer, 9, 9)  # wholly outside: nothing happens
    assert canvas[2, 2].tolist() == [100.0, 100.0, 100.0]


def test_tinting_maps_the_grey_level_onto_the_palette_and_keeps_coverage() -> None:
    layer = np.zeros((1, 3, 4), dtype=np.uint8)
    layer[0, 0] = (255, 255, 255, 255)  # white, opaque: the highlight
    layer[0, 1] = (0, 0, 0, 255)  # black, opaque: the shadow
    layer[0, 2] = (60, 30, 0, 128)  # half-covering, grey 30 premultiplied (straight 59.77)
    out = tinted(layer, (10, 20, 30), (200, 150, 250))
    assert out[0, 0].tolist() == [200.0, 150.0, 250.0, 255.0]
    assert out[0, 1].tolist() == [10.0, 20.0, 30.0, 255.0]
    assert out[0, 2, 3] == 128 and (out[0, 2, :3] <= 128).all()
    straight = out[0, 2, :3] * 255 / 128
    assert straight == pytest.approx([10 + 190 * 30 / 128, 20 + 130 * 30 / 128, 30 + 220 * 30 / 128])
    variant = glyph_variant("banana", 40, 12.5)
    assert (tinted(variant, (0, 0, 0), (255, 255, 255))[..., :3] <= variant[..., 3:]).all()


def test_clutter_shapes_cover_the_pixels_whose_centres_lie_inside() -> None:
    rect = shape_mask("rectangle", (2, 3, 6, 8), 10, 10)
    assert rect.sum() == 20 and rect[3:8, 2:6].all()
    circle = shape_mask("ellipse", (0, 0, 10, 10), 12, 12)
    assert circle.sum() == 80 and not circle[:, 10:].any()
    assert np.array_equal(circle[:10, :10], circle[:10, :10][::-1]) and np.array_equal(circle, circle.T)
    oval = shape_mask("ellipse", (0, 0, 10, 6), 12, 8)
    assert oval.sum() == 48 and oval[0].tolist() == [0, 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0]
    with pytest.raises(ValueError, match="unknown clutter shape"):
        shape_mask("star", (0, 0, 4, 4), 8, 8)


def test_make_bits_is_the_pcg64_stream_of_the_derived_seed() -> None:
    # The renderer's noise comes from make_bits: exactly the PCG64 it built before, so golden
    # pixels stay put, and a raw stream numpy guarantees (pinned words).
    with public_derivation():
        bits = make_bits("selective_verification/render", 7)
        assert isinstance(bits, np.random.PCG64)
        assert bits.random_raw(3).tolist() == [13688548645585963062, 196572659081536486, 16393814947943017090]
        twin = np.random.PCG64(derive_seed("selective_verification/render", 7)).random_raw(3)
        assert make_bits("selective_verification/render", 7).random_raw(3).tolist() == twin.tolist()
        assert make_bits("selective_verification/render", 8).random_raw(1)[0] != twin[0]


def test_noise_comes_from_raw_bits_with_the_asked_spread() -> None:
    z = gaussian_noise(np.random.PCG64(1), (200_000,), 2.0)
    assert z[:3].tolist() == [2.153011886661029, 3.2986560885536718, -3.7402317858228025]
    assert abs(z.mean()) < 0.02 and z.std() == pytest.approx(2.0, abs=0.02)
    assert np.abs(z).max() <= 2.0 * np.sqrt(12.0)  # four 16-bit lanes: bounded at sqrt(12) sigma
    assert gaussian_noise(np.random.PCG64(1), (0,), 2.0).shape == (0,)


def test_rendering_never_uses_pillow_resampling_or_drawing(monkeypatch: pytest.MonkeyPatch) -> None:
    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("rendering must not call Pillow's resampling, drawing or compositing")

    for name in ("resize", "rotate", "transform", "alpha_composite", "paste", "thumbnail"):
        monkeypatch.setattr(Image.Image, name, forbidden)
    monkeypatch.setattr(ImageDraw, "Draw", forbidden)
    glyph_variant.cache_clear()
    glyph_mask.cache_clear()
    for difficulty in ("easy", "medium", "hard"):
        item = GeneratedSource("adversarial", "eval", seed=2, difficulty=difficulty).item(1)  # type: ignore[arg-type]
        assert item.scene is not None
        assert render(item.scene).shape == (192, 192, 3)
    assert glyph_variant.cache_info().currsize > 0 and glyph_mask.cache_info().currsize > 0


def test_pixel_digest_covers_shape_and_content() -> None:
    a = np.zeros((4, 6, 3), dtype=np.uint8)
    assert pixel_digest(a) != pixel_digest(a.reshape(6, 4, 3))
    b = a.copy()
    b[3, 5, 2] = 1
    assert pixel_digest(a) != pixel_digest(b)


#: (task, reset seed) -> SHA-256 of the decoded pixels of the observed picture. No helper writes
#: these: after a deliberate change of the pictures (a GENERATOR_VERSION bump), print the new digests
#: with ``pixel_digest`` of each observed picture and paste them here. Version 3 (gen-v2): backgrounds
#: and object palettes drawn apart from the scene type and categories; every item its own picture.
PINNED = {
    ("balanced", 0): "ab4c498a844ea1fff067133d355d570c034200b95cc0a06e3f0c45c10a46d6f9",
    ("balanced", 7): "5ff7a942636754bd837df819ec351d715fd20386ff66afae230f84b3d8900a24",
    ("random", 0): "29a5454295341a9e7a81cc20e1e4a36cafc88b269beca02305bd69940363443b",
    ("popular", 7): "9da2ae0ad818d2d1ae89a8aac1ec56ab879fd16e3b9165a2525ef5ea441df158",
    ("adversarial", 0): "a7b2e241e31aad8a17638d7da666387ed72d4c01b97e5ddfb99c03bda04d08b7",
    ("adversarial", 7): "4ec6c19fdc1a404751738278ae7264cf535a1766212c5bd71990d8882d949560",
    ("all", 7): "8366b40e2796c4073b76d81c2939e9f8115a35cd26a6ae780bddaf0535113716",
}


@pytest.mark.parametrize(("task", "seed"), sorted(PINNED))
def test_observed_pictures_are_pinned_by_their_pixels(task: str, seed: int) -> None:
    # the task's current id, whatever its version: the pin is on what (task, seed) shows
    (spec,) = [s for s in integrity_gym.list_tasks() if s.env == "selective_verification" and s.name == task]
    env = integrity_gym.make(spec.id)
    obs = env.reset(seed=seed)
    assert obs.image is not None and obs.image.startswith("data:image/png;base64,")
    with Image.open(io.BytesIO(base64.b64decode(obs.image.partition(",")[2]))) as img:
        pixels = np.asarray(img.convert("RGB"))
    assert pixels.shape == (obs.image_height, obs.image_width, 3)
    assert pixel_digest(pixels) == PINNED[(task, seed)]
