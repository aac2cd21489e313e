"""The generator's faster Faker draws give exactly what Faker itself gives, seed for seed."""

from __future__ import annotations

from collections import OrderedDict
from random import Random

import pytest
from faker import Faker

from integrity_gym.envs.pii_redaction import generator
from integrity_gym.envs.pii_redaction.generator import generate_document
from integrity_gym.envs.pii_redaction.templates import common


def _draws(fake: Faker) -> list[object]:
    return [
        fake.first_name_male(),
        fake.first_name_female(),
        fake.last_name(),
        fake.city(),
        fake.state_abbr(include_territories=False, include_freely_associated_states=False),
        fake.zipcode(),
        fake.company(),
        fake.name(),
        fake.random.random(),  # the random state after the draws is the same too
    ]


def test_weighted_draws_equal_fakers_own() -> None:
    plain = Faker("en_US")
    for seed in range(300):
        plain.seed_instance(seed)
        expected = _draws(plain)
        assert _draws(common.faker_for(seed)) == expected, seed


def test_a_weighted_table_is_drawn_by_its_weights() -> None:
    fake = common.faker_for(0)
    table = OrderedDict([("rare", 0.01), ("common", 0.99)])
    drawn = [fake.random_element(table) for _ in range(2000)]
    assert 1900 < drawn.count("common") < 2000


@pytest.mark.parametrize("kind", ["contract", "clinical", "security"])
def test_documents_equal_those_built_with_a_plain_faker(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = [generate_document(kind, seed, i) for seed in range(25) for i in range(2)]  # type: ignore[arg-type]
    plain_faker = Faker("en_US")  # the proxy, with Faker's own weighted draws

    def seeded(seed: int) -> Faker:
        plain_faker.seed_instance(seed)
        return plain_faker

    monkeypatch.setattr(generator, "faker_for", seeded)
    plain = [generate_document(kind, seed, i) for seed in range(25) for i in range(2)]  # type: ignore[arg-type]
    assert fast == plain


def test_pick_draws_as_randrange_does() -> None:
    items = tuple(range(37))
    a, b = Random(7), Random(7)
    assert [common.pick(a, items) for _ in range(500)] == [items[b.randrange(len(items))] for _ in range(500)]
