"""Pushable OpenEnv Space folders: one environment per folder, served at the root of its own image.

``write_space(env, out)`` (``igym space ENV``) writes a folder that ``openenv push`` uploads as a
Hugging Face Space, and that ``openenv validate --level static`` passes (docs/interop.md):

* ``openenv.yaml`` — OpenEnv's manifest (spec_version 1), with the environment's own ``validation:``
  block (copied from the ``openenv.yaml`` beside its code);
* ``Dockerfile`` — installs integrity-gym from the wheel in ``wheels/`` and runs its server with
  ``IGYM_ROOT=<env>``, so ``/ws``, ``/reset``, ``/metadata``, ``/schema``, ``/mcp`` ... answer at the
  root, where a Space is reached and checked, on port 7860 as uid 1000;
* ``client.py``, ``models.py``, ``__init__.py``, ``pyproject.toml`` — a thin typed OpenEnv client
  (``EnvClient``; no server code) and the environment's wire models re-exported, the package
  ``openenv push`` requires and OpenEnv's ``AutoEnv`` looks for (distribution ``openenv-<env>``);
* ``README.md`` — the Space's front matter, how to connect, and the environment's own README.

integrity-gym is on no package index, so the image cannot ``pip install integrity-gym``: its wheel
travels in the folder. By default the Dockerfile installs that wheel and takes its dependencies
from PyPI at build time (a Space's builder reaches PyPI); given a folder holding every dependency's
wheel as well (``docker/wheels.sh`` makes one), it installs with ``--no-index`` and downloads nothing.
"""

from __future__ import annotations

import inspect
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

import integrity_gym
from integrity_gym.core.registry import TaskSpec, list_tasks

#: The port a Hugging Face Space expects the app on (its ``app_port`` default), as in the main image.
SPACE_PORT = 7860
#: A registry image with Python 3.11, venv and useradd: what a Space's builder can pull.
DEFAULT_BASE = "python:3.11-slim-bookworm"
#: The first line of every generated manifest: ``--overwrite`` replaces only folders that carry it.
MARKER = "# Written by `igym space"
#: What a Space folder holds besides ``wheels/`` (and the empty ``outputs/`` push recommends).
FILES = ("openenv.yaml", "Dockerfile", "README.md", "pyproject.toml", "__init__.py", "client.py", "models.py")


class SpaceError(ValueError):
    """A Space folder cannot be written as asked; the message says what to change."""


@dataclass(frozen=True)
class Space:
    """A Space folder that was written."""

    env: str
    path: Path
    version: str
    wheels: tuple[str, ...]
    offline: bool
    client_class: str


def environments() -> list[str]:
    """The registered environments, in registry order."""
    return list(dict.fromkeys(spec.env for spec in list_tasks()))


def client_class_name(env: str) -> str:
    """The client's class name as OpenEnv's AutoEnv infers it: ``pii_redaction`` -> ``PiiRedactionEnv``."""
    return "".join(word.capitalize() for word in env.split("_")) + "Env"


def source_checkout() -> Path | None:
    """The source tree this integrity-gym runs from (an editable install), or None for an installed wheel."""
    root = Path(integrity_gym.__file__).resolve().parents[2]
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        return None
    return root if project.get("name") == "integrity-gym" else None


def build_wheel(dest: Path) -> Path:
    """Build integrity-gym's wheel from this source checkout into ``dest``; return its path."""
    root = source_checkout()
    if root is None:
        raise SpaceError(
            "this integrity-gym was installed from a wheel, not run from its source, so no wheel can be "
            "built here: pass --wheels with that wheel (or a folder of wheels that holds it)"
        )
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="igym-wheel-") as tmp:
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", tmp, str(root)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        built = sorted(Path(tmp).glob("integrity_gym-*.whl"))
        if proc.returncode != 0 or not built:
            raise SpaceError(
                f"building integrity-gym's wheel from {root} failed ({' '.join(cmd[1:5])}): "
                f"{(proc.stderr or proc.stdout).strip()[-1500:]}\nbuild one yourself and pass it with --wheels"
            )
        target = dest / built[0].name
        shutil.copy2(built[0], target)
    return target


def wheel_version(path: Path) -> str:
    """The version in a wheel's file name (``integrity_gym-0.1.0-py3-none-any.whl`` -> ``0.1.0``)."""
    parts = path.name.split("-")
    if len(parts) < 5 or not path.name.endswith(".whl"):
        raise SpaceError(f"{path.name} is not a wheel's file name (name-version-python-abi-platform.whl)")
    return parts[1]


