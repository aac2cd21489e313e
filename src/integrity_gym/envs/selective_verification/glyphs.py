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
"""

from __future__ import annotations

import sys
from functools import cache
from pathlib import Path

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
