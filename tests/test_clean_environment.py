"""A user's shell variables never reach a test: the autouse fixture in conftest.py clears them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import integrity_gym

_INNER = """
import integrity_gym

def test_defaults_hold():
    env = integrity_gym.make("pii_redaction/gdpr_contract_easy-v4")
    assert env.config.window_size == {default}
"""


def test_exported_project_variables_do_not_reach_tests(tmp_path: Path) -> None:
    default = integrity_gym.make("pii_redaction/gdpr_contract_easy-v4").config.window_size
    (tmp_path / "test_inner.py").write_text(_INNER.format(default=default))
    (tmp_path / "conftest.py").write_text((Path(__file__).parent / "conftest.py").read_text())
    shell = {**os.environ, "PII_WINDOW_SIZE": str(default + 50), "IGYM_EVAL_SECRET": "x", "MODEL_NAME": "m"}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(tmp_path)],
        capture_output=True, text=True, env=shell, cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout
