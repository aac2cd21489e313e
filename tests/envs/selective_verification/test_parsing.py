import pytest

from integrity_gym.envs.selective_verification.parsing import AnswerParseError, parse_answer


@pytest.mark.parametrize(
    ("text", "verdict", "confidence", "repaired"),
    [
        ('{"verdict": "SUPPORTED", "confidence": 0.9}', "SUPPORTED", 0.9, False),
        ('{"verdict": "ABSTAIN"}', "ABSTAIN", None, False),
        ('{"verdict": "ABSTAIN", "confidence": 0.2}', "ABSTAIN", None, False),
        ('```json\n{"verdict": "refuted", "confidence": "80%"}\n```', "REFUTED", 0.8, True),
        ("Sure! {'verdict': 'SUPPORTED', 'confidence': 0.7}", "SUPPORTED", 0.7, True),
        ('{verdict: "REFUTED", confidence: 0.65,}', "REFUTED", 0.65, True),
        ('{"Verdict": "SUPPORTS", "Confidence": 85}', "SUPPORTED", 0.85, True),
        ('{"verdict": "SUPPORTED", "confidence": 0.6, "reasoning": "a cat"}', "SUPPORTED", 0.6, True),
        ("verdict: refuted, confidence 0.55", "REFUTED", 0.55, True),
    ],
)
def test_answers_are_read_and_repairs_flagged(
    text: str, verdict: str, confidence: float | None, repaired: bool
) -> None:
    parsed = parse_answer(text)
    assert (parsed.verdict, parsed.confidence, parsed.needed_repair) == (verdict, confidence, repaired)


@pytest.mark.parametrize(
    "text",
    [
        "I think it is there",
        '{"verdict": "SUPPORTED"}',
        '{"verdict": "MAYBE", "confidence": 0.5}',
        '{"verdict": "SUPPORTED", "confidence": 1.5}',
        '{"verdict": "SUPPORTED", "confidence": -0.1}',
        '{"verdict": "SUPPORTED", "confidence": "high"}',
        "[1, 2]",
        "",
    ],
)
def test_unreadable_answers_raise_with_a_reason(text: str) -> None:
    with pytest.raises(AnswerParseError):
        parse_answer(text)
