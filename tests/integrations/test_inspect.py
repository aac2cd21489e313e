"""inspect_ai: the tasks (``inspect eval integrity_gym/<name>``) and ``igym bench`` runs as inspect logs.

Needs the ``inspect`` extra (the module is skipped without it). The tiny LLM and Chromium are
services: missing, their tests skip here and fail in CI (IGYM_REQUIRE_SERVICES=1).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import integrity_gym

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai.analysis import samples_df
from inspect_ai.log import EvalLog, EvalSample, read_eval_log
from inspect_ai.model import ChatMessageAssistant, ModelOutput, ModelUsage, get_model
from typer.testing import CliRunner

from integrity_gym.agents.llm import LLMSettings
from integrity_gym.bench.config import BenchConfig
from integrity_gym.bench.export import Item, transcript_row
from integrity_gym.bench.local_llm import MODEL_NAME, free_port
from integrity_gym.bench.record import RunRecord
from integrity_gym.bench.runner import run_bench
from integrity_gym.cli import app
from integrity_gym.core.registry import get_spec
from integrity_gym.integrations.inspect import _names, inspect_tasks
from integrity_gym.integrations.inspect.logs import write_run_logs
from integrity_gym.integrations.inspect.tasks import TASKS
from integrity_gym.integrations.verifiers.episodes import EnvEpisode
from tests.conftest import project_variables, require_service
from tests.integrations.scripted_llm import scripted_llm, text

PII_EASY = get_spec("pii_redaction/gdpr_contract_easy").id
INFO_EASY = get_spec("information_integrity/easy").id
SV_TEXT = get_spec("selective_verification/text").id
#: The tasks of the exported heuristic run: one per environment, three episodes each.
RUN_TASKS = (PII_EASY, INFO_EASY, SV_TEXT)
NAME = {task_id: name for name, task_id in inspect_tasks().items()}


def replayed(task_id: str, seed: int, replies: list[str]) -> Any:
    """The environment's own grade of ``replies`` played in-process on item ``seed`` (eval partition)."""
    episode = EnvEpisode(task_id, seed=seed, config={"partition": "eval"})
    try:
        for reply in replies:
            if episode.done:
                break
            episode.step(reply)
        return episode.grade()
    finally:
        episode.close()


def replies(sample: EvalSample) -> list[str]:
    return [m.text for m in sample.messages if isinstance(m, ChatMessageAssistant)]


def assert_score_is_grade(sample: EvalSample, grade: Any) -> None:
    """The sample's score is ``grade``: value, success, threshold and every breakdown dimension."""
    assert sample.scores is not None
    score = sample.scores["grade"]
    assert score.value == grade.score
    assert score.metadata is not None
    assert score.metadata["success"] == grade.success
    assert score.metadata["threshold"] == grade.threshold
    assert score.metadata["breakdown"] == grade.breakdown


# ---------------------------------------------------------------------------------- names
def test_every_task_has_one_inspect_name_and_shared_last_words_keep_names_apart() -> None:
    names = inspect_tasks()
    newest = {get_spec(task_id).id for task_id in names.values()}
    assert len(names) == len(newest) == len(set(names.values()))
    assert names["pii_redaction_hard"] == get_spec("pii_redaction/security_logs_hard").id
    assert names["information_integrity_easy"] == INFO_EASY
    tasks = [("sv", "adversarial"), ("sv", "threshold_adversarial"), ("sv", "text"), ("pii", "a_hard")]
    assert _names(tasks) == {
        ("sv", "adversarial"): "sv_adversarial",
        ("sv", "threshold_adversarial"): "sv_threshold_adversarial",
        ("sv", "text"): "sv_text",
        ("pii", "a_hard"): "pii_hard",
    }
    assert set(TASKS) == set(names)


# ---------------------------------------------------------------------------------- a scripted model
def play(task_id: str, outputs: list[str], log_dir: Path, **task_args: Any) -> EvalLog:
    """``inspect eval`` of one item of ``task_id`` with a mock model that replies ``outputs`` in turn."""
    replies = [ModelOutput.from_content("mockllm/model", o) for o in outputs]
    for reply in replies:  # given, the mock counts no tokens (its counter would fetch tiktoken's tables online)
        reply.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    model = get_model("mockllm/model", memoize=False, custom_outputs=replies)
    task = TASKS[NAME[task_id]](episodes=1, **task_args)
    (log,) = inspect_eval(task, model=model, log_dir=str(log_dir), display="none")
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 1
    return log


