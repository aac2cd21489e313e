from __future__ import annotations

import pytest

from integrity_gym import make
from integrity_gym.agents.prompts import ActionReadError, GenericAdapter, get_adapter
from integrity_gym.core.replies import ReplyParseError, first_object, lower_keys, parse_reply


@pytest.mark.parametrize(
    ("text", "expected", "repaired"),
    [
        ('{"action_type": "FINISH"}', {"action_type": "FINISH"}, False),
        ('  {"a": 1, "b": [1, 2]}\n', {"a": 1, "b": [1, 2]}, False),
        (
            'Sure! Here it is:\n```json\n{"verdict": "REFUTED", "confidence": 0.8}\n```',
            {"verdict": "REFUTED", "confidence": 0.8},
            True,
        ),
        (
            "I think {'verdict': 'SUPPORTED', 'confidence': 0.9} is right",
            {"verdict": "SUPPORTED", "confidence": 0.9},
            True,
        ),
        ('{verdict: "ABSTAIN", confidence: null,}', {"verdict": "ABSTAIN", "confidence": None}, True),
        ('{"ok": True, "none": None}', {"ok": True, "none": None}, True),
        (
            '{"type": "decide", "decision": "flag", "reasoning": "claim_1 is fal',
            {"type": "decide", "decision": "flag", "reasoning": "claim_1 is fal"},
            True,
        ),
        ('{"text": "a } inside", "n": 2}', {"text": "a } inside", "n": 2}, False),
        ('prefix {"nested": {"x": "y"}} suffix {"second": 1}', {"nested": {"x": "y"}}, True),
    ],
)
def test_parse_reply_reads_and_repairs(text: str, expected: dict, repaired: bool) -> None:
    assert parse_reply(text) == (expected, repaired)


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2, 3]", "{{{", '"just a string"'])
def test_parse_reply_refuses_what_is_not_an_object(text: str) -> None:
    with pytest.raises(ReplyParseError, match="no JSON object"):
        parse_reply(text)


def test_first_object_respects_quotes_and_closes_cut_replies() -> None:
    assert first_object('x {"a": "}{"} y') == '{"a": "}{"}'
    assert first_object('{"a": {"b": "c') == '{"a": {"b": "c"}}'
    assert first_object("none") is None
    assert lower_keys({" Action_Type ": 1}) == {"action_type": 1}


def test_pii_adapter_turns_a_quote_into_absolute_offsets() -> None:
    env = make("pii_redaction/gdpr_contract_easy-v4")
    obs = env.reset(seed=3)
    adapter = get_adapter(env.spec)
    schema = adapter.schema(obs)
    assert schema["additionalProperties"] is False and set(schema["required"]) == set(schema["properties"])
    word = obs.visible_text.split()[4]
    action = adapter.to_action({"action_type": "redact", "text": word, "label": "name"}, obs)
    start = obs.cursor_position + obs.visible_text.index(word)
    assert action == {"action_type": "REDACT", "start": start, "end": start + len(word), "label": "NAME"}
    assert env.step(action).info["error"] is None
    # The same quote again finds no unredacted occurrence (or a later one), never the same span.
    obs = env.observation()
    try:
        again = adapter.to_action({"action_type": "REDACT", "text": word, "label": "NAME"}, obs)
        assert (again["start"], again["end"]) != (start, start + len(word))
    except ActionReadError:
        pass
    assert adapter.to_action({"action_type": "next chunk", "text": "", "label": "NAME"}, obs) == {
        "action_type": "NEXT_CHUNK"
    }
    with pytest.raises(ActionReadError, match="does not appear"):
        adapter.to_action({"action_type": "REDACT", "text": "zzz not in the text zzz", "label": "NAME"}, obs)
    with pytest.raises(ActionReadError, match="label"):
        adapter.to_action({"action_type": "REDACT", "text": word, "label": "PASSPORT"}, obs)
    with pytest.raises(ActionReadError, match="action_type"):
        adapter.to_action({"action_type": "JUMP"}, obs)


def test_integrity_adapter_maps_the_flat_reply_and_offers_only_ids_on_show() -> None:
    env = make("information_integrity/easy-v3")
    obs = env.reset(seed=1)
    adapter = get_adapter(env.spec)
    ids = adapter.schema(obs)["properties"]["target"]["enum"]
    assert ids == [c.id for c in obs.claims] + [s.id for s in obs.available_sources]
    claim, source = obs.claims[0].id, obs.available_sources[0].id
    assert adapter.to_action({"type": "verify_claim", "target": claim, "decision": "allow", "reasoning": ""}, obs) == {
        "type": "verify_claim",
        "claim_id": claim,
    }
    assert adapter.to_action({"type": "CHECK_SOURCE", "target": source}, obs) == {
        "type": "check_source",
        "source_id": source,
    }
    decided = adapter.to_action(
        {"type": "decide", "target": claim, "decision": "Remove", "reasoning": "harm is high"}, obs
    )
    assert decided == {"type": "decide", "decision": "remove", "reasoning": "harm is high"}
    assert env.step(decided).done
    with pytest.raises(ActionReadError, match="decision"):
        adapter.to_action({"type": "decide", "decision": "ban"}, obs)
    text = adapter.user(obs, "unknown claim_id 'x'")
    assert obs.content in text and "rejected: unknown claim_id" in text


def test_selective_adapter_sends_the_env_prompt_and_its_image() -> None:
    env = make("selective_verification/balanced-v3")
    obs = env.reset(seed=0)
    adapter = get_adapter(env.spec)
    assert adapter.system(env.spec, obs) == obs.system_prompt
    content = adapter.user(obs, None)
    assert isinstance(content, list) and content[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "cannot be shown" in adapter.text_only(obs)
    assert adapter.to_action({"verdict": "abstain", "confidence": 0.3}, obs) == {
        "verdict": "ABSTAIN",
        "confidence": None,
    }
    text_env = make("selective_verification/text-v3")
    text_obs = text_env.reset(seed=0)
    assert isinstance(adapter.user(text_obs, None), str) and adapter.text_only(text_obs) is None


def test_generic_adapter_closes_the_action_schema() -> None:
    env = make("pii_redaction/gdpr_contract_easy-v4")
    schema = GenericAdapter(env.spec).schema(env.reset(seed=0))
    assert schema["additionalProperties"] is False
