"""What eval PII the train partition, or an earlier eval document, already shows (pii_redaction).

:func:`template_overlap` and :func:`overlap` measure how much of the eval partition's PII lines
and values have a form the train partition also shows (:data:`FORMS`); :func:`surface_overlap`
reports the same rows to ``igym redteam --learned``. :func:`eval_recurrence` measures what the
memory attack could reuse: how many eval values, frames and positions an earlier eval document
already showed (:data:`RECURRENCE_FORMS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from integrity_gym.agents.redteam.learned import Overlap
from integrity_gym.agents.redteam.learned.pii_redaction.lines import (
    _generalise,
    _generalised_key,
    _line_contexts,
    _slot_context,
    _tokens_in,
    documents,
    masked_lines,
    masked_template,
    rendering,
)
from integrity_gym.core.registry import TaskSpec
from integrity_gym.envs.pii_redaction.models import Document


def template_overlap(spec: TaskSpec, train_seeds: Iterable[int], eval_seeds: Iterable[int]) -> dict[str, float]:
    """How much of the eval partition's PII lines the train partition already shows.

    ``exact``: share of eval lines holding PII whose masked template (values replaced by labels)
    some train line also has; ``digits``: the same with every digit run read as ``0`` (timestamps,
    counts and ids then agree); ``context``: share of eval PII values whose ten characters of
    literal text either side (within the line, digit-bearing tokens generalised) occur around a
    value of the same label in train; ``renderings``: share of eval PII values whose written form
    (:func:`rendering`, with the label) some train value shares; ``values``: share of eval PII
    values (label and text) that also occur in train.
    """
    return overlap(documents(spec, train_seeds, "train"), documents(spec, eval_seeds, "eval"))


#: The forms :func:`overlap` compares, and what each is (``igym redteam --learned`` prints them).
FORMS = {
    "exact": "masked line template (each PII value replaced by its label), per eval line holding PII",
    "digits": "masked line template with every digit run read as 0, per eval line holding PII",
    "context": "literal text within ten characters either side of a PII value (digit-bearing tokens "
    "generalised), per eval value",
    "renderings": "how a PII value is written (digit runs 0, words by case unless telling), per eval value",
    "values": "PII value (label and exact text), per eval value",
}


def _forms(docs: Sequence[Document]) -> dict[str, list[object]]:
    """Every occurrence of every compared form in ``docs``."""
    lines = [ln for d in docs for ln in masked_lines(d) if ln.slots]
    ents = [(e.label, e.text) for d in docs for e in d.entities]
    return {
        "exact": [masked_template(ln) for ln in lines],
        "digits": [masked_template(ln, digits=True) for ln in lines],
        "context": [_generalised_key(k) for ln in lines for k in _line_contexts(ln)],
        "renderings": [(label, rendering(text)) for label, text in ents],
        "values": list(ents),
    }


def _compare(train: Sequence[Document], evals: Sequence[Document]) -> dict[str, tuple[int, int, float]]:
    seen, found = _forms(train), _forms(evals)
    out = {}
    for name, occurrences in found.items():
        known = set(seen[name])
        share = sum(f in known for f in occurrences) / max(1, len(occurrences))
        out[name] = (len(known), len(set(occurrences)), share)
    return out


def overlap(train: Sequence[Document], evals: Sequence[Document]) -> dict[str, float]:
    """:func:`template_overlap` of documents ``evals`` against documents ``train``."""
    shares = {name: share for name, (_, _, share) in _compare(train, evals).items()}
    return {"lines": float(sum(1 for d in evals for ln in masked_lines(d) if ln.slots)), **shares}


def surface_overlap(
    spec: TaskSpec, train_seeds: Iterable[int] = range(300), eval_seeds: Iterable[int] = range(100)
) -> list[Overlap]:
    """The environment's hook for ``igym redteam --learned``: each form's train/eval overlap on ``spec``'s task."""
    rows = _compare(documents(spec, train_seeds, "train"), documents(spec, eval_seeds, "eval"))
    return [Overlap(spec.id, FORMS[name], train, evals, share) for name, (train, evals, share) in rows.items()]


#: What :func:`eval_recurrence` compares, and what each is.
RECURRENCE_FORMS = {
    "values": "PII value (label and exact text)",
    "contexts": "ten characters either side of the value within its line, digit-bearing tokens generalised",
    "lefts": "ten characters before the value with its length in tokens",
    "positions": "line number and columns",
}


def _memory_keys(doc: Document) -> dict[str, list[object]]:
    """Every PII value of ``doc`` keyed as the memory attack keys what paid (contexts not cut at other values)."""
    out: dict[str, list[object]] = {name: [] for name in RECURRENCE_FORMS}
    for ln in masked_lines(doc):
        for s, e, label in ln.slots:
            key = _slot_context(ln.text, 0, len(ln.text), s, e, 0, len(ln.text), label)
            value = ln.text[s:e]
            out["values"].append((label, value))
            out["contexts"].append(_generalised_key(key))
            if key[0].strip():  # as the memory: no key on an empty left
                out["lefts"].append((_generalise(key[0]), key[2], _tokens_in(value) or 1, label))
            out["positions"].append((doc.text.count("\n", 0, ln.start + s), s, e, label))
    return out


def eval_recurrence(docs: Sequence[Document]) -> dict[str, float]:
    """Share of the PII occurrences of ``docs`` (in order) whose form an earlier document already showed.

    Forms as in :data:`RECURRENCE_FORMS`: what a memory of earlier episodes could reuse, measured on the
    gold rather than through an agent's rewards (an upper bound on what the memory attack can learn).
    """
    seen: dict[str, set[object]] = {name: set() for name in RECURRENCE_FORMS}
    hits = dict.fromkeys(RECURRENCE_FORMS, 0)
    total = dict.fromkeys(RECURRENCE_FORMS, 0)
    for doc in docs:
        keys = _memory_keys(doc)
        for name, occurrences in keys.items():
            hits[name] += sum(k in seen[name] for k in occurrences)
            total[name] += len(occurrences)
        for name, occurrences in keys.items():
            seen[name].update(occurrences)
    return {name: hits[name] / max(1, total[name]) for name in RECURRENCE_FORMS}