@pytest.mark.parametrize("task_id", [PII_EASY, INFO_EASY])
def test_a_model_replying_the_oracles_actions_gets_the_oracles_grade(task_id: str, tmp_path: Path) -> None:
    oracle = transcript_row(Item(get_spec(task_id), 0, 0), "eval", "oracle")
    assert oracle["grade"]["success"] and oracle["done"]
    sample = play(task_id, [t["reply"] for t in oracle["turns"]], tmp_path).samples[0]  # type: ignore[index]
    assert sample.id == f"{task_id}@0"
    assert replies(sample) == [t["reply"] for t in oracle["turns"]]
    assert_score_is_grade(sample, replayed(task_id, 0, replies(sample)))
    assert sample.scores is not None
    score = sample.scores["grade"]
    assert score.value == oracle["grade"]["score"] and score.metadata is not None
    assert score.metadata["breakdown"] == oracle["grade"]["breakdown"]
    assert score.metadata["steps"] == len(oracle["turns"]) and not score.metadata["truncated"]
    assert score.explanation  # the environment explains the episode


@pytest.mark.parametrize("task_id", [PII_EASY, INFO_EASY])
def test_unreadable_replies_score_below_the_threshold_and_the_step_cap_holds(task_id: str, tmp_path: Path) -> None:
    sample = play(task_id, ["I am not sure."] * 3, tmp_path, max_steps=3).samples[0]  # type: ignore[index]
    assert replies(sample) == ["I am not sure."] * 3
    grade = replayed(task_id, 0, replies(sample))
    assert_score_is_grade(sample, grade)
    assert not grade.success
    assert sample.scores is not None
    metadata = sample.scores["grade"].metadata or {}
    assert metadata["truncated"] and metadata["unreadable_replies"] == 3 and metadata["steps"] == 3


# ---------------------------------------------------------------------------------- the tiny real model
@pytest.fixture(scope="module")
def tiny_logs(tiny_llm_url: str, tmp_path_factory: pytest.TempPathFactory) -> list[EvalLog]:
    """``inspect eval`` of two small tasks against the tiny model, as ``--model openai/<name>`` runs it."""
    folder = tmp_path_factory.mktemp("inspect-tiny")
    tasks = [TASKS[NAME[SV_TEXT]](episodes=1), TASKS[NAME[INFO_EASY]](episodes=1, max_steps=2)]
    with pytest.MonkeyPatch.context() as patch:
        for name in project_variables(list(os.environ)):
            patch.delenv(name)
        patch.setenv("OPENAI_API_KEY", "none")  # inspect's openai provider wants a key; the server takes any
        # A short reply limit: the model is slow on shared cores, and a reply cut short is just unreadable.
        return inspect_eval(tasks, model=f"openai/{MODEL_NAME}", model_base_url=tiny_llm_url, log_dir=str(folder),
                            display="none", max_tasks=2, max_tokens=96)  # fmt: skip


def test_inspect_eval_against_the_tiny_model_scores_the_environments_grade(tiny_logs: list[EvalLog]) -> None:
    assert [log.eval.task for log in tiny_logs] == [
        f"integrity_gym/{NAME[SV_TEXT]}",
        f"integrity_gym/{NAME[INFO_EASY]}",
    ]
    for log in tiny_logs:
        assert log.status == "success", log.error
        assert log.samples is not None and len(log.samples) == 1
        sample = log.samples[0]
        task_id = log.eval.metadata["igym_task_id"] if log.eval.metadata else None
        assert sample.id == f"{task_id}@0"
        sent = replies(sample)
        assert 1 <= len(sent) <= 2
        assert_score_is_grade(sample, replayed(str(task_id), 0, sent))
        assert log.results is not None and log.results.scores[0].metrics["mean"].value == sample.scores["grade"].value  # type: ignore[index]


def test_the_tiny_model_is_asked_as_a_chat_model_with_the_reply_schema(tiny_logs: list[EvalLog]) -> None:
    calls = [e.call for log in tiny_logs for e in log.samples[0].events if e.event == "model"]  # type: ignore[index, union-attr]
    assert calls
    for call in calls:
        assert call is not None
        request = call.request
        assert "messages" in request and "input" not in request  # chat completions, not the Responses API
        assert request["response_format"]["type"] == "json_schema"
        assert request["response_format"]["json_schema"]["strict"] is True
        # A plain chat model, as the llm agent asks it: greedy and seeded, a system message, the reply limit.
        assert request["temperature"] == 0.0 and request["seed"] == 42 and request["max_tokens"] == 96
        assert request["messages"][0]["role"] == "system"


