"""The run viewer (``igym view``): its API, its command, and stepping through runs in a real browser."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from integrity_gym.cli import app as cli_app
from integrity_gym.web.viewer import create_viewer_app
from tests.web.conftest import Watched, assert_sound_ids

TASKS = "information_integrity/easy-v3,pii_redaction/gdpr_contract_easy-v4,selective_verification/random-v3"
_RUNNING = re.compile(r"Uvicorn running on (http://127\.0\.0\.1:\d+)")


def bench(out: Path, agent: str, *extra: str) -> list[dict[str, Any]]:
    """A real run folder made by ``igym bench``; its episode records."""
    command = [sys.executable, "-m", "integrity_gym", "bench", "--tasks", TASKS, "--agent", agent]
    command += ["--episodes", "3", "--out", str(out), *(extra or ("--no-db",))]
    subprocess.run(command, check=True, capture_output=True, text=True, timeout=300)
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[dict[str, Any]]]]:
    folder = tmp_path_factory.mktemp("runs")
    made = {agent: (folder / agent, bench(folder / agent, agent)) for agent in ("heuristic", "random")}
    # The same random agent's run again, recorded in a results database and without observations.
    blind = folder / "blind"
    made["blind"] = (blind, bench(blind, "random", "--db", str(folder / "results.sqlite"), "--no-observations"))
    return made


@pytest.fixture(scope="module")
def view(runs: dict[str, tuple[Path, list[dict[str, Any]]]], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Start ``igym view`` on some run folders; yields a function giving the page's URL."""
    started: list[subprocess.Popen[str]] = []
    no_db = tmp_path_factory.mktemp("db") / "absent.sqlite"

    def start(*agents: str) -> str:
        folders = [str(runs[a][0]) for a in agents]
        command = [sys.executable, "-m", "integrity_gym", "view", *folders, "--port", "0", "--db", str(no_db)]
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        started.append(proc)
        assert proc.stdout is not None
        deadline, log = time.monotonic() + 60, []
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            log.append(line)
            match = _RUNNING.search(line)
            if match:
                return match.group(1) + "/"
        raise RuntimeError("igym view did not start:\n" + "".join(log))

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()


# ------------------------------------------------------------------ without a browser


def test_view_refuses_what_is_not_a_run(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli_app, ["view", str(tmp_path), "--port", "0"])
    assert result.exit_code == 2 and "is not a run folder" in " ".join(result.output.split())
    three = CliRunner().invoke(cli_app, ["view", str(tmp_path), str(tmp_path), str(tmp_path)])
    assert three.exit_code == 2 and "two to compare" in " ".join(three.output.split())


def test_api_lists_episodes_without_trajectories(runs: dict[str, tuple[Path, list[dict[str, Any]]]]) -> None:
    folder, records = runs["heuristic"]
    with TestClient(create_viewer_app([folder, runs["random"][0]])) as client:
        listed = client.get("/api/runs").json()["runs"]
        assert [r["label"] for r in listed] == ["heuristic", "random"]
        assert [(e["task_id"], e["seed"], e["score"]) for e in listed[0]["episodes"]] == [
            (r["task_id"], r["seed"], r["score"]) for r in records
        ]
        assert all("trajectory" not in e for e in listed[0]["episodes"])
        assert client.get("/api/episode/0/4").json() == records[4]
        assert client.get(f"/api/episode/0/{len(records)}").status_code == 404
        assert client.get("/api/episode/2/0").status_code == 404
        page = client.get("/")
        assert "run viewer" in page.text and "default-src 'self'" in page.headers["content-security-policy"]
        assert listed[0]["database"] == {}  # a run the database does not know


def test_api_adds_the_database_row_of_a_run(runs: dict[str, tuple[Path, list[dict[str, Any]]]]) -> None:
    folder = runs["blind"][0]
    with TestClient(create_viewer_app([folder], folder.parent / "results.sqlite")) as client:
        row = client.get("/api/runs").json()["runs"][0]["database"]
    assert row["status"] == "complete" and "bench" in row["command"] and row["created_at"]


# ------------------------------------------------------------------ in the browser


def rows(page: Any) -> list[str]:
    return page.locator("#episodes tbody tr").evaluate_all("rows => rows.map(r => r.dataset.key)")


