"""The core every environment is built on: the Env base class, wire types, registry, seeding."""

from integrity_gym.core.checker import EnvCheckError, check_env
from integrity_gym.core.env import Env, EpisodeFinishedError, InvalidActionError, NotResetError
from integrity_gym.core.registry import TaskSpec, get_spec, list_tasks, make
from integrity_gym.core.types import Action, Grade, Observation, State, StepResult

__all__ = [
    "Action",
    "Env",
    "EnvCheckError",
    "EpisodeFinishedError",
    "Grade",
    "InvalidActionError",
    "NotResetError",
    "Observation",
    "State",
    "StepResult",
    "TaskSpec",
    "check_env",
    "get_spec",
    "list_tasks",
    "make",
]