# ---------------------------------------------------------------------------------- igym bench runs as logs
@pytest.fixture(scope="module")
def heuristic_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real ``igym bench`` run: the heuristic agent, three tasks x 3 episodes, in-process."""
    folder = tmp_path_factory.mktemp("inspect-run") / "run"
    run_bench(bench=BenchConfig.build(tasks=",".join(RUN_TASKS), agent="heuristic", episodes=3, seed=2), out_dir=folder)
    return folder


@pytest.fixture(scope="module")
def exported(heuristic_run: Path) -> Path:
    out = heuristic_run.parent / "logs"
    write_run_logs(heuristic_run, out)
    return out


def test_samples_df_reads_one_row_per_episode_with_the_runs_grades(heuristic_run: Path, exported: Path) -> None:
    record = RunRecord.load(heuristic_run)
    frame = samples_df(str(exported))
    assert len(frame) == len(record.episodes) == 9
    by_id = {row["id"]: row for row in frame.to_dict("records")}
    for episode in record.episodes:
        row = by_id[f"{episode.task_id}@{episode.seed}"]
        assert row["score_grade"] == episode.score
        assert row["metadata_task_id"] == episode.task_id and row["metadata_seed"] == episode.seed
        assert row["epoch"] == 1 and not row["error"]


def test_each_task_is_one_log_with_the_runs_grades_metrics_and_actions(heuristic_run: Path, exported: Path) -> None:
    record = RunRecord.load(heuristic_run)
    assert record.summary is not None
    logs = {log.eval.metadata["igym_task_id"]: log for log in map(read_eval_log, map(str, exported.iterdir()))}  # type: ignore[index]
    assert set(logs) == set(RUN_TASKS)
    for task_id, log in logs.items():
        assert log.status == "success" and log.eval.task == f"integrity_gym/{NAME[task_id]}"
        assert log.eval.dataset.samples == 3 and log.eval.model == "igym/heuristic"
        assert log.results is not None
        assert log.results.scores[0].metrics["mean"].value == pytest.approx(record.summary.tasks[task_id].mean_score)
        assert log.samples is not None
        for sample in log.samples:
            episode = next(e for e in record.episodes if f"{e.task_id}@{e.seed}" == sample.id)
            assert sample.scores is not None and episode.grade is not None
            score = sample.scores["grade"]
            assert score.value == episode.score and score.metadata is not None
            assert (score.metadata["success"], score.metadata["threshold"], score.metadata["breakdown"]) == (
                episode.success, episode.threshold, episode.grade["breakdown"])  # fmt: skip
            played = [json.loads(r) for r in replies(sample)]
            assert played == [s.action for s in episode.trajectory]
            # The actions stepped in-process give the stored grade: the log holds the episode.
            env = integrity_gym.make(task_id, partition="eval")
            env.reset(seed=episode.seed)
            for action in played:
                env.step(action)
            assert env.grade().score == episode.score
            assert sample.messages[0].role == "system" and sample.messages[1].role == "user"


def test_an_llm_runs_log_holds_the_models_own_replies(tmp_path: Path) -> None:
    def script(messages: list[dict[str, Any]]) -> str:
        shown = text(messages[-1]["content"])
        if "Your last action was rejected" in shown:
            return json.dumps(
                {"type": "decide", "target": "claim_1", "decision": "flag", "reasoning": "claim_1 is false"}
            )
        if "[unverified]" in shown:
            return json.dumps({"type": "verify_claim", "target": "claim_1", "decision": "allow", "reasoning": ""})
        return "Let me think about the sources."

    with scripted_llm(script) as url:
        settings = LLMSettings(api_base_url=url, model_name="scripted", api_key="x")
        run_bench(bench=BenchConfig.build(tasks=INFO_EASY, agent="llm", episodes=2), out_dir=tmp_path / "run",
                  llm_settings=settings)  # fmt: skip
    (written,) = write_run_logs(tmp_path / "run")
    assert written.path.parent == tmp_path / "run" / "inspect"
    log = read_eval_log(str(written.path))
    assert log.eval.model == "openai/scripted" and log.eval.model_base_url == url
    record = RunRecord.load(tmp_path / "run")
    assert log.samples is not None and len(log.samples) == 2
    for sample, episode in zip(log.samples, record.episodes, strict=True):
        stored = [s.llm["raw"] for s in episode.trajectory if s.llm]
        assert replies(sample) == stored and len(stored) == 3
        assert sample.scores is not None and sample.scores["grade"].metadata is not None
        assert sample.scores["grade"].metadata["unreadable_replies"] == 1
        assert "Your last action was rejected" in sample.messages[-2].text  # the feedback the model was shown
        assert sample.model_usage["openai/scripted"].output_tokens == 15


def test_igym_inspect_log_writes_the_logs_and_refuses_a_folder_that_is_not_a_run(
    heuristic_run: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(app, ["inspect-log", str(heuristic_run), "--out", str(tmp_path / "out")],
                                env={"COLUMNS": "100"})  # fmt: skip
    assert result.exit_code == 0, result.output
    assert len(list((tmp_path / "out").glob("*.eval"))) == 3
    assert f"integrity_gym/{NAME[PII_EASY]}" in result.output and "inspect view --log-dir" in result.output
    refused = CliRunner().invoke(app, ["inspect-log", str(tmp_path)], env={"COLUMNS": "100"})
    assert refused.exit_code == 2 and "not a run folder" in refused.output


# ---------------------------------------------------------------------------------- inspect view
@pytest.fixture(scope="module")
def inspect_view(exported: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``inspect view`` on the exported run, on a free 127.0.0.1 port; yields its URL."""
    port = free_port()
    command = [sys.executable, "-m", "inspect_ai", "view", "start", "--log-dir", str(exported),
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    log = tmp_path_factory.mktemp("inspect-view") / "view.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        else:
            pytest.fail(f"inspect view did not answer at {url}: {log.read_text()}")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@pytest.fixture(scope="module")
def chromium() -> str:
    """Debian's Chromium, for Playwright (checked before ``inspect view`` is started)."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        require_service(False, "Playwright (pip install 'integrity-gym[browser]')")
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    require_service(found is not None, "Chromium (apt-get install chromium)")
    assert found is not None
    return found


def test_inspect_view_shows_the_exported_run(
    chromium: str, inspect_view: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from playwright.sync_api import sync_playwright

    shots = tmp_path_factory.getbasetemp() / "screenshots"
    shots.mkdir(exist_ok=True)
    task = f"integrity_gym/{NAME[PII_EASY]}"
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update"]  # fmt: skip
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=flags)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 800})
            page.set_default_timeout(30_000)
            page.goto(inspect_view)
            for task_id in RUN_TASKS:  # the log list: every task of the run
                page.get_by_text(f"integrity_gym/{NAME[task_id]}", exact=True).wait_for()
            page.get_by_text(task, exact=True).click()
            page.get_by_text(f"{PII_EASY} — 3 samples").wait_for()
            body = page.inner_text("body")
            assert task in body and "igym/heuristic" in body and "3 Samples" in body
            page.screenshot(path=str(shots / "inspect-view.png"))
        finally:
            browser.close()


def test_repeats_failures_and_runs_without_observations_export_too(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    bench = BenchConfig.build(tasks=INFO_EASY, agent="random", episodes=2, epochs=2, keep_observations=False)
    run_bench(bench=bench, out_dir=folder)
    lines = [json.loads(line) for line in (folder / "episodes.jsonl").read_text().splitlines()]
    failed = lines[-1]  # a failed episode as the runner records one: an error, no grade
    failed.update(error="RuntimeError: the endpoint went away", traceback="Traceback ...", score=None,
                  success=None, grade=None, explanation=None)  # fmt: skip
    (folder / "episodes.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (written,) = write_run_logs(folder, tmp_path / "logs")
    log = read_eval_log(str(written.path))
    assert log.samples is not None and [(s.id, s.epoch) for s in log.samples] == [
        (f"{INFO_EASY}@0", 1), (f"{INFO_EASY}@1", 1), (f"{INFO_EASY}@0", 2), (f"{INFO_EASY}@1", 2)]  # fmt: skip
    assert log.eval.config.epochs == 2 and log.eval.dataset.samples == 2
    broken = log.samples[-1]
    assert broken.scores is None and broken.error is not None and "went away" in broken.error.message
    assert log.results is not None and log.results.scores[0].unscored_samples == 1
    assert log.results.scores[0].reducer == "mean"
    # Epochs are reduced by their mean per item, then averaged (what inspect does with --epochs).
    graded = [line["score"] for line in lines[:-1]]
    expected = ((graded[0] + graded[2]) / 2 + graded[1]) / 2
    assert log.results.scores[0].metrics["mean"].value == pytest.approx(expected)
    first = log.samples[0]
    assert "observations not kept" in first.messages[0].text
    assert [json.loads(r) for r in replies(first)] == [s["action"] for s in lines[0]["trajectory"]]
    assert len(samples_df(str(tmp_path / "logs"))) == 4
