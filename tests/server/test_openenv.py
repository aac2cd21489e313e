"""OpenEnv's own, unmodified client and validator against our server (optional ``openenv`` extra)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

import integrity_gym
from tests.conftest import require_service
from tests.server.episodes import ENV_NAMES, SERVED, reference
from tests.server.servers import ServerProcess

SEED = 11
REGISTERED_ENVS = sorted({spec.env for spec in integrity_gym.list_tasks()})
ENVS_DIR = Path(integrity_gym.__file__).parent / "envs"


def require_openenv() -> None:
    require_service(importlib.util.find_spec("openenv") is not None, "the openenv package (extra 'openenv')")


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_openenv_client_completes_an_episode(server: ServerProcess, env_name: str) -> None:
    require_openenv()
    from openenv.core import GenericEnvClient

    spec = next(s for s in SERVED if s.env == env_name)
    ref = reference(spec.id, SEED)
    expected = [json.loads(line) for line in ref.seen]
    client = GenericEnvClient(base_url=f"{server.url}/{env_name}").sync()
    with client:
        first = client.reset(seed=SEED, task=spec.id)
        assert first.observation == expected[0]
        assert first.done is False
        for action, want in zip(ref.actions, expected[1:], strict=True):
            result = client.step(action)
            assert result.observation == want["observation"]
            assert result.reward == want["reward"]
            assert result.done == want["done"]
        assert result.done
        state = client.state()
        assert state["ground_truth_hidden"] is True  # no admin token: ids and counters only
        assert state["step_count"] == len(ref.actions)


@pytest.mark.parametrize("env_name", ENV_NAMES)
def test_openenv_runtime_validation_passes(server: ServerProcess, env_name: str) -> None:
    require_openenv()
    from openenv.cli._validation import validate_running_environment  # what `openenv validate --url` runs

    report = validate_running_environment(f"{server.url}/{env_name}", timeout_s=10)
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert report["passed"] and report["mode"] == "simulation", failed


# OpenEnv's CLI takes seconds to import, so one process runs it for every environment.
_CLI_LOOP = """
import json, sys
from typer.testing import CliRunner
from openenv.cli.__main__ import app
runner = CliRunner()
codes = {}
for args in json.loads(sys.argv[1]):
    result = runner.invoke(app, args)
    codes[" ".join(args)] = [result.exit_code, result.output[-2000:]]
print(json.dumps(codes))
"""


def test_openenv_cli_validates_every_environment(server: ServerProcess) -> None:
    """``openenv validate --url`` on every served env, and ``--level static`` on every manifest."""
    require_openenv()
    runs = [["validate", "--url", f"{server.url}/{name}"] for name in ENV_NAMES]
    runs += [["validate", str(ENVS_DIR / name), "--level", "static", "--skip-build"] for name in REGISTERED_ENVS]
    proc = subprocess.run(
        [sys.executable, "-c", _CLI_LOOP, json.dumps(runs)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    codes = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(codes) == len(runs)
    for args, (code, output) in codes.items():
        assert code == 0, f"openenv {args} exited {code}:\n{output}"
        assert "Verdict: PASS" in output, output


@pytest.mark.parametrize("env_name", REGISTERED_ENVS)
def test_every_environment_has_a_manifest(env_name: str) -> None:
    manifest = ENVS_DIR / env_name / "openenv.yaml"
    assert manifest.is_file(), f"{env_name} has no openenv.yaml: copy another environment's and adapt it"
    import yaml

    data = yaml.safe_load(manifest.read_text())
    assert data["name"] == env_name and data["path"] == f"/{env_name}"
    assert data["app"] == "integrity_gym.server.asgi:app"


def test_openenv_client_shows_which_reset_argument_is_wrong(server: ServerProcess) -> None:
    """OpenEnv's client passes the server's message on: it must name the field and what to use."""
    require_openenv()
    from openenv.core import GenericEnvClient

    client = GenericEnvClient(base_url=f"{server.url}/minimal").sync()
    with client:
        with pytest.raises(Exception, match=r"data\.task_id: unknown field; use 'task'"):
            client.reset(task_id="minimal/count-v0")
        with pytest.raises(Exception, match=r"data\.seed: Input should be a valid integer"):
            client.reset(seed="one")
        assert client.reset(seed=1).done is False  # the connection survives both


@pytest.mark.parametrize("args", [["--root", "selective_verification"], ["--profile", "seed001"]])
def test_openenv_cli_validates_the_root(args: list[str]) -> None:
    """With one environment at the root, ``openenv validate --url`` passes on the bare address."""
    require_openenv()
    from tests.server.servers import start_server

    root_server = start_server(args, admin_token=None)
    try:
        runs = [["validate", "--url", root_server.url]]
        proc = subprocess.run(
            [sys.executable, "-c", _CLI_LOOP, json.dumps(runs)], capture_output=True, text=True, timeout=300
        )
    finally:
        root_server.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    ((code, output),) = json.loads(proc.stdout.strip().splitlines()[-1]).values()
    assert code == 0 and "Verdict: PASS" in output, output