def _our_wheel(wheels: Path) -> tuple[Path, list[Path], bool]:
    """From ``--wheels``: integrity-gym's wheel, every wheel to copy, and whether they make an offline set."""
    if wheels.is_file():
        if not wheels.name.startswith("integrity_gym-"):
            raise SpaceError(f"--wheels {wheels}: not integrity-gym's wheel (integrity_gym-VERSION-...whl)")
        return wheels, [wheels], False
    if not wheels.is_dir():
        raise SpaceError(f"--wheels {wheels}: no such file or folder")
    found = sorted(wheels.glob("*.whl"))
    ours = [w for w in found if w.name.startswith("integrity_gym-")]
    if len(ours) != 1:
        raise SpaceError(
            f"--wheels {wheels}: a folder of wheels must hold exactly one integrity_gym-*.whl, "
            f"found {len(ours)}; docker/wheels.sh DIR makes such a folder"
        )
    return ours[0], found, True


def write_space(env: str, out: Path, *, wheels: Path | None = None, overwrite: bool = False) -> Space:
    """Write the pushable OpenEnv Space folder of ``env`` into ``out``.

    ``wheels``: integrity-gym's wheel (dependencies then come from PyPI when the image is built), or
    a folder holding it and every dependency's wheel (installed with ``--no-index``); by default a
    wheel is built from this source checkout. ``out`` must not exist or be empty, unless
    ``overwrite`` and it is a folder this function wrote before.
    """
    specs = [spec for spec in list_tasks() if spec.env == env]
    if not specs:
        raise SpaceError(f"no environment {env!r}; choose one of: {', '.join(environments())}")
    with tempfile.TemporaryDirectory(prefix="igym-space-") as tmp:
        # Everything is read and checked before `out` is touched, so a refusal leaves no half folder.
        if wheels is None:
            ours = build_wheel(Path(tmp))
            every, offline = [ours], False
        else:
            ours, every, offline = _our_wheel(wheels)
        version = wheel_version(ours)
        if version != integrity_gym.__version__:
            raise SpaceError(
                f"the wheel is integrity-gym {version} but this igym is {integrity_gym.__version__}: the "
                "manifest, client and README are read from this install, so both must be one version; pass a "
                f"wheel of {integrity_gym.__version__} (or none, to build one from this checkout)"
            )
        facts = _Facts.of(env, specs, version, ours.name, offline)
        _prepare(out, overwrite)
        (out / "wheels").mkdir()
        for wheel in every:
            shutil.copy2(wheel, out / "wheels" / wheel.name)
    for name, text in (
        ("openenv.yaml", _manifest(facts)),
        ("Dockerfile", _dockerfile(facts)),
        ("README.md", _readme(facts)),
        ("pyproject.toml", _pyproject(facts)),
        ("__init__.py", _init(facts)),
        ("client.py", _client(facts)),
        ("models.py", _models(facts)),
    ):
        (out / name).write_text(text, encoding="utf-8")
    # `openenv push` warns without it (validation writes its reports there); empty, it is not uploaded.
    (out / "outputs").mkdir()
    return Space(env, out, version, tuple(w.name for w in every), offline, facts.client)


