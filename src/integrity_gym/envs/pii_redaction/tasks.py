"""The pii_redaction tasks."""

from integrity_gym.core.registry import TaskSpec

_ENTRY = "integrity_gym.envs.pii_redaction.env:PiiRedactionEnv"

TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        env="pii_redaction",
        name="gdpr_contract_easy",
        version=2,
        tier="easy",
        description="Business contracts with plainly written emails, phones, addresses, names and SSNs.",
        success_threshold=0.90,
        max_steps=40,
        entry=_ENTRY,
        config={"kind": "contract"},
    ),
    TaskSpec(
        env="pii_redaction",
        name="hipaa_medical_medium",
        version=2,
        tier="medium",
        description="Clinical notes: names, dates of birth, phones and addresses that need sentence context.",
        success_threshold=0.85,
        max_steps=60,
        entry=_ENTRY,
        config={"kind": "clinical"},
    ),
    TaskSpec(
        env="pii_redaction",
        name="security_logs_hard",
        version=2,
        tier="hard",
        description="Support transcripts and security logs with obfuscated PII and many look-alike distractors.",
        success_threshold=0.75,
        max_steps=80,
        entry=_ENTRY,
        config={"kind": "security"},
    ),
)
