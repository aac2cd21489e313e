"""Seeded document generator of the pii_redaction environment.

``generate_document(kind, seed, index)`` builds one document from ``(GENERATOR_VERSION, kind,
seed, index, min_chars)`` alone: any index can be produced directly, in any order, in any process,
with byte-identical results. Values come from a private ``random.Random`` (see
``integrity_gym.core.seeding``) and a per-thread Faker (``en_US``, version pinned in
pyproject) re-seeded for each document, so concurrent sessions never share random state. Dates
come from fixed ranges (births 1940-2006, other events 2019-2025), never from today's date.

Templates live in ``templates/``: agreements (easy), clinical notes, discharge summaries and
referral letters (medium), support chats interleaved with service logs, with obfuscated PII
(hard). Each kind mixes in non-PII look-alikes (company and product names, reference codes,
IP and MAC addresses, versions, non-birth dates, amounts, diagnosis codes, dosages; in the
medium and hard tiers also organisations' phone numbers and shared mailboxes, eponyms that
equal a patient's surname, birth-date cues before other dates, and ids in the shape of phone
numbers or SSNs) that are not entities. A document whose id falls in the eval partition takes
the eval set of every line template that holds personal data (``templates/common.Frames``: the
sentence frames, section phrasings, speaker tags and log layouts around the values, written apart
from the training set), and may also use the held-out value renderings of
``templates/heldout.py``; training documents never use either, so a system tuned on training
documents meets them first at evaluation. Since version 4 an eval document also composes each of
those lines anew from shared pools (``templates/common.vary``), names its own made-up records
system beside the values, and draws its people's names from made-up syllables instead of Faker's
lists (``fictional_first``, ``fictional_surname``): values and frames rarely recur from one eval
document to the next, so an agent cannot learn the eval set from the eval set either.

Gold offsets are recorded while the text is assembled, and the ``Document`` model re-checks
every entity against the text.
"""

from __future__ import annotations

from collections.abc import Callable
from random import Random
from typing import Any, get_args

from faker import Faker

from integrity_gym.core.seeding import derive_seed, make_rng, partition_of
from integrity_gym.envs.pii_redaction.models import Document, Entity, Kind
from integrity_gym.envs.pii_redaction.templates import clinical, contract, security
from integrity_gym.envs.pii_redaction.templates.common import faker_for

#: Bump whenever a change alters any generated document (and bump the task versions too).
GENERATOR_VERSION: int = 4

#: Default minimum lengths per kind (characters).
DEFAULT_MIN_CHARS: dict[str, int] = {"contract": 1000, "clinical": 3000, "security": 6000}

#: Largest ``min_chars`` accepted (keeps a single request from building a huge document).
MAX_MIN_CHARS = 200_000

KINDS: tuple[str, ...] = get_args(Kind)

_BUILDERS: dict[str, Callable[[Random, Faker, int, bool], tuple[str, tuple[Entity, ...]]]] = {
    "contract": contract.build,
    "clinical": clinical.build,
    "security": security.build,
}


def document_id(kind: Kind, seed: int, index: int) -> str:
    """The id of generated document ``index`` of ``kind`` at ``seed``."""
    return f"{kind}-g{GENERATOR_VERSION}-s{seed}-i{index}"


def generate_document(kind: Kind, seed: int, index: int, *, min_chars: int | None = None) -> Document:
    """Build document ``index`` of ``kind`` for ``seed`` (at least ``min_chars`` characters long)."""
    if kind not in _BUILDERS:
        raise ValueError(f"unknown document kind {kind!r}; choose one of {', '.join(KINDS)}")
    if isinstance(seed, bool) or not isinstance(seed, int) or isinstance(index, bool) or not isinstance(index, int):
        raise ValueError(f"seed and index must be integers, got {seed!r} and {index!r}")
    if index < 0:
        raise ValueError(f"index must be >= 0, got {index}")
    length = DEFAULT_MIN_CHARS[kind] if min_chars is None else min_chars
    if isinstance(length, bool) or not isinstance(length, int) or not 1 <= length <= MAX_MIN_CHARS:
        raise ValueError(f"min_chars must be an integer from 1 to {MAX_MIN_CHARS}, got {min_chars!r}")
    parts = ("pii_redaction", GENERATOR_VERSION, kind, seed, index, length)
    rng = make_rng(*parts)
    fake = faker_for(derive_seed("faker", *parts))
    doc_id = document_id(kind, seed, index)
    # Eval documents take the eval line templates and may use the held-out renderings; training ones never do.
    text, entities = _BUILDERS[kind](rng, fake, length, partition_of(doc_id) == "eval")
    return Document(id=doc_id, kind=kind, text=text, entities=entities)


def golden_samples() -> list[dict[str, Any]]:
    """The first two documents of each kind at seed 0, as JSON-ready dicts (committed as goldens)."""
    return [generate_document(kind, 0, i).model_dump(mode="json") for kind in KINDS for i in range(2)]  # type: ignore[arg-type]
