"""integrity-gym: environments for training and evaluating LLM agents on information integrity."""

from integrity_gym.core import (
    Env,
    EnvCheckError,
    EpisodeFinishedError,
    Grade,
    InvalidActionError,
    StepResult,
    TaskSpec,
    check_env,
    get_spec,
    list_tasks,
    make,
)

__version__ = "0.1.0"

__all__ = [
    "Env",
    "EnvCheckError",
    "EpisodeFinishedError",
    "Grade",
    "InvalidActionError",
    "StepResult",
    "TaskSpec",
    "__version__",
    "check_env",
    "get_spec",
    "list_tasks",
    "make",
]
