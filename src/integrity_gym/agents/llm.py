"""The ``llm`` agent: any OpenAI-compatible chat endpoint plays any environment.

Settings come from the environment variables the reference documents name (``API_BASE_URL``,
``MODEL_NAME``, ``HF_TOKEN`` or ``OPENAI_API_KEY``, ``TEMPERATURE``, ``OPENAI_SEED``,
``REQUEST_TIMEOUT_S``, ``INFERENCE_MAX_STEPS``; the SDK's own retries, ``OPENAI_MAX_RETRIES``, and
``LLM_MAX_TOKENS``, ``LLM_RESPONSE_FORMAT``, ``LLM_IMAGES``, ``LLM_PREFILL`` for the rest). Each step
sends the environment's prompt (``agents/prompts``) and asks for a schema-constrained JSON action
through ``response_format``; an endpoint that refuses the schema is asked for plain JSON, then for
plain text, and the reply is parsed with repair. A reply that still is not an action is handed to the
environment as it is, so the environment rejects it with its usual penalty: a malformed reply is
a recorded, penalised step, never a crash. Tokens and latency of every call are recorded.

``LLM_PREFILL`` starts the assistant's reply with a fixed prefix (e.g. ``{"verdict": "``) that the
model continues: the prefix goes as a last assistant message, is put back in front of the reply
before it is read, and no ``response_format`` is sent with it (a grammar would restart the object).
``igym train`` renders its prompts from the same messages, so a model is evaluated as it was trained.

Each request carries one observation, which holds what the episode has shown so far. With
``LLM_CONVERSATION=1`` the agent instead sends the whole episode as one conversation: the system
message, then every earlier observation and reply as user and assistant turns, then the new
observation. Multi-step ``igym train`` trains on exactly these conversations (``train.rollout``), so
a trained policy is evaluated with the context it was trained in.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from integrity_gym.agents.prompts import ActionReadError, PromptAdapter, get_adapter, text_of
from integrity_gym.core.env import describe_validation_error
from integrity_gym.core.replies import ReplyParseError, lower_keys, parse_reply

ResponseFormat = Literal["auto", "json_schema", "json_object", "none"]
_FORMAT_LADDER: tuple[ResponseFormat, ...] = ("json_schema", "json_object", "none")
_RAW_LIMIT = 4000
DEFAULT_BASE_URL = "https://router.huggingface.co/v1"
DEFAULT_MODEL = "Qwen/Qwen2.5-72B-Instruct"


class LLMCallError(RuntimeError):
    """The endpoint could not be used (after retries); the episode fails with this message."""


#: Each setting's environment variable (``images``, ``prefill`` and the key are read apart).
_ENV_NAMES: dict[str, str] = {
    "api_base_url": "API_BASE_URL",
    "model_name": "MODEL_NAME",
    "temperature": "TEMPERATURE",
    "seed": "OPENAI_SEED",
    "timeout_s": "REQUEST_TIMEOUT_S",
    "retries": "OPENAI_MAX_RETRIES",
    "max_tokens": "LLM_MAX_TOKENS",
    "max_steps": "INFERENCE_MAX_STEPS",
    "response_format": "LLM_RESPONSE_FORMAT",
}


class LLMSettings(BaseModel):
    """Resolved settings of the ``llm`` agent. The API key is never written out."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_base_url: str = Field(DEFAULT_BASE_URL, description="OpenAI-compatible base URL (API_BASE_URL).")
    model_name: str = Field(DEFAULT_MODEL, description="Model to ask (MODEL_NAME).")
    api_key: str | None = Field(None, repr=False, description="HF_TOKEN or OPENAI_API_KEY; never logged.")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Sampling temperature (TEMPERATURE).")
    seed: int | None = Field(42, description="Sampling seed sent to the endpoint (OPENAI_SEED).")
    timeout_s: float = Field(30.0, gt=0, description="Seconds per request (REQUEST_TIMEOUT_S).")
    retries: int = Field(2, ge=0, le=10, description="Retries of a transient failure (OPENAI_MAX_RETRIES).")
    max_tokens: int = Field(512, ge=16, description="Reply token limit per step (LLM_MAX_TOKENS).")
    max_steps: int | None = Field(None, ge=1, description="Step cap per episode (INFERENCE_MAX_STEPS).")
    response_format: ResponseFormat = Field("auto", description="Structured output mode (LLM_RESPONSE_FORMAT).")
    images: bool = Field(True, description="Send pictures to the model (LLM_IMAGES=0 to never send them).")
    prefill: str | None = Field(
        None, description="Start of the assistant's reply, continued by the model (LLM_PREFILL)."
    )
    conversation: bool = Field(
        False, description="Send the episode as one conversation, not each observation alone (LLM_CONVERSATION=1)."
    )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> LLMSettings:
        """Read the settings from environment variables; ``overrides`` win over them."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str | None:
            value = env.get(name)
            return value.strip() if value and value.strip() else None

        values: dict[str, Any] = {}
        for field, name in _ENV_NAMES.items():
            if (value := get(name)) is not None:
                values[field] = None if field == "seed" and value.lower() == "none" else value
        if prefill := env.get("LLM_PREFILL"):  # not stripped: a prefix may end in a space
            values["prefill"] = prefill
        if (images := get("LLM_IMAGES")) is not None:
            values["images"] = _flag(images)
        if (conversation := get("LLM_CONVERSATION")) is not None:
            values["conversation"] = _flag(conversation)
        if get("RETRY_ON_TRANSIENT_ERRORS") in {"0", "false", "no"} and "retries" not in values:
            values["retries"] = 0
        values["api_key"] = get("HF_TOKEN") or get("OPENAI_API_KEY")
        values.update(overrides)
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ValueError(f"invalid llm agent settings: {describe_validation_error(exc)}") from exc

    def public(self) -> dict[str, Any]:
        """The settings without the key (what run records and logs keep)."""
        return self.model_dump(exclude={"api_key"})

    def as_env_vars(self) -> dict[str, str]:
        """Environment variables that ``from_env`` reads back as these settings (the key excluded).

        A seed of None is written ``OPENAI_SEED=none`` (left out, it would read back as the default).
        """
        out: dict[str, str] = {}
        for field, name in _ENV_NAMES.items():
            value = getattr(self, field)
            if value is not None:
                out[name] = repr(value) if isinstance(value, float) else str(value)
        if self.seed is None:
            out["OPENAI_SEED"] = "none"
        out["LLM_IMAGES"] = "1" if self.images else "0"
        if self.prefill:
            out["LLM_PREFILL"] = self.prefill
        if self.conversation:
            out["LLM_CONVERSATION"] = "1"
        return out


def _flag(value: str) -> bool:
    return value.lower() not in {"0", "false", "no", "off"}


def make_client(settings: LLMSettings) -> Any:
    """An ``openai.OpenAI`` client for ``settings``.

    Transient failures (connection, timeout, 408, 409, 429, 5xx) are retried by the SDK itself,
    ``settings.retries`` times with exponential back-off that honours ``Retry-After``.
    """
    try:
        from openai import OpenAI
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError("the llm agent needs the openai package: pip install 'integrity-gym[llm]'") from exc
    return OpenAI(
        base_url=settings.api_base_url,
        api_key=settings.api_key or "no-key",
        timeout=settings.timeout_s,
        max_retries=settings.retries,
    )


def is_image_refusal(exc: Exception) -> bool:
    """Whether an endpoint's error says it cannot take pictures (the request is then sent as text)."""
    text = str(exc).lower()
    return "image" in text and ("not support" in text or "mmproj" in text or "vision" in text)


