"""``pii-redaction-v1``: multi-turn redaction of personal data, graded by the environment (docs/verifiers.md)."""

from integrity_gym.integrations.verifiers.multiturn import PiiRedactionEnv, PiiRedactionTaskset

__all__ = ["PiiRedactionEnv", "PiiRedactionTaskset"]
