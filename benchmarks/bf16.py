"""bf16 autocast against float32 for ``igym train`` on this machine's CPU (the train extra).

Prints one JSON object: the CPU's bf16-related flags, what ``train.grpo.native_bf16`` decides, and
for the bundled SmolLM2-135M the median seconds of one optimisation pass (forward and backward over
one sequence of ``TOKENS`` tokens, the size of a multi-step episode) and of one greedy reply of
``NEW_TOKENS`` tokens, each in float32 and under bf16 autocast (float32 weights, as training runs),
with the ratio bf16 / float32 measured in the same run (below 1: bf16 is faster). Repeats alternate
the two modes so that a load change on the shared cores falls on both.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from pathlib import Path
from typing import Any

import torch

from integrity_gym.train.grpo import bf16_autocast, native_bf16
from integrity_gym.train.model import load_model

TOKENS = 1500
NEW_TOKENS = 32
REPEATS = 5


def seconds(fn: Any) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    torch.manual_seed(0)
    model, tokenizer = load_model("smollm2")
    ids = torch.randint(10, len(tokenizer) - 10, (1, TOKENS))
    prompt = ids[:, :200]

    def optimise() -> None:
        model.zero_grad(set_to_none=True)
        model(input_ids=ids, labels=ids).loss.backward()

    def reply() -> None:
        with torch.no_grad():
            model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=NEW_TOKENS,
                           min_new_tokens=NEW_TOKENS, do_sample=False, pad_token_id=tokenizer.eos_token_id)  # fmt: skip

    times: dict[str, dict[str, list[float]]] = {"optimise": {"float32": [], "bf16": []},
                                                "reply": {"float32": [], "bf16": []}}  # fmt: skip
    for name, fn in (("optimise", optimise), ("reply", reply)):
        for mode in ("float32", "bf16"):  # one untimed pass each: allocator and kernel warm-up
            with bf16_autocast(mode == "bf16"):
                fn()
        for _ in range(REPEATS):
            for mode in ("float32", "bf16"):
                with bf16_autocast(mode == "bf16"):
                    times[name][mode].append(seconds(fn))
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    found = sorted(set(re.findall(r"\b(avx512_bf16|amx_bf16|amx_tile|avx512f|avx2)\b", flags)))
    medians = {name: {mode: statistics.median(v) for mode, v in modes.items()} for name, modes in times.items()}
    print(json.dumps({
        "cpu_flags": found,
        "native_bf16": native_bf16(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "tokens": TOKENS, "new_tokens": NEW_TOKENS, "repeats": REPEATS,
        "median_s": medians,
        "ratio_bf16_over_float32": {name: m["bf16"] / m["float32"] for name, m in medians.items()},
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
