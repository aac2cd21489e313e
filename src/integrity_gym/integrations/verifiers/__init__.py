"""integrity-gym's environments as native verifiers v1 tasksets (docs/verifiers.md).

Three tasksets, each importable under its hub id (``pip install 'integrity-gym[verifiers]'``):

* ``selective-verification-v1`` (module ``selective_verification_v1``): one claim, one reply,
  rewarded by the environment's proper score;
* ``pii-redaction-v1`` and ``information-integrity-v1``: multi-turn; the environment plays the
  user, each reply is one action, and the reward is the environment's own grade.

``episodes`` holds the framework-free part (building, resetting and stepping an environment from
model replies); the taskset modules import verifiers, so importing this package does not.
"""

from __future__ import annotations

import importlib
from typing import Any


def load_verifiers() -> Any:
    """``verifiers.v1``, or an ImportError naming the extra that installs it."""
    try:
        return importlib.import_module("verifiers.v1")
    except ImportError as exc:  # pragma: no cover - depends on the optional extra
        raise ImportError(
            "the verifiers tasksets need the 'verifiers' extra: pip install 'integrity-gym[verifiers]'"
        ) from exc
