"""``information-integrity-v1``: multi-turn moderation of a post, graded by the environment (docs/verifiers.md)."""

from integrity_gym.integrations.verifiers.multiturn import InformationIntegrityEnv, InformationIntegrityTaskset

__all__ = ["InformationIntegrityEnv", "InformationIntegrityTaskset"]
