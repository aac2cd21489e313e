"""igym bench behaves like the evaluation tools researchers already use: checked setup, exit codes,
no silent overwrite, resume after a crash, repeats, 80-column output."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from integrity_gym import make
from integrity_gym.bench.display import print_summary, runs_tables, shell_lines
from integrity_gym.bench.results import ResultsDB
from integrity_gym.bench.runner import BenchConfig, SetupError, run_bench
from integrity_gym.bench.summary import pass_at_k
from tests.bench.test_cli_bench import run, stable

GDPR = "pii_redaction/gdpr_contract_easy-v4"


def no_run_left(tmp_path: Path, out: Path, db: Path) -> None:
    assert not out.exists(), "a refused run must write nothing"
    if db.exists():
        with ResultsDB(db) as results:
            assert results.runs() == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent", "gpt5"], "unknown agent 'gpt5'"),
        (["--config", "window_size=abc"], "fix --config"),
        (["--server", "http://127.0.0.1:9"], "does not answer /health"),
        (["--agent", "llm", "--base-url", "http://127.0.0.1:9/v1"], "cannot be reached"),
        (["--model", "m", "--agent", "heuristic"], "for --agent llm"),
    ],
)
def test_setup_errors_stop_the_run_before_any_episode(tmp_path: Path, args: list[str], message: str) -> None:
    out, db = tmp_path / "run", tmp_path / "db.sqlite"
    result = run("bench", "--tasks", GDPR, "--episodes", "2", "--out", str(out), "--db", str(db), *args)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in " ".join(result.stdout.split()) and "Traceback" not in result.stderr
    assert result.stdout.count("error:") == 1  # one message, not one per episode
    no_run_left(tmp_path, out, db)


def test_a_missing_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from integrity_gym.cli import app

    monkeypatch.setitem(sys.modules, "openai", None)  # as if the llm extra were not installed
    result = CliRunner().invoke(app, ["bench", "--agent", "llm", "--tasks", GDPR, "--no-db"])
    assert result.exit_code == 2 and "pip install 'integrity-gym[llm]'" in " ".join(result.output.split())
    with pytest.raises(SetupError, match=r"integrity-gym\[llm\]"):
        run_bench(bench=BenchConfig.build(tasks=GDPR, agent="llm"))


def test_out_is_never_overwritten_silently_and_bad_paths_are_clear(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = run("bench", "--tasks", GDPR, "--episodes", "1", "--out", str(out), "--no-db", "--echo", "none")
    assert first.returncode == 0
    before = (out / "config.json").read_text()
    again = run("bench", "--tasks", GDPR, "--episodes", "2", "--out", str(out), "--no-db")
    assert again.returncode == 2 and "already holds a run" in " ".join(again.stdout.split())
    assert (out / "config.json").read_text() == before
    forced = run("bench", "--tasks", GDPR, "--episodes", "2", "--out", str(out), "--no-db", "--overwrite")
    assert forced.returncode == 0 and len((out / "episodes.jsonl").read_text().splitlines()) == 2
    assert ": 2 episodes done (2/2 in all)" in forced.stdout  # piped output: a line per finished task
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    unwritable = run("bench", "--tasks", GDPR, "--out", str(blocker / "run"), "--no-db")
    assert unwritable.returncode == 2 and "cannot write the run folder" in " ".join(unwritable.stdout.split())
    assert "Traceback" not in unwritable.stdout + unwritable.stderr
    junk_db = tmp_path / "junk.sqlite"
    junk_db.write_bytes(b"not sqlite" * 100)
    bad_db = run("bench", "--tasks", GDPR, "--out", str(tmp_path / "r2"), "--db", str(junk_db))
    assert bad_db.returncode == 2 and "not an integrity-gym results database" in " ".join(bad_db.stdout.split())
    assert not (tmp_path / "r2").exists()


def test_resume_after_kill_9_plays_only_what_is_missing_and_matches_an_uninterrupted_run(tmp_path: Path) -> None:
    args = ["--tasks", "pii_redaction/security*", "--episodes", "60", "--seed", "3", "--echo", "none"]
    out, db = tmp_path / "killed", tmp_path / "db.sqlite"
    process = subprocess.Popen([sys.executable, "-m", "integrity_gym", "bench", *args, "--out", str(out),
                                "--db", str(db)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    episodes = out / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if episodes.is_file() and len(episodes.read_text().splitlines()) >= 5:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be killed"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=30)
    kept = len(episodes.read_text().splitlines())
    assert 5 <= kept < 60 and not (out / "summary.json").exists()
    with ResultsDB(db) as results:
        assert results.runs()[0]["status"] == "running"
    resumed = run("bench", "--resume", str(out), "--db", str(db), "--echo", "none")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "kept from before" in resumed.stdout
    whole = run("bench", *args, "--out", str(tmp_path / "whole"), "--no-db")
    assert whole.returncode == 0
    a, b = (json.loads((d / "summary.json").read_text()) for d in (out, tmp_path / "whole"))
    assert a["tasks"] == b["tasks"] and a["tiers"] == b["tiers"] and a["status"] == b["status"] == "complete"
    ra, rb = ((d / "episodes.jsonl").read_text().splitlines() for d in (out, tmp_path / "whole"))
    assert [stable(json.loads(x)) for x in ra] == [stable(json.loads(x)) for x in rb]
    with ResultsDB(db) as results:
        (row,) = results.runs()
        assert (row["status"], row["episodes_done"], row["episodes_failed"]) == ("complete", 60, 0)
    # Resuming a finished run plays nothing more.
    finished = run("bench", "--resume", str(out), "--no-db", "--echo", "none")
    assert finished.returncode == 0 and json.loads((out / "summary.json").read_text())["tasks"] == a["tasks"]


def test_resume_of_a_folder_without_a_run_is_a_clear_error(tmp_path: Path) -> None:
    result = run("bench", "--resume", str(tmp_path), "--no-db")
    assert result.returncode == 2 and "no run to resume" in " ".join(result.stdout.split())


def test_epochs_repeat_items_and_report_pass_at_k(tmp_path: Path) -> None:
    bench = BenchConfig.build(tasks=GDPR, agent="random", episodes=3, epochs=4)
    result = run_bench(bench=bench, out_dir=tmp_path)
    assert [(r.seed, r.epoch) for r in result.records if r.index % 3 == 0] == [(0, e) for e in range(4)]
    assert len(result.records) == 12 and len({r.index for r in result.records}) == 12
    s = result.summaries[GDPR]
    assert s.epochs == 4 and s.pass_at_k is not None and set(s.pass_at_k) == {"1", "2", "3", "4"}
    assert s.pass_at_k["1"] == pytest.approx(s.success_rate)  # pass@1 is the success rate
    assert list(s.pass_at_k.values()) == sorted(s.pass_at_k.values())
    assert "--epochs 4" in result.command
    # The unbiased estimator (Chen et al.): 5 plays, 2 successes.
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4) and pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 2, 4) == 1.0 and pass_at_k(5, 0, 3) == 0.0


@pytest.mark.parametrize(("agent", "warned"), [("heuristic", True), ("random", False)])
def test_epochs_that_cannot_vary_are_said_to(tmp_path: Path, agent: str, warned: bool) -> None:
    """A deterministic agent repeats itself: the summary says so instead of reporting pass@k silently."""
    result = run_bench(bench=BenchConfig.build(tasks=GDPR, agent=agent, episodes=3, epochs=2), out_dir=tmp_path)
    console = Console(width=80, record=True, force_terminal=False)
    print_summary(console, result)
    said = " ".join(console.export_text().split())
    assert ("no item's grade varied across the 2 epochs" in said) is warned
    assert (result.summaries[GDPR].item_sd == 0) is warned


def test_task_ids_without_version_mean_the_newest(tmp_path: Path) -> None:
    result = run_bench(bench=BenchConfig.build(tasks="information_integrity/easy", episodes=1), out_dir=tmp_path)
    assert list(result.summaries) == ["information_integrity/easy-v3"]


def test_every_table_fits_80_columns(tmp_path: Path) -> None:
    # The longest task names of every environment (and selective verification's long metric list).
    bench = BenchConfig.build(tasks="pii_redaction/*,information_integrity/*,selective_verification/text*",
                              agent="heuristic", episodes=1)  # fmt: skip
    result = run_bench(bench=bench, out_dir=tmp_path / "run", db_path=tmp_path / "db.sqlite")
    console = Console(width=80, record=True, force_terminal=False)
    print_summary(console, result)
    text = console.export_text()
    # Every line fits and nothing was cut, except where the run folder's own path (pytest's temporary
    # folder, of any length) is printed: a path cannot be broken.
    lines = [line for line in text.splitlines() if str(tmp_path) not in line and "pytest-of-" not in line]
    assert max(map(len, lines)) <= 80 and "…" not in text
    for spec_id in result.summaries:  # every task named whole
        assert spec_id.split("/", 1)[1] in text
    with ResultsDB(tmp_path / "db.sqlite") as db:
        rows, runs = db.task_summaries(), db.runs()
    console = Console(width=80, record=True)
    for table in runs_tables(runs * 12, rows, width=80):
        console.print(table)
    shown = console.export_text()
    assert (
        max(map(len, shown.splitlines())) <= 80 and "…" not in shown and result.run_id in shown and "runs 1-" in shown
    )
    assert all(len(line) <= 78 for line in shell_lines(result.command) if str(tmp_path) not in line)
    assert " ".join(x.removesuffix("\\").strip() for x in shell_lines(result.command)) == result.command
    listed = run("list")
    assert listed.returncode == 0 and max(map(len, listed.stdout.splitlines())) <= 80 and "…" not in listed.stdout


def test_version_and_play_help() -> None:
    version = run("--version")
    assert version.returncode == 0 and version.stdout.startswith("integrity-gym ")
    played = subprocess.run([sys.executable, "-m", "integrity_gym", "play", "selective_verification/text-v3"],
                            input="help\n?\nquit\n", capture_output=True, text=True, timeout=120)  # fmt: skip
    assert played.returncode == 0 and "quit ends the episode" in played.stdout
    assert "reward" not in played.stdout.split("quit ends the episode", 1)[1].split("grade")[0]  # nothing played


@pytest.mark.parametrize("command", ["bench", "redteam", "serve", "report"])
def test_flags_in_help_take_no_value(command: str) -> None:
    """A flag's help row shows no value type (Typer's `<bool>` would read as "--overwrite <bool>")."""
    shown = run(command, "--help", env={**os.environ, "COLUMNS": "120"})
    assert shown.returncode == 0 and "<bool>" not in shown.stdout
    assert "<int" in shown.stdout or "<text>" in shown.stdout or "<path>" in shown.stdout  # other types still show


@pytest.mark.parametrize("line", ["SUPPORTED 0.95", "refuted 0.6", "abstain", "Supported"])
def test_play_takes_a_verdict_and_a_confidence_and_removes_its_pictures(line: str) -> None:
    """`ABSTAIN`, `SUPPORTED`, `supported 0.95` all ended the episode as malformed (reward 0)."""
    import tempfile

    before = {p.name for p in Path(tempfile.gettempdir()).glob("igym-pictures-*")}
    played = subprocess.run([sys.executable, "-m", "integrity_gym", "play", "selective_verification/balanced"],
                            input=line + "\n", capture_output=True, text=True, timeout=120)  # fmt: skip
    said = " ".join(played.stdout.split())
    assert played.returncode == 0 and "malformed" not in said and "rejected" not in said
    assert ("abstained:" if "abstain" in line.lower() else f"answered {line.split()[0].upper()}") in said
    assert {p.name for p in Path(tempfile.gettempdir()).glob("igym-pictures-*")} == before  # removed on close


def test_play_a_scenario_file(tmp_path: Path) -> None:
    """A reviewed draft (``igym collect``) plays from the command line; another env says it cannot."""
    from integrity_gym.envs.information_integrity.data import find_gold

    draft = tmp_path / "draft.json"
    draft.write_text(find_gold("easy_001").model_copy(update={"id": "draft_1"}).model_dump_json())
    command = [sys.executable, "-m", "integrity_gym", "play"]
    played = subprocess.run([*command, "information_integrity/easy", "--scenario", str(draft)], input="quit\n",
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert played.returncode == 0 and find_gold("easy_001").content in " ".join(played.stdout.split())
    refused = subprocess.run([*command, GDPR, "--scenario", str(draft)], input="quit\n", capture_output=True,
                             text=True, timeout=120)  # fmt: skip
    assert refused.returncode == 2 and "scenario_file" in refused.stdout


def test_step_results_unpack_like_gym() -> None:
    env = make(GDPR)
    env.reset(seed=0)
    result = env.step("FINISH")
    observation, reward, done, info = result
    assert observation is result.observation and reward == result.reward
    assert done is True and info is result.info
    assert result.model_dump()["done"] is True  # pydantic's own serialisation is unchanged


def test_llm_epochs_sample_with_a_new_seed_each_repeat(tmp_path: Path) -> None:
    from integrity_gym.agents.llm import LLMSettings
    from tests.agents.openai_stub import openai_stub

    with openai_stub([]) as (url, stub):
        settings = LLMSettings(api_base_url=url, model_name="stub", timeout_s=5, retries=0, temperature=0.7)
        bench = BenchConfig.build(tasks="selective_verification/text", agent="llm", episodes=1, epochs=3)
        result = run_bench(bench=bench, out_dir=tmp_path, llm_settings=settings)
    assert len(result.records) == 3 and sorted(r["seed"] for r in stub.requests) == [42, 43, 44]
    assert {r.seed for r in result.records} == {0}  # the same item each time


def test_llm_epochs_at_temperature_zero_are_refused_before_any_episode(tmp_path: Path) -> None:
    from integrity_gym.agents.llm import LLMSettings
    from integrity_gym.bench.setup import SetupError
    from tests.agents.openai_stub import openai_stub

    with openai_stub([]) as (url, stub):
        settings = LLMSettings(api_base_url=url, model_name="stub", timeout_s=5, retries=0, temperature=0.0)
        bench = BenchConfig.build(tasks="selective_verification/text", agent="llm", episodes=1, epochs=2)
        with pytest.raises(SetupError, match="TEMPERATURE=0 would replay the same replies 2 times"):
            run_bench(bench=bench, out_dir=tmp_path, llm_settings=settings)
    assert stub.requests == []


def test_epochs_of_a_seeded_agent_are_not_copies(tmp_path: Path) -> None:
    # The random agent was seeded by the item's seed alone: every epoch replayed the first.
    bench = BenchConfig.build(tasks=GDPR, agent="random", episodes=4, epochs=2)
    result = run_bench(bench=bench, out_dir=tmp_path)
    first = {r.seed: r.trajectory for r in result.records if r.epoch == 0}
    second = {r.seed: r.trajectory for r in result.records if r.epoch == 1}
    assert first.keys() == second.keys() and any(first[s] != second[s] for s in first)
    one = run_bench(bench=BenchConfig.build(tasks=GDPR, agent="random", episodes=4), out_dir=tmp_path / "one")
    assert {r.seed: r.trajectory for r in one.records} == first  # epoch 0 is the one-epoch run, unchanged


def test_an_llm_run_resumes_with_its_recorded_settings_at_a_new_address(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from integrity_gym.agents.llm import LLMSettings
    from integrity_gym.cli import app
    from tests.agents.openai_stub import openai_stub

    out = tmp_path / "run"
    with openai_stub([]) as (url, _):
        settings = LLMSettings(api_base_url=url, model_name="stub", timeout_s=5, retries=0, temperature=0.5)
        bench = BenchConfig.build(tasks="selective_verification/text", agent="llm", episodes=3)
        run_bench(bench=bench, out_dir=out, llm_settings=settings)
    lines = (out / "episodes.jsonl").read_text().splitlines()
    (out / "episodes.jsonl").write_text(lines[0] + "\n" + lines[1][:40])  # a crash mid-line
    (out / "summary.json").unlink()
    with openai_stub([]) as (new_url, stub):
        result = CliRunner().invoke(app, ["bench", "--resume", str(out), "--base-url", new_url, "--no-db"])
    assert result.exit_code == 0, result.output
    assert len(stub.requests) == 2 and all(r["model"] == "stub" and r["temperature"] == 0.5 for r in stub.requests)
    assert json.loads((out / "summary.json").read_text())["tasks"]["selective_verification/text-v3"]["episodes"] == 3


def test_a_resume_of_an_epoch_run_plays_exactly_the_missing_and_failed_episodes(tmp_path: Path) -> None:
    # The keys of a repeat carry its epoch: a resume that dropped the epoch offset would take epoch 1
    # for done wherever epoch 0 was, and finish "complete" short of episodes; a failed episode is
    # played again, never kept.
    from integrity_gym.bench.runner import resume_bench

    bench = BenchConfig.build(tasks=GDPR, agent="random", episodes=3, epochs=2)
    whole = run_bench(bench=bench, out_dir=tmp_path / "whole")
    out = tmp_path / "cut"
    run_bench(bench=bench, out_dir=out)
    lines = (out / "episodes.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    by_key = {(r["seed"], r["epoch"]): line for r, line in zip(records, lines, strict=True)}
    failed = json.loads(by_key[(1, 1)]) | {"error": "RuntimeError: planted", "score": None}
    # Keep epoch 0 of seed 0, epoch 1 of seeds 0 and 2, and a failed epoch 1 of seed 1.
    kept = [by_key[(0, 0)], by_key[(0, 1)], by_key[(2, 1)], json.dumps(failed)]
    (out / "episodes.jsonl").write_text("\n".join(kept) + "\n")
    (out / "summary.json").unlink()
    resumed = resume_bench(out)
    assert sorted((r.seed, r.epoch) for r in resumed.records) == [(s, e) for s in range(3) for e in range(2)]
    assert not any(r.error for r in resumed.records)
    assert [stable(r.model_dump(mode="json")) for r in resumed.records] == [
        stable(r.model_dump(mode="json")) for r in whole.records
    ]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "complete" and summary["tasks"][GDPR]["episodes"] == 6


def test_sigterm_interrupts_a_run_cleanly_and_it_resumes(tmp_path: Path) -> None:
    # What `timeout`, `docker stop` and pre-emption send: the run used to die with no summary.
    args = ["--tasks", "pii_redaction/security*", "--episodes", "60", "--seed", "3", "--echo", "none", "--no-db"]
    out = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-m", "integrity_gym", "bench", *args, "--out", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    episodes = out / "episodes.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if episodes.is_file() and len(episodes.read_text().splitlines()) >= 3:
            break
        time.sleep(0.02)
    assert process.poll() is None, "the run ended before it could be stopped"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=60) == 130
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    resumed = run("bench", "--resume", str(out), "--no-db", "--echo", "none")
    assert resumed.returncode == 0 and json.loads((out / "summary.json").read_text())["status"] == "complete"


def test_cut_off_episodes_tokens_and_latency_are_shown_not_hidden(tmp_path: Path) -> None:
    # A run cut by --max-steps used to read "grade 0.000, steps 2.0": a cut-off taken for a failure.
    from integrity_gym.agents.llm import LLMSettings
    from integrity_gym.bench.runs import load_run
    from integrity_gym.report.page import write_report
    from tests.agents.openai_stub import openai_stub

    cut = run_bench(bench=BenchConfig.build(tasks="information_integrity/easy", agent="noop", episodes=2, max_steps=2),
                    out_dir=tmp_path / "cut")  # fmt: skip
    with openai_stub([]) as (url, _):
        settings = LLMSettings(api_base_url=url, model_name="stub", timeout_s=5, retries=0)
        used = run_bench(bench=BenchConfig.build(tasks="selective_verification/text", agent="llm", episodes=2),
                         out_dir=tmp_path / "llm", llm_settings=settings)  # fmt: skip
    for result, wanted in ((cut, "2 of 2 episode(s) cut by the step cap"), (used, "tokens/episode")):
        console = Console(width=200, record=True, force_terminal=False)
        print_summary(console, result)
        assert wanted in console.export_text()
    page = write_report([load_run(tmp_path / "cut"), load_run(tmp_path / "llm")], tmp_path / "report").read_text()
    assert "<th>cut by the step cap</th>" in page and "2 of 2</b>" in page and "completion tokens/episode" in page
