"""The results database under several writers at once, and beside other applications' files."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from integrity_gym.bench.results import ResultsDB


def test_eight_concurrent_benches_all_finish_into_one_database(tmp_path: Path) -> None:
    # Kills: a connection without a busy timeout or WAL (1-2 of 6 writers crashed on "database is locked").
    db = tmp_path / "results.sqlite"
    command = [sys.executable, "-m", "integrity_gym", "bench", "--tasks", "selective_verification/text",
               "--episodes", "6", "--no-observations", "--echo", "none", "--db", str(db)]  # fmt: skip
    procs = [
        subprocess.Popen(
            [*command, "--out", str(tmp_path / f"run{i}")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        for i in range(8)
    ]
    outputs = [p.communicate(timeout=600)[0].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, "\n".join(o[-600:] for o in outputs)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT status, episodes_done FROM runs").fetchall()
        assert rows == [("complete", 6)] * 8
        assert conn.execute("SELECT COUNT(*) FROM episodes").fetchone() == (48,)


def test_the_schema_appears_at_once_never_half_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Kills: tables committed before the schema version (a concurrent bench then read the half-made
    # schema as another application's file and exited 2 — seen in CI with 8 writers).
    path = tmp_path / "results.sqlite"
    seen: list[set[str]] = []

    class Spy(sqlite3.Connection):
        def execute(self, sql: str, *args: object) -> sqlite3.Cursor:  # type: ignore[override]
            if sql.startswith("INSERT INTO meta"):
                with sqlite3.connect(path) as other:
                    seen.append({name for (name,) in other.execute("SELECT name FROM sqlite_master")})
            return super().execute(sql, *args)

    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: real_connect(*a, **k, factory=Spy))
    ResultsDB(path).close()
    monkeypatch.undo()
    assert seen == [set()]
    ResultsDB(path).close()  # and the finished schema is ours


@pytest.mark.parametrize("other", ["CREATE TABLE users (id INTEGER)", "CREATE TABLE meta (key TEXT, value TEXT)"])
def test_another_applications_file_is_refused_and_left_untouched(tmp_path: Path, other: str) -> None:
    path = tmp_path / "app.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(other)
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"another application.*left untouched: pass another --db"):
        ResultsDB(path)
    assert path.read_bytes() == before
    result = subprocess.run(
        [sys.executable, "-m", "integrity_gym", "bench", "--tasks", "selective_verification/text", "--episodes", "1",
         "--db", str(path), "--out", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr + result.stdout
    assert "another application" in " ".join((result.stderr + result.stdout).split())
    assert path.read_bytes() == before
