"""Deterministic seeding with no global random state.

Every random draw in integrity-gym comes from a generator derived from an explicit tuple of
parts, typically ``(generator version, seed, index)``. The derivation hashes the parts with
SHA-256, so it is identical in every process and on every platform (unlike ``hash()``, which
Python salts per process), and any item can be produced directly without generating the ones
before it.

**Public and secret mode.** By default the derivation is public: anyone with the code and a
seed can rebuild an item, which makes every published result exactly reproducible. With
``IGYM_EVAL_SECRET`` set (at least 16 characters), every derivation is keyed by the secret
(HMAC-SHA-256 instead of SHA-256), so generated documents, scenarios and pictures cannot be
rebuilt from the public code and a seed by anyone who lacks the secret. :func:`data_mode` names
the mode (with a fingerprint of the secret, never the secret) for run records. Hand-written gold
sets are committed files and are public in both modes.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import random
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

import numpy as np

#: The two disjoint halves of every generator's items.
Partition = Literal["train", "eval"]
#: What a task's config may ask for: one partition, or (where a generator interleaves them) both.
PartitionChoice = Literal["train", "eval", "all"]

#: Environment variable holding the eval secret; unset means public mode.
EVAL_SECRET_ENV = "IGYM_EVAL_SECRET"
_MIN_SECRET_CHARS = 16
_PUBLIC_ONLY: ContextVar[bool] = ContextVar("integrity_gym_public_only", default=False)


@contextmanager
def public_derivation() -> Iterator[None]:
    """Derive as in public mode inside this block, in this thread or task only.

    It computes what an outsider with the code but not the secret can compute: the red team's
    replay attack runs in the evaluator's process, where the secret is set.
    """
    token = _PUBLIC_ONLY.set(True)
    try:
        yield
    finally:
        _PUBLIC_ONLY.reset(token)


def eval_secret() -> bytes | None:
    """The eval secret from ``IGYM_EVAL_SECRET``, or None in public mode (or in ``public_derivation``)."""
    if _PUBLIC_ONLY.get():
        return None
    value = os.environ.get(EVAL_SECRET_ENV, "")
    if not value:
        return None
    if len(value) < _MIN_SECRET_CHARS:
        raise ValueError(
            f"{EVAL_SECRET_ENV} must be at least {_MIN_SECRET_CHARS} characters (a short secret can be "
            "guessed from published items); unset it for public mode"
        )
    return value.encode("utf-8")


def data_mode() -> str:
    """``"public"``, or ``"secret:<fingerprint>"`` when items are keyed by the eval secret.

    The fingerprint tells runs made with different secrets apart; it does not reveal the secret.
    """
    secret = eval_secret()
    if secret is None:
        return "public"
    return "secret:" + hmac.new(secret, b"integrity-gym fingerprint", hashlib.sha256).hexdigest()[:12]


def _digest(parts: tuple[object, ...]) -> bytes:
    text = "\x1f".join(f"{type(p).__name__}:{p}" for p in parts).encode("utf-8")
    secret = eval_secret()
    if secret is None:
        return hashlib.sha256(text).digest()
    return hmac.new(secret, text, hashlib.sha256).digest()


def derive_seed(*parts: object) -> int:
    """Return a 64-bit seed determined by ``parts`` alone (same parts, same seed, any process)."""
    return int.from_bytes(_digest(parts)[:8], "big")


def make_rng(*parts: object) -> random.Random:
    """Return a private ``random.Random`` seeded from ``parts``."""
    return random.Random(derive_seed(*parts))


def make_np_rng(*parts: object) -> np.random.Generator:
    """Return a private numpy ``Generator`` seeded from ``parts``."""
    return np.random.default_rng(derive_seed(*parts))


def make_bits(*parts: object) -> np.random.PCG64:
    """Return a private PCG64 bit generator seeded from ``parts``.

    Use its raw words (``random_raw``) where values must not change between numpy versions:
    numpy guarantees the raw stream of a bit generator for a given seed, but not the output of
    ``Generator`` methods (``normal``, ``choice``, ...), which it may change in a release.
    """
    return np.random.PCG64(derive_seed(*parts))


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
