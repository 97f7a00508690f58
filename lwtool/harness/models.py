"""Model calls: slot -> model string, the offline model, and litellm (imported lazily,
only when a real provider call is about to happen)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any

from lwtool.harness.offline import OFFLINE_MODEL, offline_reply, offline_usage


@dataclass(frozen=True)
class ModelReply:
    text: str
    usage: dict[str, int]
    provider: str
    model_id: str
    duration_ms: int


class ModelCallFailed(Exception):
    def __init__(self, message: str, transient: bool) -> None:
        super().__init__(message)
        self.transient = transient


def resolve_slot(slot: str, mapping: dict[str, str]) -> str:
    """A slot id -> its litellm model string (or `offline`); the slot id itself when the
    mapping does not name it."""
    return mapping.get(slot, slot)


def provider_and_id(model: str) -> tuple[str, str]:
    if model == OFFLINE_MODEL:
        return "lwtool", OFFLINE_MODEL
    provider, sep, model_id = model.partition("/")
    return (provider, model_id) if sep else ("openai", model)


_TRANSIENT = ("RateLimitError", "Timeout", "APIConnectionError", "ServiceUnavailableError",
              "InternalServerError", "APIError")


async def call_model(model: str, messages: list[dict[str, str]], mode: dict[str, Any],
                     prompt_for_offline: str) -> ModelReply:
    started = time.perf_counter()
    provider, model_id = provider_and_id(model)
    if model == OFFLINE_MODEL:
        text = offline_reply(prompt_for_offline, mode)
        return ModelReply(text, offline_usage(prompt_for_offline, text), provider, model_id,
                          int((time.perf_counter() - started) * 1000))
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    kwargs: dict[str, Any] = {}
    if mode.get("mode") in ("object", "json"):
        kwargs["response_format"] = {"type": "json_object"}
    try:
        response = await litellm.acompletion(model=model, messages=messages, **kwargs)
    except Exception as exc:  # noqa: BLE001 - classify every provider failure
        name = type(exc).__name__
        raise ModelCallFailed(f"{model}: {name}: {exc}", transient=name in _TRANSIENT) from None
    choice = response.choices[0].message
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    return ModelReply(
        text=choice.content or "",
        usage={
            "inputTokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "outputTokens": int(getattr(usage, "completion_tokens", 0) or 0),
            "cachedInputTokens": int(getattr(details, "cached_tokens", 0) or 0),
            "reasoningTokens": int(getattr(completion_details, "reasoning_tokens", 0) or 0),
        },
        provider=provider, model_id=model_id,
        duration_ms=int((time.perf_counter() - started) * 1000))
