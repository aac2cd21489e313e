from __future__ import annotations

import subprocess
import sys

import pytest

from integrity_gym.core.seeding import derive_seed, make_np_rng, make_rng, partition_of, stable_id


def test_derivation_is_the_same_in_another_process() -> None:
    code = (
        "from integrity_gym.core.seeding import derive_seed, partition_of; "
        "print(derive_seed('x', 1, 2), partition_of('doc-7'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(derive_seed("x", 1, 2)), partition_of("doc-7")]


def test_parts_are_typed_and_ordered() -> None:
    assert derive_seed(1, 2) != derive_seed(2, 1)
    assert derive_seed("1") != derive_seed(1)
    assert make_rng("a", 3).random() == make_rng("a", 3).random()
    assert make_np_rng("a").integers(1 << 30) == make_np_rng("a").integers(1 << 30)
    assert len(stable_id("x", length=12)) == 12


def test_partition_is_a_stable_split_of_roughly_the_asked_size() -> None:
    keys = [f"item-{i}" for i in range(5000)]
    share = sum(partition_of(k) == "eval" for k in keys) / len(keys)
    assert 0.17 < share < 0.23
    assert [partition_of(k, 0.5) for k in keys[:50]] == [partition_of(k, 0.5) for k in keys[:50]]
    with pytest.raises(ValueError, match="eval_fraction"):
        partition_of("x", 1.0)
