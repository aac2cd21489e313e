"""Loader for POPE-format question files, so real POPE/COCO data can be used when present.

POPE (Li et al., 2023) ships JSON-lines question files, one object per line, e.g.
``{"question_id": 1, "image": "COCO_val2014_000000310196.jpg", "text": "Is there a snowboard in
the image?", "label": "yes"}``; the Hugging Face re-formatting uses ``question``, ``answer`` and
``image_source`` instead. Both spellings are read. Images come from a folder the user has (COCO
``val2014``); nothing is downloaded. Rows are assigned to train/eval by the SHA-256 of the
picture's id — the file name without folder or image extension, since one format writes
``X.jpg`` where the other writes ``X`` — so every question about a picture lands in the same
partition whichever format it comes from.
"""

from __future__ import annotations

import base64
import io
import json
import re
import threading
from functools import lru_cache
from pathlib import Path

from PIL import Image

from integrity_gym.core.seeding import partition_of, stable_id
from integrity_gym.envs.selective_verification.models import Item

_QUESTION = re.compile(r"^\s*is there (?:an? |any |some )?(.+?) in the (?:image|picture|photo)\s*\?*\s*$", re.I)
_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png")
_YES = {"yes", "true", "1"}
_NO = {"no", "false", "0"}
#: Longest side of a POPE picture once re-encoded for the observation.
MAX_SIDE = 512


def _first(row: dict[str, object], *keys: str) -> object:
    for key in keys:
        if key in row and row[key] is not None:
            return row[key]
    raise ValueError(f"POPE row lacks all of {keys}: {sorted(row)}")


def claim_from_question(question: str) -> tuple[str, str]:
    """Turn 'Is there a dog in the image?' into ('dog', 'There is a dog in the image.')."""
    m = _QUESTION.match(question)
    if not m:
        raise ValueError(f"not a POPE object-presence question: {question!r}")
    obj = m.group(1).strip()
    article = "an" if obj[:1].lower() in "aeiou" else "a"
    return obj, f"There is {article} {obj} in the image."


def picture_id(image: str) -> str:
    """Return the id of a POPE picture: ``dir/COCO_val2014_000000310196.jpg`` -> ``COCO_val2014_000000310196``.

    Both POPE spellings of one picture (``image`` with an extension, ``image_source`` without)
    give the same id, which keys the train/eval partition.
    """
    name = image.strip().replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in _IMAGE_SUFFIXES:
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


class PopeSource:
    """The rows of one POPE question file that fall in a partition, read once."""

    def __init__(
        self,
        questions: str | Path,
        images: str | Path,
        partition: str = "eval",
        eval_fraction: float = 0.2,
        split: str | None = None,
    ) -> None:
        qpath, idir = Path(questions), Path(images)
        if not qpath.is_file():
            raise ValueError(f"POPE question file {qpath} does not exist; pass pope_questions=<a .json/.jsonl file>")
        if not idir.is_dir():
            raise ValueError(f"POPE image folder {idir} does not exist; pass pope_images=<folder of COCO images>")
        if partition not in ("train", "eval", "all"):
            raise ValueError(f"partition must be train, eval or all, not {partition!r}")
        self.split = split or _split_from_name(qpath.name)
        self.items: list[Item] = []
        for lineno, line in enumerate(qpath.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{qpath}:{lineno}: not JSON ({exc.msg})") from exc
            image = str(_first(row, "image", "image_source"))
            picture = picture_id(image)
            if partition != "all" and partition_of(picture, eval_fraction) != partition:
                continue
            category, claim = claim_from_question(str(_first(row, "text", "question")))
            answer = str(_first(row, "label", "answer")).strip().lower()
            if answer not in _YES | _NO:
                raise ValueError(f"{qpath}:{lineno}: label {answer!r} is not yes/no")
            path = idir / image if (idir / image).exists() else idir / f"{image}.jpg"
            if not path.exists():
                raise ValueError(f"{qpath}:{lineno}: image {image} not found in {idir}")
            qid = row.get("question_id", lineno)
            self.items.append(
                Item(
                    item_id=f"pope-{self.split}-{stable_id('pope', self.split, picture, qid, claim)}",
                    source="pope",
                    split=self.split,
                    modality="image",
                    category=category,
                    claim=claim,
                    label=answer in _YES,
                    image_path=str(path),
                )
            )
        if not self.items:
            raise ValueError(f"{qpath} has no questions in the {partition} partition")

    def __len__(self) -> int:
        return len(self.items)

    def item(self, index: int) -> Item:
        """Return row ``index`` of the partition."""
        return self.items[index]

    def item_id(self, index: int) -> str:
        """Return the id of row ``index``."""
        return self.items[index].item_id


def _split_from_name(name: str) -> str:
    for split in ("random", "popular", "adversarial"):
        if split in name.lower():
            return split
    return "pope"


_lock = threading.Lock()


@lru_cache(maxsize=64)
def _encoded(path: str) -> tuple[bytes, int, int]:
    with Image.open(path) as img:
        rgb = img.convert("RGB")
    if max(rgb.size) > MAX_SIDE:
        rgb.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
    buf = io.BytesIO()
    rgb.save(buf, format="PNG")
    return buf.getvalue(), rgb.width, rgb.height


def image_png(path: str) -> tuple[bytes, int, int]:
    """Return a POPE picture as PNG bytes (at most ``MAX_SIDE`` pixels a side), width and height."""
    with _lock:
        return _encoded(path)


def data_url(png: bytes) -> str:
    """Return PNG bytes as a data URL."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
