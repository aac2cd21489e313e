"""The object glyphs scenes are drawn from: COCO categories rendered once from an emoji font.

The PNGs in ``data/glyphs/`` were rendered from Debian's ``fonts-noto-color-emoji`` (Noto Color
Emoji 2.042, SIL Open Font License 1.1; see ``data/glyphs/LICENSE-OFL.txt``) by
``render_glyphs`` and are committed, so neither tests nor runtime need the font. To re-render::

    apt-get install fonts-noto-color-emoji
    python -m integrity_gym.envs.selective_verification.glyphs \
        /usr/share/fonts/truetype/noto/NotoColorEmoji.ttf

Only categories with an emoji that depicts the object itself are used (no stand-ins such as a
fire extinguisher for a fire hydrant, and no fork, whose emoji also shows a knife), so a claim
about a category is a claim about what is drawn.

Scaling and rotating a glyph (``glyph_variant``) is done here in numpy with +, -, *, / and
rounding only, never with Pillow's resampling or numpy's transcendental functions: their results
change between library versions and CPUs, and a glyph's pixels decide both the picture and where
objects may be placed. Pillow only decodes the committed (lossless) PNGs.
"""

from __future__ import annotations

import math
import sys
from functools import cache, lru_cache
from pathlib import Path

import numpy as np
from PIL import Image

GLYPH_DIR = Path(__file__).parent / "data" / "glyphs"
#: Longest side of a committed glyph, in pixels.
GLYPH_SIZE = 72

#: COCO category name -> the emoji drawn for it.
CATEGORY_EMOJI: dict[str, str] = {
    "person": "\U0001f9cd",
    "bicycle": "\U0001f6b2",
    "car": "\U0001f697",
    "motorcycle": "\U0001f3cd",
    "airplane": "\u2708",
    "bus": "\U0001f68c",
    "train": "\U0001f686",
    "truck": "\U0001f69a",
    "boat": "\u26f5",
    "traffic light": "\U0001f6a6",
    "stop sign": "\U0001f6d1",
    "bird": "\U0001f426",
    "cat": "\U0001f408",
    "dog": "\U0001f415",
    "horse": "\U0001f40e",
    "sheep": "\U0001f411",
    "cow": "\U0001f404",
    "elephant": "\U0001f418",
    "bear": "\U0001f43b",
    "zebra": "\U0001f993",
    "giraffe": "\U0001f992",
    "backpack": "\U0001f392",
    "umbrella": "\u2602",
    "handbag": "\U0001f45c",
    "tie": "\U0001f454",
    "suitcase": "\U0001f9f3",
    "frisbee": "\U0001f94f",
    "skis": "\U0001f3bf",
    "sports ball": "\u26bd",
    "kite": "\U0001fa81",
    "skateboard": "\U0001f6f9",
    "bottle": "\U0001f37e",
    "wine glass": "\U0001f377",
    "cup": "\u2615",
    "knife": "\U0001f52a",
    "spoon": "\U0001f944",
    "bowl": "\U0001f963",
    "banana": "\U0001f34c",
    "apple": "\U0001f34e",
    "sandwich": "\U0001f96a",
    "orange": "\U0001f34a",
    "broccoli": "\U0001f966",
    "carrot": "\U0001f955",
    "hot dog": "\U0001f32d",
    "pizza": "\U0001f355",
    "donut": "\U0001f369",
    "cake": "\U0001f382",
    "chair": "\U0001fa91",
    "couch": "\U0001f6cb",
    "potted plant": "\U0001fab4",
    "bed": "\U0001f6cf",
    "toilet": "\U0001f6bd",
    "tv": "\U0001f4fa",
    "laptop": "\U0001f4bb",
    "mouse": "\U0001f5b1",
    "keyboard": "\u2328",
    "cell phone": "\U0001f4f1",
    "book": "\U0001f4d5",
    "clock": "\u23f0",
    "vase": "\U0001f3fa",
    "scissors": "\u2702",
    "teddy bear": "\U0001f9f8",
    "toothbrush": "\U0001faa5",
}
CATEGORIES: tuple[str, ...] = tuple(CATEGORY_EMOJI)


def glyph_path(category: str) -> Path:
    """Path of the committed PNG of ``category``."""
    return GLYPH_DIR / f"{category.replace(' ', '_')}.png"


@cache
def load_glyph(category: str) -> Image.Image:
    """Return the RGBA glyph of ``category`` (cached; the returned image must not be modified)."""
    if category not in CATEGORY_EMOJI:
        raise ValueError(f"unknown category {category!r}; known: {', '.join(CATEGORIES)}")
    path = glyph_path(category)
    if not path.exists():
        raise FileNotFoundError(f"glyph {path} is missing; re-render: `python -m {__name__} FONT`")
    with Image.open(path) as img:
        return img.convert("RGBA")


