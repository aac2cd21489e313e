"""Fixtures of the integration tests: the tiny LLM of tests/bench, shared by the verifiers tests."""

from tests.bench.conftest import tiny_llm_url

__all__ = ["tiny_llm_url"]
