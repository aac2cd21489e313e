from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import integrity_gym
from integrity_gym.core import registry as reg
from integrity_gym.core.registry import Registry, TaskSpec


def spec(name: str = "demo", version: int = 0) -> TaskSpec:
    return TaskSpec(
        env="pii_redaction",
        name=name,
        version=version,
        description="d",
        tier="easy",
        success_threshold=0.5,
        max_steps=10,
        entry="integrity_gym.envs.pii_redaction.env:PiiRedactionEnv",
        config={"kind": "contract"},
    )


def test_ids_are_versioned_and_duplicates_raise() -> None:
    r = Registry()
    r.register(spec(version=0))
    r.register(spec(version=2))
    assert r.get("pii_redaction/demo-v0").version == 0
    assert r.get("pii_redaction/demo").version == 2  # newest without a version
    with pytest.raises(ValueError, match="already registered"):
        r.register(spec(version=2))


def test_unknown_task_suggests_close_ids() -> None:
    with pytest.raises(KeyError, match="did you mean"):
        integrity_gym.get_spec("pii_redaction/gdpr_contract_easy-v9")


@pytest.mark.parametrize("name", ["Bad-Name", "1st", "with space", ""])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match=r"must be lower-case letters, digits and underscores"):
        spec(name=name)
    with pytest.raises(ValueError, match=r"must be lower-case letters, digits and underscores"):
        TaskSpec(**{**spec().model_dump(exclude={"id", "budget_text"}), "env": name})


def test_builtins_are_registered_and_selectable() -> None:
    ids = [s.id for s in integrity_gym.list_tasks("pii_redaction/*")]
    assert ids == [
        "pii_redaction/gdpr_contract_easy-v4",
        "pii_redaction/hipaa_medical_medium-v4",
        "pii_redaction/security_logs_hard-v4",
    ]
    assert integrity_gym.list_tasks("*easy*,*hard*")


def test_make_rejects_unknown_config_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="no_such_key"):
        integrity_gym.make("pii_redaction/gdpr_contract_easy-v4", no_such_key=1)


def test_plugins_register_through_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "igym_plugin_demo.py").write_text(
        textwrap.dedent(
            """
            from integrity_gym.core.registry import TaskSpec
            TASKS = [TaskSpec(env="pii_redaction", name="plugin_demo", version=1, description="plugin",
                              tier="easy", success_threshold=0.5, max_steps=10,
                              entry="integrity_gym.envs.pii_redaction.env:PiiRedactionEnv",
                              config={"kind": "contract"})]
            """
        )
    )
    dist = tmp_path / "igym_plugin_demo-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: igym-plugin-demo\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[integrity_gym.tasks]\ndemo = igym_plugin_demo:TASKS\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = reg._load_default()
    assert loaded.get("pii_redaction/plugin_demo-v1").description == "plugin"
    sys.modules.pop("igym_plugin_demo", None)


def test_latest_task_id_names_the_newest_registered_version() -> None:
    from integrity_gym.core.registry import latest_task_id

    assert latest_task_id("information_integrity", "hard") == "information_integrity/hard-v3"
    with pytest.raises(KeyError, match="no task information_integrity/nope"):
        latest_task_id("information_integrity", "nope")