@cache
def glyph_rgba(category: str) -> np.ndarray:
    """Return the committed glyph of ``category`` as a read-only uint8 RGBA array (straight alpha)."""
    arr = np.array(load_glyph(category), dtype=np.uint8)
    arr.setflags(write=False)
    return arr


@cache
def _taps(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray]:
    """Source indices and weights of a triangle (bilinear) filter from ``n_in`` to ``n_out`` pixels.

    The filter widens with the reduction factor so that shrinking averages every source pixel
    (what "bilinear" means when downsampling). Weights are computed in Python floats and
    normalised with ``math.fsum``, whose result is exactly rounded, so they are the same bits
    everywhere.
    """
    scale = n_in / n_out
    support = max(scale, 1.0)
    rows: list[list[tuple[int, float]]] = []
    for i in range(n_out):
        center = (i + 0.5) * scale
        lo, hi = max(0, math.floor(center - support)), min(n_in, math.ceil(center + support))
        raw = [(j, 1.0 - abs(j + 0.5 - center) / support) for j in range(lo, hi)]
        raw = [(j, w) for j, w in raw if w > 0.0]
        total = math.fsum(w for _, w in raw)
        rows.append([(j, w / total) for j, w in raw])
    width = max(len(r) for r in rows)
    idx = np.zeros((n_out, width), dtype=np.intp)
    weights = np.zeros((n_out, width), dtype=np.float64)
    for i, row in enumerate(rows):
        for k, (j, w) in enumerate(row):
            idx[i, k], weights[i, k] = j, w
    idx.setflags(write=False)
    weights.setflags(write=False)
    return idx, weights


def _resample_rows(arr: np.ndarray, n_out: int) -> np.ndarray:
    # One tap at a time, always in the same order: a float sum's bits depend on its order, and a
    # matrix product would leave the order to the BLAS build.
    idx, weights = _taps(arr.shape[0], n_out)
    out = np.zeros((n_out, *arr.shape[1:]), dtype=np.float64)
    shape = (n_out,) + (1,) * (arr.ndim - 1)
    for k in range(idx.shape[1]):
        out += weights[:, k].reshape(shape) * arr[idx[:, k]]
    return out


def resize(premultiplied: np.ndarray, width: int, height: int) -> np.ndarray:
    """Scale a premultiplied float RGBA array to ``width`` x ``height`` with a triangle filter."""
    if width < 1 or height < 1:
        raise ValueError(f"cannot resize to {width}x{height}; both sides must be at least 1 pixel")
    rows = _resample_rows(premultiplied, height)
    return np.swapaxes(_resample_rows(np.swapaxes(rows, 0, 1), width), 0, 1)


def rotation(angle: float) -> tuple[float, float]:
    """Return (cos, sin) of ``angle`` degrees rounded to 1e-9.

    Rounding to a fixed grid makes the coefficients identical even where two C libraries'
    ``cos`` differ in the last bit, so every pixel coordinate computed from them is too.
    """
    rad = math.radians(angle)
    return round(math.cos(rad), 9) + 0.0, round(math.sin(rad), 9) + 0.0


