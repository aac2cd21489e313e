"""The files of an ``igym train --out`` folder: written by ``grpo``, read by ``curves`` and ``report``.

A module of its own so that reading a training folder (``igym report``) imports nothing of the
training code itself.
"""

#: One JSON line per training step (``grpo.StepLog``).
LOG_NAME = "train_log.jsonl"
#: The run's configuration and its before/after evaluation.
SUMMARY_NAME = "train_summary.json"
#: The eval runs' folders inside a training folder, before and after training (``igym bench`` run folders).
EVAL_DIRS = {"before": "eval-before", "after": "eval-after"}