def is_format_refusal(exc: Exception) -> bool:
    """Whether an endpoint's error says it cannot take the reply schema (the request is then sent without)."""
    text = str(exc).lower()
    return any(w in text for w in ("response_format", "json_schema", "json schema", "grammar", "structured"))


def read_action(adapter: PromptAdapter, text: str, observation: Any) -> tuple[Any, str, str | None]:
    """Turn a model's reply into what the environment is stepped with: ``(action, parse, error)``.

    ``parse`` is ``"ok"``, ``"repaired"`` (near-JSON that needed fixing) or ``"malformed"``. The
    action is the adapter's reading of the reply (the raw text for adapters that let the
    environment parse it, such as selective verification's). A reply that cannot be read comes
    back as the raw text with the reason: the environment then rejects it with its own message
    and penalty, so a malformed reply is a recorded, penalised step.
    """
    try:
        data, repaired = parse_reply(text)
        action = adapter.to_action(lower_keys(data), observation)
    except (ReplyParseError, ActionReadError) as exc:
        return text, "malformed", str(exc)
    parse = "repaired" if repaired else "ok"
    if getattr(adapter, "send_raw", False):
        return text, parse, None
    return action, parse, None


def prompt_messages(
    system: str, user: Any, prefill: str | None = None, history: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The chat messages of one step: system, earlier turns, user and, with a prefill, the reply's start.

    ``history`` holds the earlier user and assistant messages (conversation mode); none by default.
    """
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        *(history or []),
        {"role": "user", "content": user},
    ]
    if prefill:
        messages.append({"role": "assistant", "content": prefill})
    return messages


class LLMAgent:
    """Plays any environment through an OpenAI-compatible chat endpoint.

    ``act`` returns an action mapping (or the raw reply when it is not an action);
    ``pop_step_record`` hands the runner what the last call cost and how its reply was read.
    """

    def __init__(
        self,
        env: Any,
        seed: int = 0,
        *,
        settings: LLMSettings | None = None,
        client: Any = None,
        adapter: PromptAdapter | None = None,
    ) -> None:
        self.spec = env.spec
        self.settings = settings or LLMSettings.from_env()
        self.adapter = adapter or get_adapter(self.spec)
        self._client = client or make_client(self.settings)
        mode = self.settings.response_format
        self._format: ResponseFormat = "json_schema" if mode == "auto" else mode
        self._images = self.settings.images
        self._feedback: str | None = None
        self._parse_error: str | None = None
        self._record: dict[str, Any] | None = None
        #: Conversation mode: the episode's system message and its turns so far (user, assistant, ...).
        self._system: str | None = None
        self._history: list[dict[str, Any]] = []
        self.seed = seed

    # ------------------------------------------------------------------ agent protocol
    def act(self, observation: Any) -> Any:
        """Ask the model for the next action of ``observation``."""
        system = self.adapter.system(self.spec, observation)
        if self.settings.conversation:  # one conversation: the first observation's system message stays
            system = self._system = self._system or system
        user = self.adapter.user(observation, self._feedback)
        if not self._images and not isinstance(user, str):
            user = self.adapter.text_only(observation) or text_of(user)
        started = time.perf_counter()
        text, usage, attempts, user = self._complete(system, user, observation)
        prefill = self.settings.prefill
        if prefill and not text.startswith(prefill):  # the endpoint returns only the continuation
            text = prefill + text
        if self.settings.conversation:
            self._history += [{"role": "user", "content": user}, {"role": "assistant", "content": text}]
        latency = time.perf_counter() - started
        action, parse, error = read_action(self.adapter, text, observation)
        self._parse_error = error
        self._record = {
            "raw": text[:_RAW_LIMIT],
            "parse": parse,
            "parse_error": error,
            "prompt_tokens": usage.get("prompt_tokens"),
            "completion_tokens": usage.get("completion_tokens"),
            "latency_s": round(latency, 4),
            "attempts": attempts,
            "response_format": self._format,
            "images": self._images,
        }
        return action

    def observe(self, result: Any) -> None:
        """Keep why the last action failed, to show the model on the next step.

        Our own reading error says more than the environment's rejection of the raw reply.
        """
        info = getattr(result, "info", None) or {}
        error = self._parse_error or info.get("error")
        self._feedback = str(error)[:300] if error else None

    def pop_step_record(self) -> dict[str, Any] | None:
        """What the last ``act`` cost (tokens, latency, attempts) and how its reply was read."""
        record, self._record = self._record, None
        return record

    def messages(self, system: str, user: Any) -> list[dict[str, Any]]:
        """The chat messages the next request sends for ``system`` and ``user``.

        With the earlier turns in conversation mode, and the prefill when there is one.
        """
        return prompt_messages(system, user, self.settings.prefill, self._history)

    # ------------------------------------------------------------------ calling the endpoint
    def _complete(self, system: str, user: Any, observation: Any) -> tuple[str, dict[str, int], int, Any]:
        """``(reply, token counts, attempts, the user message sent)``: a refused picture is sent as text."""
        from openai import APIConnectionError, APIStatusError, APITimeoutError

        attempts = 0
        while True:
            kwargs = self._request(system, user, observation)
            try:
                raw = self._client.chat.completions.with_raw_response.create(**kwargs)
                attempts += 1 + raw.retries_taken
                response = raw.parse()
            except (APITimeoutError, APIConnectionError) as exc:
                raise LLMCallError(
                    f"{self.settings.api_base_url}: {type(exc).__name__} after {self.settings.retries} retries: {exc}"
                ) from exc
            except APIStatusError as exc:
                attempts += 1
                # The endpoint works but refuses a feature: ask again more simply.
                if not isinstance(user, str) and is_image_refusal(exc):
                    self._images = False
                    user = self.adapter.text_only(observation) or text_of(user)
                    continue
                if exc.status_code in (400, 422) and self._format != "none" and is_format_refusal(exc):
                    self._format = _FORMAT_LADDER[_FORMAT_LADDER.index(self._format) + 1]
                    continue
                raise LLMCallError(f"{self.settings.api_base_url} answered {exc.status_code}: {exc}") from exc
            choice = response.choices[0] if response.choices else None
            text = (choice.message.content if choice and choice.message else None) or ""
            usage = response.usage
            counts = {}
            if usage is not None:
                counts = {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
            return text, counts, attempts, user

    def _request(self, system: str, user: Any, observation: Any) -> dict[str, Any]:
        s = self.settings
        kwargs: dict[str, Any] = {
            "model": s.model_name,
            "messages": self.messages(system, user),
            "temperature": s.temperature,
            "max_tokens": s.max_tokens,
            "timeout": s.timeout_s,
        }
        if s.seed is not None:
            kwargs["seed"] = s.seed
        if s.prefill:
            return kwargs
        if self._format == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "action", "strict": True, "schema": self.adapter.schema(observation)},
            }
        elif self._format == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs
