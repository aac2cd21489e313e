"""``selective-verification-v1``: calibrated verdicts on claims, scored by a proper rule (docs/verifiers.md)."""

from integrity_gym.integrations.verifiers.selective_verification import SelectiveVerificationTaskset

__all__ = ["SelectiveVerificationTaskset"]