def rotate(premultiplied: np.ndarray, angle: float) -> np.ndarray:
    """Rotate a premultiplied float RGBA array ``angle`` degrees counter-clockwise, growing the canvas.

    Each output pixel centre is mapped back into the source and sampled bilinearly; outside the
    source is transparent. The output is just large enough to hold the rotated rectangle.
    """
    c, s = rotation(angle)
    h, w = premultiplied.shape[:2]
    out_w = max(1, math.ceil(round(w * abs(c) + h * abs(s), 6)))
    out_h = max(1, math.ceil(round(h * abs(c) + w * abs(s), 6)))
    dx = (np.arange(out_w, dtype=np.float64) + (0.5 - out_w / 2))[None, :]
    dy = (np.arange(out_h, dtype=np.float64) + (0.5 - out_h / 2))[:, None]
    # Inverse map (y points down): the source point that lands on each output pixel centre, in
    # source pixel-index coordinates (pixel j has its centre at j + 0.5).
    sx = (c * dx - s * dy) + (w / 2 - 0.5)
    sy = (s * dx + c * dy) + (h / 2 - 0.5)
    x0, y0 = np.floor(sx), np.floor(sy)
    tx, ty = (sx - x0)[..., None], (sy - y0)[..., None]
    # A border of transparent pixels; indices beyond it are clipped onto it.
    padded = np.pad(premultiplied, ((1, 1), (1, 1), (0, 0)))
    xi, yi = x0.astype(np.intp) + 1, y0.astype(np.intp) + 1

    def at(yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
        sampled: np.ndarray = padded[np.clip(yy, 0, h + 1), np.clip(xx, 0, w + 1)]
        return sampled

    top = at(yi, xi) * (1.0 - tx) + at(yi, xi + 1) * tx
    bottom = at(yi + 1, xi) * (1.0 - tx) + at(yi + 1, xi + 1) * tx
    result: np.ndarray = top * (1.0 - ty) + bottom * ty
    return result


@lru_cache(maxsize=512)
def _scaled(category: str, size: int, alpha_only: bool) -> np.ndarray:
    glyph = glyph_rgba(category)
    h, w = glyph.shape[:2]
    scale = size / max(h, w)
    if alpha_only:
        rgba = glyph[..., 3:].astype(np.float64)
    else:
        rgba = glyph.astype(np.float64)
        rgba[..., :3] = rgba[..., :3] * rgba[..., 3:] / 255.0
    out = resize(rgba, max(2, round(w * scale)), max(2, round(h * scale)))
    out.setflags(write=False)
    return out


def _transformed(category: str, size: int, angle: float, alpha_only: bool) -> np.ndarray:
    out = _scaled(category, size, alpha_only)
    if angle:
        out = rotate(out, angle)
    result: np.ndarray = np.clip(np.rint(out), 0, 255).astype(np.uint8)
    result.setflags(write=False)
    return result


@lru_cache(maxsize=2048)
def glyph_variant(category: str, size: int, angle: float) -> np.ndarray:
    """Return ``category``'s glyph scaled to longest side ``size`` and rotated by ``angle`` degrees.

    The result is a read-only uint8 array of *premultiplied* RGBA (colour already multiplied by
    alpha / 255), ready for the "over" operator. Cached and shared: never modify it.
    """
    return _transformed(category, size, angle, alpha_only=False)


def shading(premultiplied: np.ndarray) -> np.ndarray:
    """Return a premultiplied RGBA layer's grey level (mean of its colour channels), still premultiplied."""
    layer = np.asarray(premultiplied, dtype=np.float64)
    grey: np.ndarray = (layer[..., 0] + layer[..., 1] + layer[..., 2]) / 3.0
    return grey


def tinted(premultiplied: np.ndarray, shadow: tuple[int, int, int], highlight: tuple[int, int, int]) -> np.ndarray:
    """Redraw a premultiplied RGBA layer in two colours: grey level 0 becomes ``shadow``, 255 ``highlight``.

    The glyph keeps its shape and shading but none of its own colours, so a picture's colours do
    not tell which category was drawn. The map is affine in the grey level, so a matcher reading
    grey levels sees the glyph up to brightness and contrast. Premultiplied throughout: colour
    ``shadow * a + grey * (highlight - shadow)`` over 255 per channel never exceeds the coverage
    ``a``. Returns float64 RGBA (only +, -, *, /: the same bits everywhere).
    """
    layer = np.asarray(premultiplied, dtype=np.float64)
    alpha = layer[..., 3:]
    grey = shading(layer)[..., None]
    low = np.asarray(shadow, dtype=np.float64)
    span = np.asarray(highlight, dtype=np.float64) - low
    rgb = low * alpha / 255.0 + grey * span / 255.0
    return np.concatenate([rgb, alpha], axis=-1)


@lru_cache(maxsize=4096)
def glyph_mask(category: str, size: int, angle: float) -> np.ndarray:
    """Return the opaque pixels (alpha >= 128) of ``glyph_variant(category, size, angle)``.

    Channels never mix, so transforming the alpha channel alone gives the variant's alpha bit
    for bit, at a quarter of the cost (placement tries many sizes and angles).
    """
    mask: np.ndarray = _transformed(category, size, angle, alpha_only=True)[..., 0] >= 128
    mask.setflags(write=False)
    return mask


@cache
def render_glyphs(font_path: str, out_dir: Path = GLYPH_DIR, size: int = GLYPH_SIZE) -> list[Path]:
    """Render every category's emoji from a colour emoji font into tight RGBA PNGs.

    Noto Color Emoji is a bitmap (CBDT) font that Pillow loads only at its native size 109, so
    each glyph is drawn at that size, cropped to its opaque pixels and scaled to ``size``.
    """
    from PIL import ImageDraw, ImageFont

    font = ImageFont.truetype(font_path, 109)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for category, emoji in CATEGORY_EMOJI.items():
        canvas = Image.new("RGBA", (160, 160), (0, 0, 0, 0))
        ImageDraw.Draw(canvas).text((8, 8), emoji, font=font, embedded_color=True)
        box = canvas.getbbox()
        if box is None:
            raise ValueError(f"the font has no glyph for {category!r} ({emoji!r})")
        glyph = canvas.crop(box)
        scale = size / max(glyph.size)
        new_size = (max(1, round(glyph.width * scale)), max(1, round(glyph.height * scale)))
        glyph = glyph.resize(new_size, Image.Resampling.LANCZOS)
        path = out_dir / glyph_path(category).name
        glyph.save(path, optimize=True)
        written.append(path)
    return written


if __name__ == "__main__":  # pragma: no cover - run once by a maintainer who has the font
    default = "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"
    paths = render_glyphs(sys.argv[1] if len(sys.argv) > 1 else default)
    print(f"wrote {len(paths)} glyphs to {GLYPH_DIR}")