def number(text: str) -> float:
    return float(text.replace("−", "-").replace("+", ""))


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_step_through_a_recorded_run(view: Any, runs: Any, open_page: Any, viewport: str) -> None:
    records = runs["heuristic"][1]
    watched: Watched = open_page(viewport)
    page = watched.page
    page.goto(view("heuristic"))
    page.wait_for_selector("body[data-ready]")
    assert len(rows(page)) == len(records)
    task = "pii_redaction/gdpr_contract_easy-v4"
    page.select_option("#filter-task", task)
    mine = [r for r in records if r["task_id"] == task]
    assert [k.split("\0")[1] for k in rows(page)] == [str(r["seed"]) for r in mine]
    for outcome, wanted in (("success", True), ("failure", False)):
        page.select_option("#filter-outcome", outcome)
        assert len(rows(page)) == sum(1 for r in mine if r["success"] is wanted)
    page.select_option("#filter-outcome", "")
    record = mine[0]
    page.locator("#episodes tbody tr").first.click()
    page.wait_for_selector(".run-col")
    steps = record["trajectory"]
    assert page.inner_text("#step-label") == f"step 0 of {len(steps)}"
    assert page.text_content("#run0-pii-text") == record["reset_observation"]["visible_text"]
    assert page.locator("svg.curve polyline").count() == 1
    assert len(page.get_attribute("svg.curve polyline", "points").split()) == len(steps) + 1
    total = 0.0
    for k, step in enumerate(steps, start=1):
        if k % 2:
            page.click("#step-next")
        else:
            page.keyboard.press("ArrowRight")
        total += step["reward"]
        assert page.inner_text("#step-label") == f"step {k} of {len(steps)}"
        assert step["action_text"] in page.inner_text(".run-col .steps")
        assert number(page.inner_text(".return-now")) == pytest.approx(total, abs=5e-4)
        assert page.text_content("#run0-pii-text") == step["observation"]["visible_text"]
        if k == 1:
            watched.shot("viewer-step")
    assert number(page.inner_text(".return-now")) == pytest.approx(record["total_return"], abs=5e-4)
    assert page.is_disabled("#step-next")
    assert float(page.inner_text("#run0-grade .score")) == pytest.approx(record["score"], abs=5e-4)
    # Why the episode graded so, as recorded: pii names what was missed, mislabelled or over-redacted.
    assert record["explanation"] and page.text_content("#run0-explain") == record["explanation"]
    page.click("#step-prev")
    assert page.inner_text("#step-label") == f"step {len(steps) - 1} of {len(steps)}"
    box = page.locator("svg.curve").bounding_box()
    page.mouse.click(box["x"] + 2, box["y"] + box["height"] / 2)  # left of the first step: step 0
    assert page.inner_text("#step-label") == f"step 0 of {len(steps)}"
    assert page.text_content("#run0-pii-text") == record["reset_observation"]["visible_text"]
    track = page.locator("#step-slider").bounding_box()  # drag the slider from its start to its end
    page.mouse.move(track["x"] + 4, track["y"] + track["height"] / 2)
    page.mouse.down()
    for fraction in (0.25, 0.5, 0.75, 1.0):
        page.mouse.move(track["x"] + fraction * track["width"], track["y"] + track["height"] / 2, steps=3)
    page.mouse.up()
    assert page.inner_text("#step-label") == f"step {len(steps)} of {len(steps)}"


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_compare_two_runs_on_the_same_episodes(view: Any, runs: Any, open_page: Any, viewport: str) -> None:
    ours, theirs = runs["heuristic"][1], runs["random"][1]
    watched: Watched = open_page(viewport)
    page = watched.page
    page.goto(view("heuristic", "random"))
    page.wait_for_selector("body[data-ready]")
    assert page.locator("#runs-line .runname").all_inner_texts() == ["heuristic", "random"]
    assert len(rows(page)) == len(ours)
    keyed = {(r["task_id"], r["seed"]): r for r in theirs}
    differ = [r for r in ours if r["success"] != keyed[(r["task_id"], r["seed"])]["success"]]
    page.select_option("#filter-outcome", "differs")
    assert len(rows(page)) == len(differ)
    page.select_option("#filter-outcome", "")
    task = "selective_verification/random-v3"
    page.select_option("#filter-task", task)
    first = next(r for r in ours if r["task_id"] == task)
    other = keyed[(task, first["seed"])]
    page.locator("#episodes tbody tr").first.click()
    page.wait_for_selector(".run-col[data-run='1']")
    assert page.locator("svg.curve polyline").count() == 2
    page.click("#step-next")
    assert page.locator(".run-col").count() == 2
    for r, (name, record) in enumerate((("heuristic", first), ("random", other))):
        column = page.get_by_role("region", name=name, exact=True)  # each column is named by its run
        assert column.get_attribute("data-run") == str(r)
        assert record["trajectory"][0]["action_text"] in column.locator(".steps").inner_text()
        score = column.locator(f"#run{r}-grade .score").inner_text()
        assert float(score) == pytest.approx(record["score"], abs=5e-4)
        image = column.locator(f"#run{r}-picture").get_attribute("src")
        assert image == record["trajectory"][0]["observation"]["image"]
    watched.shot("viewer-compare")