def _prepare(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise SpaceError(f"--out {out} is a file; name a folder")
    if out.is_dir() and any(out.iterdir()):
        manifest = out / "openenv.yaml"
        ours = manifest.is_file() and manifest.read_text(encoding="utf-8").startswith(MARKER)
        if not overwrite:
            hint = "add --overwrite to replace it" if ours else "choose an empty or new folder"
            raise SpaceError(f"--out {out} is not empty; {hint}")
        if not ours:
            raise SpaceError(f"--out {out} was not written by igym space, so --overwrite leaves it alone")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class _Facts:
    """Everything the templates say about one environment, read once."""

    env: str
    version: str
    wheel: str
    offline: bool
    client: str
    description: str
    validation: dict[str, Any]
    readme: str
    models_module: str
    action: str
    observation: str
    state: str
    tasks: tuple[TaskSpec, ...]

    @classmethod
    def of(cls, env: str, specs: list[TaskSpec], version: str, wheel: str, offline: bool) -> _Facts:
        env_class = specs[0].env_class()
        package = env_class.__module__.rpartition(".")[0]
        try:
            own = yaml.safe_load((resources.files(package) / "openenv.yaml").read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise SpaceError(
                f"{env} has no readable openenv.yaml beside its code ({package}): copy another environment's "
                f"and adapt it ({exc})"
            ) from exc
        if not isinstance(own, dict) or not isinstance(own.get("validation"), dict):
            raise SpaceError(f"{package}/openenv.yaml has no `validation:` block, which `openenv validate` needs")
        try:
            readme = (resources.files(package) / "README.md").read_text(encoding="utf-8")
        except OSError:
            readme = ""
        doc = inspect.getdoc(env_class) or ""
        models = {t.__module__ for t in (env_class.action_type, env_class.observation_type, env_class.state_type)}
        if len(models) != 1:
            raise SpaceError(f"{env}'s action, observation and state models live in different modules: {models}")
        return cls(
            env=env,
            version=version,
            wheel=wheel,
            offline=offline,
            client=client_class_name(env),
            description=str(own.get("description") or doc.split("\n\n")[0].replace("\n", " ")),
            validation=own["validation"],
            readme=readme,
            models_module=models.pop(),
            action=env_class.action_type.__name__,
            observation=env_class.observation_type.__name__,
            state=env_class.state_type.__name__,
            tasks=tuple(specs),
        )


def _manifest(f: _Facts) -> str:
    header = f"""{MARKER} {f.env}` (integrity-gym {f.version}); write it again rather than edit it.
# OpenEnv manifest of integrity-gym's {f.env} environment as a Hugging Face Space. The image
# (Dockerfile) serves this one environment at its root, on port {SPACE_PORT}:
#   WebSocket  ws://HOST:{SPACE_PORT}/ws  (OpenEnv's protocol: reset / step / state / close)
#   HTTP       http://HOST:{SPACE_PORT}/{{health,metadata,schema,mcp,reset,step,tasks,...}}
# Check it with: openenv validate . --level static --skip-build
#           and: openenv validate --url http://HOST:{SPACE_PORT}    (the running image)
# Upload with:   openenv push . --repo-id USER/NAME
"""
    body = {
        "spec_version": 1,
        "name": f.env,
        "version": f.version,
        "description": f.description,
        "type": "space",
        "runtime": "fastapi",
        # The image sets IGYM_ROOT, which is what puts this environment at '/' of that app.
        "app": "integrity_gym.server.asgi:app",
        "port": SPACE_PORT,
        "validation": f.validation,
    }
    return header + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None)


def _dockerfile(f: _Facts) -> str:
    if f.offline:
        source = "wheels/ holds every wheel needed, installed with --no-index: the build downloads nothing."
        flags = "--no-index --find-links /tmp/wheels "
    else:
        source = "wheels/ holds integrity-gym's wheel (it is on no package index); its dependencies come from PyPI."
        flags = ""
    return f"""# integrity-gym {f.version}: the {f.env} environment alone, at the root of a Hugging Face Space.
# Written by `igym space {f.env}`. OpenEnv's WebSocket protocol at /ws and the stateful HTTP
# API (/reset, /step, ...), with /health, /metadata, /schema and /mcp where `openenv validate --url`
# looks for them, on port {SPACE_PORT} as uid 1000: what a Space expects.
# {source}
#
# The base needs python3 3.11 with venv, and useradd. A Space's builder pulls the default from
# Docker Hub; where no registry is reachable, use integrity-gym's own base (`make image` makes it
# with debootstrap): docker build --build-arg BASE=igym-base:bookworm -t igym-{f.env} .
# `openenv push --base-image IMAGE` replaces the FROM line instead. One stage on purpose: push
# rewrites only the first FROM, and a venv copied between two different bases would break.
# `openenv push` also adds ENABLE_WEB_INTERFACE=true where it does not find that name: this server
# has no such switch, its playground is always at /web/ (the Space's base_path).
ARG BASE={DEFAULT_BASE}
FROM ${{BASE}}
COPY wheels /tmp/wheels
RUN python3 -m venv /opt/igym \\
    && /opt/igym/bin/pip install --no-cache-dir {flags}"/tmp/wheels/{f.wheel}[server]" \\
    && /opt/igym/bin/pip uninstall --yes pip \\
    && find /opt/igym -name __pycache__ -prune -exec rm -rf {{}} +
RUN useradd --create-home --uid 1000 --shell /usr/sbin/nologin igym
# IGYM_ROOT puts {f.env} at '/', where a Space is reached and checked; IGYM_TASKS serves no other
# environment. Every other IGYM_* setting (docs/server.md) can be set as a Space variable.
ENV PATH=/opt/igym/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 LANG=C.UTF-8 \\
    IGYM_ROOT={f.env} IGYM_TASKS={f.env}/*
USER igym
WORKDIR /home/igym
EXPOSE {SPACE_PORT}
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["python3", "-c", \\
    "import urllib.request; urllib.request.urlopen('http://127.0.0.1:{SPACE_PORT}/health', timeout=4)"]
CMD ["python3", "-m", "integrity_gym.server", "--host", "0.0.0.0", "--port", "{SPACE_PORT}"]
"""


# Links that leave the environment's folder in the repository lead nowhere in a Space.
_OUTSIDE_LINK = re.compile(r"\[([^\]]+)\]\((?:\.\./)+[^)]*\)")


def _readme(f: _Facts) -> str:
    first = f.tasks[0].id
    rows = "\n".join(
        f"| `{t.id}` | {t.tier} | {t.success_threshold:g} | {t.budget_text} | {t.description} |" for t in f.tasks
    )
    if f.offline:
        wheels = "`wheels/` holds integrity-gym's wheel and every dependency's: the image builds offline."
    else:
        wheels = (
            "`wheels/` holds integrity-gym's wheel (it is on no package index); the image takes its "
            "dependencies from PyPI when it is built."
        )
    own = _OUTSIDE_LINK.sub(r"\1", f.readme).strip()
    return f"""---
title: "integrity-gym: {f.env}"
emoji: 🛡️
colorFrom: blue
colorTo: green
sdk: docker
app_port: {SPACE_PORT}
base_path: /web
pinned: false
tags:
  - openenv
  - integrity-gym
  - {f.env}
---

# integrity-gym: {f.env}, as an OpenEnv Space

{f.description}

This Space runs integrity-gym {f.version}'s server with one environment, `{f.env}`, at its root
(written by `igym space {f.env}`; write it again rather than edit it).

| what | where |
|---|---|
| OpenEnv's WebSocket protocol (`reset`, `step`, `state`, `close`) | `/ws` |
| stateful HTTP (`POST /reset` opens a session) | `/reset`, `/step`, `/state/{{id}}`, `/session/{{id}}`, `/tasks` |
| what `openenv validate --url` checks | `/health`, `/metadata`, `/schema`, `POST /mcp`, `/openapi.json` |
| API documentation, playground | `/docs`, `/web/` |

| task | tier | success at | budget | what it asks |
|---|---|---|---|---|
{rows}

The step that ends an episode carries the episode's grade (score, success, threshold,
breakdown) in its `metadata` as `grade` (`info.grade` over HTTP). Observations never carry ground
truth; the full state needs the server's admin token (`IGYM_ADMIN_TOKEN`, a Space secret).

## Connect

With nothing but `openenv` installed (`pip install openenv`), actions and observations are dicts:

```python
from openenv.core import GenericEnvClient

with GenericEnvClient(base_url="https://USER-NAME.hf.space").sync() as env:
    result = env.reset(seed=0, task="{first}")
    while not result.done:
        result = env.step(choose(result.observation))  # your agent: a dict in the action schema (/schema)
    print(result.metadata["grade"])
```

The typed client (`client.py`) parses observations into the environment's own models
(`models.py`, re-exported from integrity-gym). From a copy of this folder,
`pip install --find-links wheels .` installs it with integrity-gym {f.version}, then:

```python
from {f.env} import {f.client}, {f.action}, final_grade

with {f.client}(base_url="https://USER-NAME.hf.space").sync() as env:
    result = env.reset(seed=0, task="{first}")
    ...  # env.step({f.action}(...)) or env.step({{...}})
    print(final_grade(result))  # on the last step
```

## Build and check it yourself

{wheels}

```bash
docker build -t igym-{f.env} .                                       # with Docker Hub
docker build --build-arg BASE=igym-base:bookworm -t igym-{f.env} .   # without: integrity-gym's `make image` base
docker run -p {SPACE_PORT}:{SPACE_PORT} igym-{f.env}
openenv validate --url http://127.0.0.1:{SPACE_PORT}                  # the running image
openenv validate . --level static --skip-build                       # this folder's manifest
openenv push . --repo-id USER/NAME                                   # upload as a Space
```

Server settings are integrity-gym's `IGYM_*` variables, set as Space variables. Behind the Space's
proxy every client arrives from the proxy's address, so the per-client session quota counts all of
them as one client unless the server trusts the proxy's `X-Forwarded-For` (`FORWARDED_ALLOW_IPS`)
or users send client tokens (`IGYM_CLIENT_TOKENS`); see integrity-gym's docs/server.md.

---

{own}
"""


def _pyproject(f: _Facts) -> str:
    return f"""# The typed client of this Space: `pip install --find-links wheels .` from this folder (integrity-gym
# is on no package index, so its wheel comes from wheels/). The image does not install this package.
# Named openenv-<environment> with the package <environment>, as OpenEnv's AutoEnv looks for them.
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "openenv-{f.env}"
version = "{f.version}"
description = "OpenEnv client of integrity-gym's {f.env} environment"
requires-python = ">=3.11"
dependencies = ["integrity-gym=={f.version}", "openenv>=0.10"]

[tool.setuptools]
packages = ["{f.env}"]
package-dir = {{ "{f.env}" = "." }}
package-data = {{ "{f.env}" = ["openenv.yaml", "README.md"] }}
"""


def _all(names: list[str]) -> str:
    """An ``__all__`` sorted as ruff sorts one (constants, classes, the rest), one name per line."""
    order = sorted(names, key=lambda n: (0 if n.isupper() else 1 if n[0].isupper() else 2, n))
    return "__all__ = [\n" + "".join(f'    "{name}",\n' for name in order) + "]\n"


def _import(module: str, names: list[str]) -> str:
    """``from module import names`` on one line if it fits, else one name per line."""
    line = f"from {module} import {', '.join(names)}"
    if len(line) <= 100:
        return line + "\n"
    return f"from {module} import (\n" + "".join(f"    {name},\n" for name in names) + ")\n"


def _init(f: _Facts) -> str:
    models = ["Grade", *sorted([f.action, f.observation, f.state])]
    return (
        f'"""integrity-gym\'s {f.env} environment as an OpenEnv Space: its typed client and wire models."""\n\n'
        + _import(".client", ["TASKS", f.client, "final_grade"])
        + _import(".models", models)
        + "\n"
        + _all(["TASKS", f.client, "final_grade", *models])
    )


def _client(f: _Facts) -> str:
    tasks = "".join(f'\n    "{t.id}",' for t in f.tasks)
    models = _import(".models", sorted(["Grade", f.action, f.observation])).rstrip()
    return f'''"""A typed OpenEnv client of integrity-gym's {f.env} environment, for this Space.

It speaks OpenEnv's WebSocket protocol (``<base_url>/ws``) and imports no server code, only the
environment's wire models (models.py). ``openenv.core.GenericEnvClient`` works as well, with dicts
and nothing installed but ``openenv``. Written by ``igym space {f.env}`` (integrity-gym {f.version}).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server.types import State

{models}

#: The tasks this Space serves: ``reset(task=...)`` picks one (the first by default).
TASKS: tuple[str, ...] = ({tasks}
)


class {f.client}(EnvClient[{f.action} | Mapping[str, Any], {f.observation}, State]):
    """Client of the {f.env} environment served at ``base_url`` (the Space's address).

    ``reset`` takes ``seed``, ``task`` (one of ``TASKS``), ``scenario_id`` and ``options``; ``step``
    takes a ``{f.action}`` or a dict of its fields. Use ``.sync()`` for blocking calls. The step
    that ends an episode carries the episode's grade (``final_grade``).
    """

    def _step_payload(self, action: {f.action} | Mapping[str, Any]) -> dict[str, Any]:
        # A dict goes as it is: the server judges a malformed action exactly as the environment does
        # in-process (a rejected step with the reason in its metadata), not this client.
        if isinstance(action, Mapping):
            return dict(action)
        return action.model_dump(mode="json")

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[{f.observation}]:
        return StepResult(
            observation={f.observation}.model_validate(payload.get("observation", {{}})),
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
            metadata=payload.get("metadata"),
        )

    def _parse_state(self, payload: dict[str, Any]) -> State:
        # Without the server's admin token the state is ids and counters, never ground truth.
        return State.model_validate(payload)


def final_grade(result: StepResult[Any]) -> Grade | None:
    """The episode's grade, which the step that ends it carries; None on any other step (and on a sealed server)."""
    grade = (result.metadata or {{}}).get("grade") if result.done else None
    return None if grade is None else Grade.model_validate(grade)
'''


def _models(f: _Facts) -> str:
    names = sorted([f.action, f.observation, f.state])
    return (
        f'''"""The wire models of integrity-gym's {f.env} environment, re-exported from integrity-gym {f.version}.

``{f.state}`` is the full state, ground truth included: a server returns it only to its admin.
integrity-gym is on no package index; its wheel is in wheels/ (``pip install --find-links wheels .``).
"""

'''
        + _import("integrity_gym.core.types", ["Grade"])
        + _import(f.models_module, names)
        + "\n"
        + _all(["Grade", *names])
    )
