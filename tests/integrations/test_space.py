"""Pushable OpenEnv Space folders (``igym space``, docs/interop.md#openenv-spaces).

Each environment's folder is written into a temporary directory; OpenEnv 0.10.0's own checks then
run on it: ``openenv validate --level static``, and ``openenv push`` with only its Hugging Face
calls replaced (push has no dry-run flag: everything it does before the upload runs, and the
folder it would upload is compared with the one written). The command the folder's Dockerfile
runs, with the variables the Dockerfile sets, is started here (no image is built): the folder's
own ``client.py`` plays an episode on it to its grade, and ``openenv validate --url`` passes on its
bare address, where a Space is checked. The openenv-dependent tests need the ``openenv`` extra.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import yaml
from pydantic import ValidationError
from typer.testing import CliRunner

import integrity_gym
import integrity_gym.cli.spacing  # registers `igym space`, whatever cli/__init__ imports
from integrity_gym.cli import app
from integrity_gym.core.types import Grade
from integrity_gym.integrations.openenv_space import FILES, SPACE_PORT, SpaceError, build_wheel, write_space
from tests.conftest import require_service
from tests.server.episodes import reference
from tests.server.servers import ServerProcess

ENVS = list(dict.fromkeys(spec.env for spec in integrity_gym.list_tasks()))
SEED = 11
_RUNNING = re.compile(r"Uvicorn running on (http://127\.0\.0\.1:\d+)")


def require_openenv() -> None:
    require_service(importlib.util.find_spec("openenv") is not None, "the openenv package (extra 'openenv')")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """integrity-gym's wheel, built once from this checkout (what ``igym space`` does by default)."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def spaces(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("spaces")
    return {env: write_space(env, root / env, wheels=wheel).path for env in ENVS}


def _instructions(dockerfile: str) -> list[tuple[str, str]]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    lines = [line for line in dockerfile.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", " ", "\n".join(lines))
    return [(line.split(None, 1)[0], line.split(None, 1)[1]) for line in joined.splitlines() if line.strip()]


def image_command(folder: Path) -> tuple[list[str], dict[str, str]]:
    """The command the folder's image runs and the IGYM_* variables its Dockerfile sets."""
    steps = _instructions((folder / "Dockerfile").read_text(encoding="utf-8"))
    cmd: list[str] = json.loads([rest for op, rest in steps if op == "CMD"][-1])
    variables = dict(pair.split("=", 1) for op, rest in steps if op == "ENV" for pair in rest.split())
    return cmd, {k: v for k, v in variables.items() if k.startswith("IGYM_")}


def start_image_command(folder: Path) -> ServerProcess:
    """Run the image's command here (this interpreter, 127.0.0.1, a free port) with its variables."""
    cmd, variables = image_command(folder)
    cmd = [sys.executable if part == "python3" else part for part in cmd]
    cmd[cmd.index("--host") + 1] = "127.0.0.1"
    cmd[cmd.index("--port") + 1] = "0"
    environ = {k: v for k, v in os.environ.items() if not k.startswith("IGYM_")} | variables
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environ)
    assert proc.stdout is not None
    log: list[str] = []
    deadline = time.monotonic() + 60
    for line in proc.stdout:
        log.append(line)
        match = _RUNNING.search(line)
        if match:
            server = ServerProcess(match.group(1), proc, log)
            # Keep reading its output so the pipe never fills.
            threading.Thread(target=lambda: log.extend(proc.stdout or ()), daemon=True).start()
            while time.monotonic() < deadline:
                try:
                    if httpx.get(server.url + "/health", timeout=5, trust_env=False).status_code == 200:
                        return server
                except httpx.HTTPError:
                    time.sleep(0.05)
            server.stop()
            break
        if time.monotonic() > deadline:
            break
    proc.kill()
    proc.wait()
    raise RuntimeError(f"{' '.join(cmd)} did not start:\n" + "".join(log))


@pytest.fixture(scope="module")
def image_servers(spaces: dict[str, Path]) -> Iterator[dict[str, ServerProcess]]:
    """Each folder's image command, started at once (their start-ups overlap)."""
    require_openenv()  # only the openenv tests use them
    with ThreadPoolExecutor(len(spaces)) as pool:
        futures = {env: pool.submit(start_image_command, folder) for env, folder in spaces.items()}
    servers = {env: future.result() for env, future in futures.items()}
    try:
        yield servers
    finally:
        for server in servers.values():
            server.stop()