@pytest.mark.parametrize("agents", [("heuristic",), ("heuristic", "random")], ids=["one-run", "compare"])
def test_every_id_once_at_every_step(view: Any, runs: Any, open_page: Any, agents: tuple[str, ...]) -> None:
    """Each column renders the same parts: their ids must not repeat, on any task, at any step."""
    from playwright.sync_api import expect  # the browser extra (the browser fixture skipped without it)

    watched: Watched = open_page("desktop")
    page = watched.page
    page.goto(view(*agents))
    page.wait_for_selector("body[data-ready]")
    for task in TASKS.split(","):
        page.select_option("#filter-task", task)
        page.locator("#episodes tbody tr").first.click()
        expect(page.locator("#detail h2").first).to_contain_text(task)  # this episode's, not the last one's
        expect(page.locator(".run-col")).to_have_count(len(agents))
        seen = assert_sound_ids(page)
        while not page.is_disabled("#step-next"):
            page.click("#step-next")
            seen = max(seen, assert_sound_ids(page))
        steps = max(len(next(r for r in runs[a][1] if r["task_id"] == task)["trajectory"]) for a in agents)
        assert page.inner_text("#step-label") == f"step {steps} of {steps}"
        # Vacuous if the columns had no ids at all: each run's grade card has one.
        assert page.locator("[id$='grade']").count() == len(agents) and seen > 10


def test_a_run_without_observations_shows_actions_and_rewards(view: Any, runs: Any, open_page: Any) -> None:
    records = runs["blind"][1]
    watched: Watched = open_page("desktop")
    page = watched.page
    page.goto(view("blind"))
    page.wait_for_selector("body[data-ready]")
    assert "complete" not in page.inner_text("#runs-line")  # igym view was given no database here
    page.select_option("#filter-task", "information_integrity/easy-v3")
    record = next(r for r in records if r["task_id"] == "information_integrity/easy-v3")
    page.locator("#episodes tbody tr").first.click()
    page.wait_for_selector(".run-col")
    page.click("#step-next")
    assert record["trajectory"][0]["action_text"] in page.inner_text(".run-col .steps")
    assert "Observation not recorded" in page.inner_text("#run0-observation")
    watched.shot("viewer-no-observations")


def test_a_long_run_lists_its_first_rows_only(
    runs: Any, open_page: Any, view: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder, records = runs["random"]
    long_run = tmp_path_factory.mktemp("long") / "random"
    long_run.mkdir()
    (long_run / "summary.json").write_text((folder / "summary.json").read_text())
    copies = [{**records[0], "seed": seed, "index": seed} for seed in range(600)]
    (long_run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in copies))
    runs["long"] = (long_run, copies)
    watched: Watched = open_page("desktop")
    page = watched.page
    page.goto(view("long"))
    page.wait_for_selector("body[data-ready]")
    assert len(rows(page)) == 500 and page.inner_text("#count") == "600 of 600 episodes"
    assert "first 500" in page.inner_text("#more")


def test_a_cut_off_episode_and_its_model_use_are_shown(
    runs: Any, open_page: Any, view: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Truncation is marked in the list and the episode; tokens and latency show in the episode's head."""
    cut = tmp_path_factory.mktemp("cut") / "cut"
    subprocess.run([sys.executable, "-m", "integrity_gym", "bench", "--tasks", "information_integrity/easy-v3",
                    "--agent", "heuristic", "--episodes", "1", "--max-steps", "2", "--out", str(cut), "--no-db"],
                   check=True, capture_output=True, text=True, timeout=300)  # fmt: skip
    [record] = [json.loads(line) for line in (cut / "episodes.jsonl").read_text().splitlines() if line.strip()]
    assert record["truncated"] is True
    # What an llm agent's record holds (bench.records.Usage), so the page has model use to show.
    record["usage"] = {"prompt_tokens": 1234, "completion_tokens": 56, "latency_s": 3.21, "llm_calls": 2}
    (cut / "episodes.jsonl").write_text(json.dumps(record) + "\n")
    runs["cut"] = (cut, [record])
    watched: Watched = open_page("desktop")
    page = watched.page
    page.goto(view("cut"))
    page.wait_for_selector("body[data-ready]")
    assert page.locator("#episodes tbody tr .cut").count() == 1
    page.locator("#episodes tbody tr").first.click()
    page.wait_for_selector(".run-col")
    assert "stopped by the step cap" in page.inner_text(".run-col")
    usage = "2 model calls · 1234 prompt + 56 completion tokens · 3.2 s waiting for the model"
    assert page.inner_text("#run0-usage") == usage
    watched.shot("viewer-cut-and-usage")
