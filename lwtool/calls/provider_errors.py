"""A provider's failure (a litellm exception, or a reply a content filter stopped) as
what a step records: its cause code, whether the step's retry policy may try again, and
how long the provider asked to be left alone (`Retry-After`, bounded).

- 429 (rate limited): transient; the next attempt waits at least its `Retry-After`
  (at most MAX_RETRY_AFTER_S).
- 5xx, a connection that failed, a provider that did not answer in time: transient
  (a timeout is cause `timeout`).
- A prompt over the model's context window: `context_length_exceeded` (an lwtool
  extension of the spec's cause codes), never retried: the same prompt fails again.
- A content filter's refusal, as an error or as a reply whose finish reason is
  `content_filter`: `content_filtered` (an lwtool extension), never retried.
- Anything else (a bad request, a key that is refused): `step_failed`, not retried.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_RETRY_AFTER_S = 60.0
_TRANSIENT = ("RateLimitError", "Timeout", "APIConnectionError", "ServiceUnavailableError",
              "InternalServerError", "APIError")
_CONTEXT_WORDS = ("context length", "context window", "context_length", "prompt is too long",
                  "maximum context", "too many tokens", "input is too long")
_FILTER_WORDS = ("content_filter", "content management policy", "content policy",
                 "content_policy", "safety system", "blocked by safety")


@dataclass(frozen=True)
class ProviderFailure:
    cause: str
    transient: bool
    retry_after: float | None = None


def classify(exc: BaseException) -> ProviderFailure:
    """What a litellm exception means for the step."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = str(exc).lower()
    if "ContextWindowExceededError" in names or any(w in text for w in _CONTEXT_WORDS):
        return ProviderFailure("context_length_exceeded", transient=False)
    if "ContentPolicyViolationError" in names or any(w in text for w in _FILTER_WORDS):
        return ProviderFailure("content_filtered", transient=False)
    name = type(exc).__name__
    if name == "Timeout" or "Timeout" in names:
        return ProviderFailure("timeout", transient=True)
    return ProviderFailure("step_failed", transient=name in _TRANSIENT,
                           retry_after=retry_after(exc) if name == "RateLimitError" else None)


def retry_after(exc: BaseException) -> float | None:
    """Seconds the provider's `Retry-After` (or `retry-after-ms`) header asks for, at
    most MAX_RETRY_AFTER_S; None when it sent none (or an HTTP date: the step's own
    backoff then)."""
    headers = _headers(exc)
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except (TypeError, ValueError):
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return min(seconds, MAX_RETRY_AFTER_S)
    return None


def _headers(exc: BaseException) -> dict[str, str]:
    found: dict[str, str] = {}
    for source in (getattr(exc, "litellm_response_headers", None),
                   getattr(getattr(exc, "response", None), "headers", None)):
        try:
            found.update({str(k).lower(): str(v) for k, v in dict(source or {}).items()})
        except (TypeError, ValueError):
            continue
    return found


def filtered_reply(response: Any) -> bool:
    """Whether a reply is a content filter's stop (Gemini's SAFETY, a refusal)."""
    try:
        return str(response.choices[0].finish_reason) == "content_filter"
    except (AttributeError, IndexError, TypeError):
        return False
