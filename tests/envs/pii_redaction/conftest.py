from __future__ import annotations

import random

import pytest

import integrity_gym
from integrity_gym.envs.pii_redaction.env import PiiRedactionEnv
from integrity_gym.envs.pii_redaction.models import LABELS, Document, Entity

WORDS = ["the", "client", "agrees", "to", "pay", "within", "thirty", "days", "of", "invoice", "under", "clause"]


def synthetic_document(seed: int, n_entities: int = 12, length: int = 1500) -> Document:
    """A document of filler words with ``n_entities`` labelled tokens at random places."""
    rng = random.Random(seed)
    parts: list[str] = []
    entities: list[Entity] = []
    pos = 0
    slots = sorted(rng.sample(range(length // 20), n_entities))
    for slot in range(length // 20):
        if slot in slots:
            text = f"PII{slot}-" + "x" * rng.randint(3, 20)
            entities.append(Entity(start=pos, end=pos + len(text), label=rng.choice(LABELS), text=text))
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(3))
        parts.append(text + " ")
        pos += len(text) + 1
    return Document(id=f"synthetic-{seed}", kind="contract", text="".join(parts), entities=tuple(entities))


@pytest.fixture
def env() -> PiiRedactionEnv:
    made = integrity_gym.make("pii_redaction/gdpr_contract_easy-v4", window_size=500)
    assert isinstance(made, PiiRedactionEnv)
    return made
