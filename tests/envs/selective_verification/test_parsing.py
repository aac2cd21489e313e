import pytest

import integrity_gym
from integrity_gym.envs.selective_verification.parsing import AnswerParseError, parse_answer
from integrity_gym.envs.selective_verification.prompts import ANSWER_FORMAT


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
    ("text", "message"),
    [
        ("I think it is there", "not a JSON object"),
        ('{"verdict": "SUPPORTED"}', "a SUPPORTED verdict needs a confidence"),
        ('{"verdict": "MAYBE", "confidence": 0.5}', "verdict 'MAYBE' is not one of"),
        ('{"verdict": "SUPPORTED", "confidence": 1.5}', r"confidence 1.5 is outside \[0, 1\]"),
        ('{"verdict": "SUPPORTED", "confidence": -0.1}', r"confidence -0.1 is outside \[0, 1\]"),
        ('{"verdict": "SUPPORTED", "confidence": "high"}', "confidence 'high' is not a number"),
        ("[1, 2]", "not a JSON object"),
        ("", "not a JSON object"),
    ],
)
def test_unreadable_answers_raise_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(AnswerParseError, match=message):
        parse_answer(text)


@pytest.mark.parametrize(
    "text",
    [
        '{"verdict": "SUPPORTED", "confidence": 1.0} {"verdict": "REFUTED", "confidence": 1.0}',
        '{"verdict": "SUPPORTED", "verdict": "REFUTED", "confidence": 1.0}',
        '[{"verdict": "REFUTED", "confidence": 0.9}, {"verdict": "SUPPORTED", "confidence": 0.9}]',
        '{"verdict": "SUPPORTED", "confidence": 1, "else": {"verdict": "REFUTED", "confidence": 1}}',
        "verdict: SUPPORTED, confidence 1.0 -- or verdict: REFUTED, confidence 1.0",
        '```json\n{"verdict": "ABSTAIN"}\n``` ```json\n{"verdict": "ABSTAIN"}\n```',
        '{"verdict": "SUPPORTED", "confidence": 0.9} or REFUTED',
        'REFUTED. {"verdict": "REFUTED", "confidence": 0.9}',
    ],
)
def test_a_reply_with_several_verdicts_is_unreadable(text: str) -> None:
    # Stuffing every verdict into one reply must not let the reader pick the right one.
    with pytest.raises(AnswerParseError, match=r"states 2 verdicts .*give exactly one"):
        parse_answer(text)


def test_prose_that_mentions_a_verdict_word_is_not_a_second_verdict() -> None:
    text = '{"verdict": "REFUTED", "confidence": 0.9, "reasoning": "the claim is not supported"}'
    assert parse_answer(text).verdict == "REFUTED"


@pytest.mark.parametrize("confidence", ["<number in [0, 1]>", "0.5", "1"])
def test_an_echo_of_the_answer_format_is_not_an_answer(confidence: str) -> None:
    """A model that repeats the prompt's format line has not chosen anything (it once read as SUPPORTED)."""
    echo = ANSWER_FORMAT.replace("<number in [0, 1]>", confidence)
    with pytest.raises(AnswerParseError, match=r"states 3 verdicts \(SUPPORTED, REFUTED, ABSTAIN\)"):
        parse_answer(echo)
    env = integrity_gym.make("selective_verification/text-v3")
    env.reset(seed=0)
    result = env.step(echo)
    assert result.reward == 0.0 and result.info["reward_breakdown"] == {"malformed": 0.0}
