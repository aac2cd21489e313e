"""Deterministic seeding with no global random state.

Every random draw in integrity-gym comes from a generator derived from an explicit tuple of
parts, typically ``(generator version, seed, index)``. The derivation hashes the parts with
SHA-256, so it is identical in every process and on every platform (unlike ``hash()``, which
Python salts per process), and any item can be produced directly without generating the ones
before it.
"""

from __future__ import annotations

import hashlib
import random
from typing import Literal

import numpy as np

Partition = Literal["train", "eval"]


def _digest(parts: tuple[object, ...]) -> bytes:
    text = "\x1f".join(f"{type(p).__name__}:{p}" for p in parts)
    return hashlib.sha256(text.encode("utf-8")).digest()


def derive_seed(*parts: object) -> int:
    """Return a 64-bit seed determined by ``parts`` alone (same parts, same seed, any process)."""
    return int.from_bytes(_digest(parts)[:8], "big")


def make_rng(*parts: object) -> random.Random:
    """Return a private ``random.Random`` seeded from ``parts``."""
    return random.Random(derive_seed(*parts))


def make_np_rng(*parts: object) -> np.random.Generator:
    """Return a private numpy ``Generator`` seeded from ``parts``."""
    return np.random.default_rng(derive_seed(*parts))


def stable_id(*parts: object, length: int = 16) -> str:
    """Return a short hexadecimal id determined by ``parts`` alone."""
    return _digest(parts).hex()[:length]


def partition_of(key: str, eval_fraction: float = 0.2) -> Partition:
    """Assign ``key`` to the train or eval partition by the SHA-256 of the key.

    The assignment depends on the key only, so it never changes between runs or processes and
    an item can never be in both partitions.
    """
    if not 0.0 < eval_fraction < 1.0:
        raise ValueError(f"eval_fraction must be strictly between 0 and 1, got {eval_fraction}")
    bucket = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") / 2**64
    return "eval" if bucket < eval_fraction else "train"
