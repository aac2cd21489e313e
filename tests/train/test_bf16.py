"""bf16 autocast is on by default only where the hardware computes bf16 natively (no torch needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from integrity_gym.train.grpo import TrainConfig, grpo_args, native_bf16
from integrity_gym.train.sft import SFTConfig

AVX2_ONLY = "processor\t: 0\nflags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw\n"


@pytest.mark.parametrize(
    ("flags", "native"),
    [
        (AVX2_ONLY, False),  # AVX-512 without its bf16 instructions emulates bf16: slower than float32
        (AVX2_ONLY.replace("avx512bw", "avx512bw avx512_bf16"), True),
        (AVX2_ONLY.replace("avx512bw", "avx512bw amx_tile amx_bf16"), True),
        (AVX2_ONLY.replace("avx512bw", "avx512bw xavx512_bf16s"), False),  # a whole flag, not a substring
    ],
)
def test_native_bf16_reads_the_cpus_flags(tmp_path: Path, flags: str, native: bool) -> None:
    # Kills: a default that ignores the CPU (always on, as before, or always off), a substring match.
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(flags)
    assert native_bf16(cpuinfo) is native


def test_no_cpuinfo_means_no_native_bf16(tmp_path: Path) -> None:
    assert native_bf16(tmp_path / "absent") is False


def test_the_configs_default_to_this_machines_answer_and_take_an_explicit_choice() -> None:
    assert TrainConfig().bf16 is native_bf16()
    assert SFTConfig().bf16 is native_bf16()
    assert TrainConfig(bf16=not native_bf16()).bf16 is not native_bf16()


@pytest.mark.parametrize("bf16", [False, True])
def test_trls_own_bf16_follows_the_config(tmp_path: Path, bf16: bool) -> None:
    # Kills: GRPOConfig left at TRL's default (bf16 on), which --no-bf16 then did not turn off.
    pytest.importorskip("trl")
    args = grpo_args(TrainConfig(bf16=bf16), tmp_path)
    assert args.bf16 is bf16
