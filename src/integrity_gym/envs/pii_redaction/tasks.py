"""The pii_redaction tasks."""

from integrity_gym.core.registry import TaskSpec, threshold_between

#: Every tier's trivial floor (doing nothing keeps the document's utility: 0.25) and ceiling (the
#: oracle: 1.0), measured by ``agents.redteam.bounds`` over eval seeds 0-99; the threshold follows by
#: the published rule (0.75). Tiers differ in what the documents hide, not in the bar.
_FLOOR, _CEILING = 0.25, 1.0

_ENTRY = "integrity_gym.envs.pii_redaction.env:PiiRedactionEnv"

#: What a task's max_steps counts: the moves across the document come on top (README, *Step budget*).
_BUDGET = "decisions (redactions, FINISH) + the NEXT_CHUNK moves across the document"


TASKS: tuple[TaskSpec, ...] = (
    TaskSpec(
        env="pii_redaction",
        name="gdpr_contract_easy",
        version=4,
        tier="easy",
        description="Business contracts with plainly written emails, phones, addresses, names and SSNs.",
        success_threshold=threshold_between(_FLOOR, _CEILING),
        floor=_FLOOR,
        ceiling=_CEILING,
        max_steps=40,
        budget=_BUDGET,
        entry=_ENTRY,
        config={"kind": "contract"},
    ),
    TaskSpec(
        env="pii_redaction",
        name="hipaa_medical_medium",
        version=4,
        tier="medium",
        description="Clinical notes: names, dates of birth, phones and addresses that need sentence context.",
        success_threshold=threshold_between(_FLOOR, _CEILING),
        floor=_FLOOR,
        ceiling=_CEILING,
        max_steps=60,
        budget=_BUDGET,
        entry=_ENTRY,
        config={"kind": "clinical"},
    ),
    TaskSpec(
        env="pii_redaction",
        name="security_logs_hard",
        version=4,
        tier="hard",
        description="Support transcripts and security logs with obfuscated PII and many look-alike distractors.",
        success_threshold=threshold_between(_FLOOR, _CEILING),
        floor=_FLOOR,
        ceiling=_CEILING,
        max_steps=80,
        budget=_BUDGET,
        entry=_ENTRY,
        config={"kind": "security"},
    ),
)
