from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from integrity_gym.bench.results import ResultsDB

IGYM = [sys.executable, "-m", "integrity_gym"]
VOLATILE = {"wall_s", "latency_s"}


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**(env or os.environ), "COLUMNS": "80"}  # what a piped or 80-column terminal gets
    return subprocess.run([*IGYM, *args], capture_output=True, text=True, timeout=300, env=env)


def stable(value: Any) -> Any:
    """The record without timings, which differ between any two runs."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    return value


def replay_line(stdout: str) -> str:
    """The printed reproduce command, its backslash-continued lines joined again."""
    lines = stdout.splitlines()
    out = []
    for line in lines[lines.index("reproduce with:") + 1 :]:
        out.append(line.strip().removesuffix("\\").strip())
        if not line.endswith("\\"):
            break
    return " ".join(out)


def test_a_run_reproduces_exactly_from_its_printed_command(tmp_path: Path) -> None:
    first = run("bench", "--tasks", "pii_redaction/gdpr*,information_integrity/easy*,selective_verification/text*",
                "--agent", "heuristic", "--episodes", "2", "--seed", "11", "--concurrency", "2",
                "--out", str(tmp_path / "a"), "--db", str(tmp_path / "db.sqlite"), "--echo", "none")  # fmt: skip
    assert first.returncode == 0, first.stdout + first.stderr
    command = replay_line(first.stdout)
    words = shlex.split(command)
    at = words.index("igym")
    env = {**os.environ, **dict(w.split("=", 1) for w in words[:at])}
    # The command keeps --out; replaying it into the same folder needs --overwrite.
    assert words[at + 1] == "bench" and words[words.index("--out") + 1] == str(tmp_path / "a")
    again = run(*words[at + 1 :], "--no-db", env=env)
    said = " ".join(again.stdout.split())
    assert again.returncode == 2 and "already holds a run" in said and "--overwrite" in said
    words[words.index("--out") + 1] = str(tmp_path / "b")
    second = run(*words[at + 1 :], "--db", str(tmp_path / "db.sqlite"), env=env)
    assert second.returncode == 0, second.stdout + second.stderr
    a, b = ((tmp_path / d / "episodes.jsonl").read_text().splitlines() for d in "ab")
    assert len(a) == 6
    assert [stable(json.loads(x)) for x in a] == [stable(json.loads(x)) for x in b]
    summaries = [json.loads((tmp_path / d / "summary.json").read_text()) for d in "ab"]
    assert summaries[0]["tasks"] == summaries[1]["tasks"] and summaries[0]["reproduce"] == command
    assert replay_line(second.stdout) == command.replace(str(tmp_path / "a"), str(tmp_path / "b"))
    with ResultsDB(tmp_path / "db.sqlite") as db:
        run_ids = [r["run_id"] for r in db.runs()]
    assert len(run_ids) == 2
    listed = run("runs", "--db", str(tmp_path / "db.sqlite"), "--tasks", "information_integrity/*")
    # Full run ids, folders, episodes per task and task names, in 80 columns.
    assert listed.returncode == 0 and all(i in listed.stdout for i in run_ids) and "easy-v3" in listed.stdout
    assert "gdpr" not in listed.stdout and max(map(len, listed.stdout.splitlines())) <= 80
    flat = "".join(listed.stdout.split())
    assert str(tmp_path / "a").replace(" ", "") in flat and str(tmp_path / "b").replace(" ", "") in flat
    assert "episodes" in listed.stdout and "  2  " in listed.stdout
    # A replay of a run made with --overwrite carries it, so the printed line runs as it is.
    third = run(*words[at + 1 :], "--overwrite", "--no-db", env=env)
    assert third.returncode == 0 and replay_line(third.stdout).endswith(f"--out {tmp_path / 'b'} --overwrite")
    missing = run("runs", "--db", str(tmp_path / "none.sqlite"))
    assert missing.returncode == 2 and "does not exist" in " ".join(missing.stdout.split())


def test_ctrl_c_stops_cleanly_and_keeps_finished_episodes(tmp_path: Path) -> None:
    out, db_path = tmp_path / "run", tmp_path / "db.sqlite"
    process = subprocess.Popen(
        [*IGYM, "bench", "--tasks", "pii_redaction/security*", "--agent", "heuristic", "--episodes", "400",
         "--out", str(out), "--db", str(db_path), "--echo", "none"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    episodes = out / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if episodes.is_file() and len(episodes.read_text().splitlines()) >= 3:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the run ended before it could be interrupted"
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stdout + stderr
    assert "interrupted" in stdout and "Traceback" not in stderr
    kept = [json.loads(line) for line in episodes.read_text().splitlines()]
    assert 3 <= len(kept) < 400 and all(r["error"] is None for r in kept)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert summary["tasks"]["pii_redaction/security_logs_hard-v4"]["episodes"] == len(kept)
    assert (out / "run.log").read_text().splitlines()[-2] == "status=interrupted"
    with ResultsDB(db_path) as db:
        (row,) = db.runs()
        assert row["status"] == "interrupted" and row["episodes_done"] == len(kept)


def test_bench_rejects_bad_options_clearly(tmp_path: Path) -> None:
    result = run("bench", "--tasks", "pii*", "--seeds", "1,x", "--out", str(tmp_path), "--no-db")
    assert result.returncode == 2 and "--seeds" in result.stdout
    result = run("bench", "--tasks", "pii*", "--config", "novalue", "--out", str(tmp_path), "--no-db")
    assert result.returncode == 2 and "KEY=VALUE" in result.stdout
    result = run("bench", "--tasks", "pii*", "--echo", "loud", "--no-db")
    assert result.returncode == 2 and "--echo" in result.stdout