# OpenEnv's CLI takes seconds to import, so one process runs every check. `openenv push` has no dry
# run: only its Hugging Face calls (login, create the Space, upload, set variables) are replaced,
# and the upload records the staged folder it was given.
_OPENENV_CHECKS = """
import hashlib, json, sys
from pathlib import Path
from typer.testing import CliRunner
from openenv.cli.__main__ import app
from openenv.cli.commands import push

uploads = {}
def upload(repo_id, staging_dir, api, ignore_patterns, **kwargs):
    uploads[repo_id] = {p.relative_to(staging_dir).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                        for p in Path(staging_dir).rglob("*") if p.is_file()}
push._ensure_hf_authenticated = lambda: "tester"
push._create_hf_space = lambda *args, **kwargs: None
push._upload_to_hf_space = upload
push._apply_space_variables_and_secrets = lambda *args, **kwargs: None
push.HfApi = lambda *args, **kwargs: None
runner = CliRunner()
report = {}
for env, (folder, url) in json.loads(sys.argv[1]).items():
    runs = {
        "static": ["validate", folder, "--level", "static", "--skip-build"],
        "push": ["push", folder],
        "url": ["validate", "--url", url],
    }
    report[env] = {}
    for name, args in runs.items():
        result = runner.invoke(app, args)
        report[env][name] = [result.exit_code, result.output[-3000:]]
    report[env]["uploaded"] = uploads.pop(f"tester/{env}", None)
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def openenv_checks(spaces: dict[str, Path], image_servers: dict[str, ServerProcess]) -> dict[str, Any]:
    require_openenv()
    targets = {env: [str(folder), image_servers[env].url] for env, folder in spaces.items()}
    proc = subprocess.run(
        [sys.executable, "-c", _OPENENV_CHECKS, json.dumps(targets)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.parametrize("env", ENVS)
def test_the_folder_holds_what_push_requires(spaces: dict[str, Path], env: str) -> None:
    folder = spaces[env]
    for name in FILES:
        assert (folder / name).is_file(), name
    wheels = [w.name for w in (folder / "wheels").iterdir()]
    assert wheels == [f"integrity_gym-{integrity_gym.__version__}-py3-none-any.whl"]
    manifest = yaml.safe_load((folder / "openenv.yaml").read_text())
    package = Path(integrity_gym.__file__).parent / "envs" / env
    own = yaml.safe_load((package / "openenv.yaml").read_text())
    assert manifest["spec_version"] == 1 and manifest["name"] == env and manifest["port"] == SPACE_PORT
    assert manifest["validation"] == own["validation"]  # the environment's own declaration, one source
    front = yaml.safe_load((folder / "README.md").read_text().split("---\n")[1])
    assert front["sdk"] == "docker" and front["app_port"] == SPACE_PORT and front["base_path"] == "/web"
    cmd, variables = image_command(folder)
    assert cmd[:3] == ["python3", "-m", "integrity_gym.server"] and str(SPACE_PORT) in cmd
    assert variables == {"IGYM_ROOT": env, "IGYM_TASKS": f"{env}/*"}
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    assert project["name"] == f"openenv-{env}"
    assert f"integrity-gym=={integrity_gym.__version__}" in project["dependencies"]
    for name in ("client.py", "models.py", "__init__.py"):
        compile((folder / name).read_text(), name, "exec")
    assert "integrity_gym.server" not in (folder / "client.py").read_text()


def _words(output: str) -> str:
    """CLI output with the console's line wrapping undone."""
    return " ".join(output.split())


