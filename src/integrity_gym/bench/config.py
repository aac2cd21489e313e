"""What a run plays: ``BenchConfig``, saved in ``config.json`` and replayable."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from integrity_gym.core.env import validate_config
from integrity_gym.core.seeding import PartitionChoice


class BenchConfig(BaseModel):
    """Everything that decides what a run plays; saved as ``config.json`` and replayable."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    tasks: str = Field("*", description="Glob (or comma-separated globs) over task ids.")
    agent: str = Field("heuristic", description="Agent name (heuristic, random, oracle, noop, llm, presidio, ...).")
    episodes: int = Field(5, ge=1, le=100_000, description="Episodes per task.")
    epochs: int = Field(1, ge=1, le=1000, description="Times each seed is played (pass@k, per-item variance).")
    max_failures: int = Field(0, ge=0, description="Failed episodes allowed before the run counts as failed.")
    seed: int = Field(0, ge=0, description="Seed of the first episode; episode i uses seed + i.")
    seeds: tuple[int, ...] | None = Field(None, description="Explicit episode seeds (overrides seed/episodes).")
    partition: PartitionChoice | None = Field("eval", description="Partition of generated items (None: env default).")
    max_steps: int | None = Field(None, ge=1, description="Step cap per episode on top of the task's own.")
    server: str | None = Field(None, description="URL of an `igym serve` to play against (None: in-process).")
    sealed: bool = Field(
        False, description="Play a sealed evaluation of the server: it draws the items, grades at the end."
    )
    concurrency: int = Field(1, ge=1, le=512, description="Episodes played at once.")
    env_config: dict[str, Any] = Field(default_factory=dict, description="Config overrides for every env.")
    keep_observations: bool = Field(True, description="Store every observation in episodes.jsonl.")
    llm: dict[str, Any] | None = Field(None, description="Resolved llm agent settings (key excluded).")
    local_llm: bool = Field(False, description="The llm agent played the bundled tiny model (--local-llm).")

    @field_validator("seeds")
    @classmethod
    def _check_seeds(cls, value: tuple[int, ...] | None) -> tuple[int, ...] | None:
        if value is not None and (not value or min(value) < 0 or len(set(value)) != len(value)):
            raise ValueError("seeds must be distinct non-negative integers, at least one")
        return value

    @model_validator(mode="after")
    def _check_sealed(self) -> BenchConfig:
        if self.sealed:
            if not self.server:
                raise ValueError("sealed: a sealed evaluation is played against a server; pass --server URL")
            if self.epochs > 1 or self.seeds is not None:
                raise ValueError("sealed: the server chooses the items and hands each out once: no --epochs or --seeds")
        return self

    def seed_list(self) -> list[int]:
        """The seed of every episode index."""
        return list(self.seeds) if self.seeds is not None else [self.seed + i for i in range(self.episodes)]

    @property
    def model_name(self) -> str | None:
        """The model the llm agent played, if any."""
        name = (self.llm or {}).get("model_name")
        return None if name is None else str(name)

    @property
    def model_label(self) -> str:
        """What the log, the summary and the database call the player: the model, else the agent."""
        return self.model_name or self.agent

    def step_cap(self) -> int:
        """Steps an episode may take: the tighter of ``max_steps`` and the llm agent's own cap."""
        caps = [c for c in (self.max_steps, (self.llm or {}).get("max_steps")) if c is not None]
        return min(int(c) for c in caps) if caps else 10**9

    @classmethod
    def build(cls, **values: Any) -> BenchConfig:
        """Validate: a ``ValueError`` naming the offending option (``core.env.validate_config``)."""
        config: BenchConfig = validate_config(cls, values)
        return config


__all__ = ["BenchConfig"]
