"""``integrity_gym.gymnasium``: every task registered with Gymnasium on import (see integrations.gymnasium)."""

from integrity_gym.integrations.gymnasium import (
    NAMESPACE,
    IntegrityGymEnv,
    encode_observation,
    register_envs,
    to_gym_id,
    to_task_id,
)

register_envs()

__all__ = ["NAMESPACE", "IntegrityGymEnv", "encode_observation", "register_envs", "to_gym_id", "to_task_id"]
