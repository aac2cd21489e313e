"""A synthetic JSONL corpus made from generated scenarios' sources (for tests, demos, benchmarks)."""

from __future__ import annotations

import json
from pathlib import Path

from integrity_gym.envs.information_integrity.generator import generate
from integrity_gym.envs.information_integrity.models import DIFFICULTIES


def write_synthetic_corpus(folder: str | Path, n_documents: int, *, seed: int = 0, per_file: int = 1000) -> int:
    """Write ``n_documents`` documents as JSONL files under ``folder``; return the number written."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    written, index, handle, file_no = 0, 0, None, 0
    try:
        while written < n_documents:
            scenario = generate(DIFFICULTIES[index % 3], seed * 1_000_003 + index, "train")
            index += 1
            for source in scenario.sources:
                if written >= n_documents:
                    break
                if written % per_file == 0:
                    if handle:
                        handle.close()
                    handle = (out / f"part-{file_no:04d}.jsonl").open("w", encoding="utf-8")
                    file_no += 1
                doc = {
                    "id": f"{scenario.id}/{source.id}",
                    "url": source.url,
                    "title": source.title,
                    "text": source.text,
                    "date": source.date.isoformat(),
                }
                assert handle is not None
                handle.write(json.dumps(doc) + "\n")
                written += 1
    finally:
        if handle:
            handle.close()
    return written