def test_igym_space_writes_a_folder_and_never_clobbers_another(tmp_path: Path, wheel: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "space"
    args = ["space", "selective_verification", "--out", str(out), "--wheels", str(wheel)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "openenv push" in result.output and (out / "client.py").is_file()
    again = runner.invoke(app, args)
    assert again.exit_code == 2 and "add --overwrite" in _words(again.output)
    assert runner.invoke(app, [*args, "--overwrite"]).exit_code == 0
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me")
    refused = runner.invoke(
        app, ["space", "pii_redaction", "--out", str(foreign), "--overwrite", "--wheels", str(wheel)]
    )
    assert refused.exit_code == 2 and "not written by igym space" in _words(refused.output)
    assert (foreign / "notes.txt").read_text() == "keep me"
    unknown = runner.invoke(app, ["space", "no_such_env", "--out", str(tmp_path / "x"), "--wheels", str(wheel)])
    assert unknown.exit_code == 2 and "pii_redaction" in unknown.output
    assert not (tmp_path / "x").exists()


def test_a_folder_of_every_wheel_builds_without_an_index(tmp_path: Path, wheel: Path) -> None:
    house = tmp_path / "wheels"
    house.mkdir()
    (house / wheel.name).write_bytes(wheel.read_bytes())
    (house / "pydantic-2.0-py3-none-any.whl").write_bytes(b"")  # stands for every dependency's wheel
    space = write_space("pii_redaction", tmp_path / "offline", wheels=house)
    assert space.offline and sorted(space.wheels) == sorted(p.name for p in house.iterdir())
    assert "--no-index --find-links /tmp/wheels" in (space.path / "Dockerfile").read_text()
    other = tmp_path / "integrity_gym-9.9.9-py3-none-any.whl"
    other.write_bytes(wheel.read_bytes())
    with pytest.raises(SpaceError, match="must be one version"):
        write_space("pii_redaction", tmp_path / "mismatch", wheels=other)
    assert not (tmp_path / "mismatch").exists()


@pytest.mark.parametrize("env", ENVS)
def test_openenv_validates_the_folder(openenv_checks: dict[str, Any], env: str) -> None:
    code, output = openenv_checks[env]["static"]
    assert code == 0 and "Verdict: PASS" in output, output


@pytest.mark.parametrize("env", ENVS)
def test_openenv_push_uploads_the_folder_as_written(
    openenv_checks: dict[str, Any], spaces: dict[str, Path], env: str
) -> None:
    code, output = openenv_checks[env]["push"]
    assert code == 0 and "Deployment complete" in output, output
    assert "⚠" not in output, output  # no missing file, nothing rewritten
    folder = spaces[env]
    written = {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file()
    }
    # push rewrites neither the README's front matter nor the Dockerfile: the Space builds this folder.
    assert openenv_checks[env]["uploaded"] == written


@pytest.mark.parametrize("env", ENVS)
def test_openenv_validate_url_passes_at_the_image_root(openenv_checks: dict[str, Any], env: str) -> None:
    code, output = openenv_checks[env]["url"]
    assert code == 0 and "Verdict: PASS" in output, output


def _load_package(folder: Path, name: str) -> ModuleType:
    """Import the folder as a package, as ``pip install`` of it would make it importable."""
    spec = importlib.util.spec_from_file_location(
        name, folder / "__init__.py", submodule_search_locations=[str(folder)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("env", ENVS)
def test_the_folders_client_plays_an_episode_to_its_grade(
    spaces: dict[str, Path], image_servers: dict[str, ServerProcess], env: str
) -> None:
    """The generated client against the image's command: every observation as in-process, then the grade."""
    require_openenv()
    name = f"igym_space_{env}"
    package = _load_package(spaces[env], name)
    try:
        task = next(spec for spec in integrity_gym.list_tasks() if spec.env == env)
        assert package.TASKS[0] == task.id
        env_class = task.env_class()
        ref = reference(task.id, SEED)
        expected = [json.loads(line) for line in ref.seen]
        client_class = getattr(package, "".join(w.capitalize() for w in env.split("_")) + "Env")
        with client_class(base_url=image_servers[env].url).sync() as client:
            result = client.reset(seed=SEED, task=task.id)
            assert isinstance(result.observation, env_class.observation_type)
            assert result.observation.model_dump(mode="json") == expected[0]
            assert package.final_grade(result) is None
            for action, want in zip(ref.actions, expected[1:], strict=True):
                try:  # a typed action where the reference's is valid, else the dict itself
                    sent: Any = env_class.action_type.model_validate(action)
                except ValidationError:
                    sent = action
                result = client.step(sent)
                assert result.observation.model_dump(mode="json") == want["observation"]
                assert (result.reward, result.done) == (want["reward"], want["done"])
            assert result.done
            assert package.final_grade(result) == Grade.model_validate_json(ref.grade)
            assert client.state().step_count == len(ref.actions)
    finally:
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]
