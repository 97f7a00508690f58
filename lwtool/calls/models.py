"""Model calls: slot -> model string, the offline model, and litellm (imported lazily,
only when a real provider call is about to happen)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lwtool.calls import providers
from lwtool.calls.credentials import call_secrets, scrub
from lwtool.calls.offline import OFFLINE_MODEL, offline_reply, offline_turn, offline_usage
from lwtool.calls.provider_errors import classify, filtered_reply
from lwtool.calls.scripted import ScriptedModel, ScriptExhausted
from lwtool.record.report import LWTOOL_PROVIDER


@dataclass(frozen=True)
class ModelReply:
    text: str
    usage: dict[str, int]
    provider: str
    model_id: str
    duration_ms: int
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {id, name, arguments}


@dataclass(frozen=True)
class OutputRequest:
    """How a structured output mode is asked of a model.

    `native`: the provider enforces the step's schema (a `json_schema` response format),
    so the prompt carries no format instruction. Otherwise JSON mode (`json_object`)
    where the provider has it, and the schema goes into the system prompt. `wrapped`:
    OpenAI-style structured output needs an object at the root, so another root (an
    array mode, a json mode with a non-object schema) is asked for as `{"value": …}`
    and unwrapped from the reply.
    """

    response_format: dict[str, Any] | None
    native: bool
    wrapped: bool = False


_STRICT_KEYS = {"type", "properties", "required", "additionalProperties", "items", "enum",
                "const", "anyOf", "description", "title"}


def _strictable(schema: Any) -> bool:
    """Whether a schema fits strict structured output: every object closed
    (`additionalProperties: false`) with all its properties required, and only
    keywords strict mode enforces."""
    if not isinstance(schema, dict) or set(schema) - _STRICT_KEYS:
        return False
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or \
                set(schema.get("required") or []) != set(properties):
            return False
        if not all(_strictable(child) for child in properties.values()):
            return False
    if "items" in schema and not _strictable(schema["items"]):
        return False
    return all(_strictable(option) for option in schema.get("anyOf") or [])


def output_request(model: str, mode: dict[str, Any]) -> OutputRequest:
    """The response format for a step's output mode on a model (litellm says what the
    model supports; imported here only for a real provider)."""
    kind = mode.get("mode", "text")
    schema = mode.get("schema")
    if kind not in ("object", "array", "json"):
        return OutputRequest(None, native=False)
    if model == OFFLINE_MODEL:  # the offline model answers from the schema itself
        return OutputRequest(None, native=schema is not None)
    litellm = providers.litellm()
    endpoint, known = providers.endpoint_for(model), providers.catalog_name(model)
    said = endpoint.structured if endpoint is not None else None
    native = said == "native" or (said is None and _supports(
        litellm.supports_response_schema, known))
    if isinstance(schema, dict) and native:
        wrapped = kind == "array" or schema.get("type") != "object"
        root = {"type": "object", "properties": {"value": schema}, "required": ["value"],
                "additionalProperties": False} if wrapped else schema
        name = str(mode.get("name") or "output")
        json_schema: dict[str, Any] = {"name": name, "schema": root,
                                       "strict": _strictable(root)}
        if mode.get("description"):
            json_schema["description"] = str(mode["description"])
        return OutputRequest({"type": "json_schema", "json_schema": json_schema},
                             native=True, wrapped=wrapped)
    params = _supports(litellm.get_supported_openai_params, known, default=None) or []
    json_mode = "response_format" in params and (kind == "object" or (
        isinstance(schema, dict) and schema.get("type") == "object"))
    return OutputRequest({"type": "json_object"} if json_mode else None, native=False)


def _supports(check: Any, model: str, default: Any = False) -> Any:
    try:
        return check(model=model)
    except Exception:  # noqa: BLE001 - an unknown model supports nothing special
        return default


class ModelCallFailed(Exception):
    """A model call that failed: its cause code (lwtool.calls.provider_errors), whether
    the step may try again, and after how long the provider asked for (seconds)."""

    def __init__(self, message: str, transient: bool, cause: str = "step_failed",
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.transient = transient
        self.cause = cause
        self.retry_after = retry_after


class UnresolvedModel(ValueError):
    """A model slot a run will use maps to nothing a provider can be told from: found
    before any step runs (a usage error: nothing was run)."""


def check_slots(slots: Iterable[str], mapping: Mapping[str, Any]) -> None:
    """Every slot must resolve to the offline model, a scripted model, or a litellm
    model string whose provider litellm knows (`openai/gpt-4o-mini`, `gpt-4o-mini`);
    else UnresolvedModel naming the slot and the ways to map it. litellm is imported
    only when a slot names a provider model."""
    for slot in sorted(set(slots)):
        model = mapping.get(slot, slot)
        if isinstance(model, ScriptedModel) or model == OFFLINE_MODEL or _placed(str(model)):
            continue
        mapped = f"maps to '{model}', which" if model != slot else "is not mapped and"
        raise UnresolvedModel(
            f"model slot '{slot}' {mapped} names no provider litellm knows: map it with "
            f"--models FILE ({slot}: openai/gpt-4o-mini, or {slot}: offline) or in the "
            f"definition's models ({{id: {slot}, model: openai/gpt-4o-mini}}); "
            "nothing was run")


def _placed(model: str) -> bool:
    """Whether litellm can tell the provider of a model string."""
    litellm = providers.litellm()  # (quiet: no provider list printed on a miss)
    try:
        litellm.get_llm_provider(model)
    except Exception:  # noqa: BLE001 - litellm raises its BadRequestError, or ValueError
        return False
    return True


def resolve_slot(slot: str, mapping: dict[str, str]) -> str:
    """A slot id -> its litellm model string (or `offline`); the slot id itself when the
    mapping does not name it."""
    return mapping.get(slot, slot)


def provider_and_id(model: str | ScriptedModel) -> tuple[str, str]:
    if isinstance(model, ScriptedModel):
        return LWTOOL_PROVIDER, model.name
    if model == OFFLINE_MODEL:
        return LWTOOL_PROVIDER, OFFLINE_MODEL
    provider, sep, model_id = providers.catalog_name(model).partition("/")
    return (provider, model_id) if sep else ("openai", model)


# The event loop this process makes its provider calls on, when one is set (`lwtool
# worker`: its own loop, while each run executes on a loop of its own). litellm keeps its
# HTTP clients (and their open connections) and its logging worker per event loop: calls
# from many loops would each open their own connections (a TLS handshake a run) and move
# that worker's queue from loop to loop.
_CALL_LOOP: list[asyncio.AbstractEventLoop] = []


def call_models_on(loop: asyncio.AbstractEventLoop | None) -> None:
    """Make this process's provider calls on `loop` (None: on the caller's own loop)."""
    _CALL_LOOP[:] = [loop] if loop is not None else []


async def _on_call_loop(make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """`make()` awaited on the call loop (cancelling the wait cancels it there), or here
    when there is none, it is this one, or it has closed."""
    target = _CALL_LOOP[0] if _CALL_LOOP else None
    if target is None or target is asyncio.get_running_loop() or target.is_closed():
        return await make()
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(make(), target))


async def call_model(model: str | ScriptedModel, messages: list[dict[str, Any]],
                     mode: dict[str, Any], prompt_for_offline: str,
                     request: OutputRequest | None = None, timeout: float | None = None,
                     tools: list[dict[str, Any]] | None = None) -> ModelReply:
    """One model call through litellm (or the offline or a scripted model). `timeout`
    (seconds) is passed on so the provider client gives up too, instead of litellm's
    6,000 s. `tools` are OpenAI-style function tools; the reply's `tool_calls` carry
    each call's id, name and arguments (the raw JSON string the model wrote)."""
    started = time.perf_counter()
    provider, model_id = provider_and_id(model)
    if isinstance(model, ScriptedModel):
        try:
            text, calls = model.next(messages)
        except ScriptExhausted as exc:
            raise ModelCallFailed(str(exc), transient=False) from None
        return ModelReply(text, offline_usage(str(messages[-1].get("content") or ""), text),
                          provider, model_id, _ms(started), calls)
    if model == OFFLINE_MODEL:
        text, calls = offline_turn(messages, mode, prompt_for_offline, tools) if tools \
            else (offline_reply(prompt_for_offline, mode), [])
        return ModelReply(text, offline_usage(prompt_for_offline, text), provider, model_id,
                          _ms(started), calls)
    litellm = providers.litellm()
    # Retries are the step's (its policy, each attempt recorded), never the client's.
    kwargs: dict[str, Any] = {"num_retries": 0, "max_retries": 0}
    if timeout is not None:
        kwargs["timeout"] = timeout
    endpoint = providers.endpoint_for(model)
    if endpoint is not None:
        try:
            kwargs.update(endpoint.arguments())
        except KeyError as unset:
            raise ModelCallFailed(f"{model}: no API key (set {unset.args[0]}, the "
                                  "models file's apiKeyEnv)", transient=False) from None
    if tools:
        kwargs["tools"] = tools
    request = request or output_request(model, mode)
    if request.response_format is not None:
        kwargs["response_format"] = request.response_format
    try:
        response = await _on_call_loop(
            lambda: litellm.acompletion(model=model, messages=messages, **kwargs))
    except Exception as exc:  # noqa: BLE001 - classify every provider failure
        missing = [] if endpoint is not None and endpoint.api_key_env else \
            _missing_keys(model, exc)
        if missing:  # one line a person can act on, and no retry: nothing will change
            raise ModelCallFailed(f"{model}: no API key (set {' or '.join(missing)})",
                                  transient=False) from None
        failure = classify(exc)
        said = brief(exc, call_secrets(kwargs))  # a provider may echo the key it refused
        raise ModelCallFailed(f"{model}: {type(exc).__name__}: {said}", failure.transient,
                              failure.cause, failure.retry_after) from None
    if filtered_reply(response):
        raise ModelCallFailed(f"{model}: the provider's content filter stopped the reply "
                              "(finish reason content_filter)", transient=False,
                              cause="content_filtered")
    choice = response.choices[0].message
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    completion_details = getattr(usage, "completion_tokens_details", None)
    return ModelReply(
        text=choice.content or "",
        usage={
            "inputTokens": _count(getattr(usage, "prompt_tokens", 0)),
            "outputTokens": _count(getattr(usage, "completion_tokens", 0)),
            "cachedInputTokens": _count(getattr(details, "cached_tokens", 0)),
            "reasoningTokens": _count(getattr(completion_details, "reasoning_tokens", 0)),
        },
        provider=provider, model_id=model_id, duration_ms=_ms(started),
        tool_calls=[{"id": str(getattr(call, "id", "") or f"call_{n}"),
                     "name": str(getattr(call.function, "name", "")),
                     "arguments": str(getattr(call.function, "arguments", "") or "")}
                    for n, call in enumerate(getattr(choice, "tool_calls", None) or [])])


MAX_FAILURE_TEXT = 300


def brief(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """A provider failure in one short line: no traceback text, no echoed reply (a
    hostile reply made litellm's message 200 KB), and no credential (`secrets`, quoted
    auth headers: scrubbed before the cut, which would keep a key's first part)."""
    text = " ".join(str(exc).split("Traceback (most recent call last)")[0].split())
    text = scrub(text, secrets)
    return text if len(text) <= MAX_FAILURE_TEXT else text[:MAX_FAILURE_TEXT] + "…"


def _missing_keys(model: str, exc: BaseException) -> list[str]:
    """The environment variables a failure for want of credentials names (litellm's
    validate_environment), or none when the failure is something else."""
    text = str(exc).lower()
    if not any(word in text for word in ("credentials", "api_key", "api key", "auth")):
        return []
    try:
        found = providers.litellm().validate_environment(model)
    except Exception:  # noqa: BLE001 - an unknown provider: the plain message stands
        return []
    missing = found.get("missing_keys") if isinstance(found, dict) else None
    return [str(key) for key in missing or []]


def _count(value: Any) -> int:
    """A token count as the provider reported it, never negative (a negative count made
    a negative cost)."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError, OverflowError):
        return 0


def _ms(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
