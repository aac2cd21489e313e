"""Learned attacks on pii_redaction: models fitted on the public train partition, and a memory attack.

Each attack reads the whole document window by window first (it only keeps what the windows
showed), then plans its redactions over the full text and walks back, redacting every planned
span in the first window that holds it; when the step budget cannot pay for every planned span,
the best-scored ones go first. What differs is the plan:

- ``line_templates`` memorises the *masked line templates* of the train documents (each line
  with its PII values replaced by their labels, runs of letters and digits that hold a digit
  generalised), keeps those seen in at least two train documents that were right at least half
  the time they matched a train line, and on eval redacts the slots of every line that one of
  them matches whole. It finds PII by position, without reading it.
- ``slot_contexts`` memorises the literal text right around each slot (up to ten characters
  either side, within the line) instead of whole lines: the stronger, partial form of the same
  memorisation.
- ``memory`` plays the eval documents in order and remembers every earlier episode. Its own
  policy reads nothing: it redacts seeded random spans of one to four whole tokens under random
  labels. Before exploring it reuses what earlier episodes' rewards (a ``tp_bonus`` in the step's
  reward breakdown) showed to be PII: the same strings anywhere in the text, spans framed by the
  same ten characters either side, spans after the same ten characters, and spans at the same line
  and columns, each with the label that paid. Its control is the same agent with its memory
  emptied at every episode's start (``memory_build(wiped=True)``), which plays exactly the
  explorer's spans; the difference between the two on the same seeds is what memory buys.

A reader fitted on train tokens (a logistic regression on character n-grams, shapes and
neighbouring words, once ``token_model`` here) is not among these attacks: it reads PII, which is
doing the task (it scored 0.846 / 0.716 / 0.408 on generator v3, below the heuristic; the
environment's README keeps the numbers).

The helpers :func:`masked_lines`, :func:`masked_template` and :func:`template_overlap` measure
how many eval lines holding PII have a masked template that the train partition also shows
(``tests/redteam/test_learned_pii_redaction.py`` and the environment's README);
:func:`surface_overlap` reports the same rows to ``igym redteam --learned``. :func:`eval_recurrence`
measures what the memory attack could reuse: how many eval values, frames and positions an
earlier eval document already showed.

Modules: ``lines`` (documents as masked lines, renderings, slot contexts), ``planner`` (the
player every attack shares), ``fitted`` (``line_templates`` and ``slot_contexts``), ``memory``
(the memory attack) and ``measures`` (the overlap and recurrence measures).
"""

from __future__ import annotations

from integrity_gym.agents.redteam.learned import Learned
from integrity_gym.agents.redteam.learned.pii_redaction.fitted import MAX_FIT_DOCUMENTS as MAX_FIT_DOCUMENTS
from integrity_gym.agents.redteam.learned.pii_redaction.fitted import LineTemplates as LineTemplates
from integrity_gym.agents.redteam.learned.pii_redaction.fitted import SlotContexts as SlotContexts
from integrity_gym.agents.redteam.learned.pii_redaction.fitted import _fit_line_templates, _fit_slot_contexts
from integrity_gym.agents.redteam.learned.pii_redaction.lines import ContextKey as ContextKey
from integrity_gym.agents.redteam.learned.pii_redaction.lines import MaskedLine as MaskedLine
from integrity_gym.agents.redteam.learned.pii_redaction.lines import documents, masked_lines, masked_template
from integrity_gym.agents.redteam.learned.pii_redaction.lines import rendering as rendering
from integrity_gym.agents.redteam.learned.pii_redaction.measures import FORMS as FORMS
from integrity_gym.agents.redteam.learned.pii_redaction.measures import RECURRENCE_FORMS as RECURRENCE_FORMS
from integrity_gym.agents.redteam.learned.pii_redaction.measures import (
    eval_recurrence,
    overlap,
    surface_overlap,
    template_overlap,
)
from integrity_gym.agents.redteam.learned.pii_redaction.memory import LeftKey as LeftKey
from integrity_gym.agents.redteam.learned.pii_redaction.memory import (
    MemoryAgent,
    MemoryBank,
    _fit_memory,
    explore,
    memory_build,
)
from integrity_gym.agents.redteam.learned.pii_redaction.memory import PositionKey as PositionKey
from integrity_gym.agents.redteam.learned.pii_redaction.memory import Source as Source
from integrity_gym.agents.redteam.learned.pii_redaction.memory import _Record as _Record
from integrity_gym.agents.redteam.learned.pii_redaction.planner import Scored as Scored
from integrity_gym.agents.redteam.learned.pii_redaction.planner import Span as Span

__all__ = [
    "LEARNED",
    "MemoryAgent",
    "MemoryBank",
    "documents",
    "eval_recurrence",
    "explore",
    "masked_lines",
    "masked_template",
    "memory_build",
    "overlap",
    "surface_overlap",
    "template_overlap",
]

#: The learned attacks on pii_redaction.
LEARNED: tuple[Learned, ...] = (
    Learned(
        "line_templates",
        "Masked line templates of the train documents (PII replaced by its label, digit-bearing tokens "
        "generalised); on eval the slots of every line a memorised template matches whole.",
        _fit_line_templates,
    ),
    Learned(
        "slot_contexts",
        "The literal text within ten characters either side of each PII value in train; on eval every span "
        "those contexts frame.",
        _fit_slot_contexts,
    ),
    Learned(
        "memory",
        "Eval documents in order: a blind explorer (seeded random token spans, random labels) that first "
        "reuses what earned a tp bonus in earlier episodes: the same strings, spans in the same ten-character "
        "context, after the same text, or at the same line and columns.",
        _fit_memory,
        memory=True,
    ),
)
