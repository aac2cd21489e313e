"""Per-environment heuristic baselines: offline, deterministic, and blind to ground truth."""
