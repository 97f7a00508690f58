"""What lwtool tells litellm about providers: litellm imported once, set up to fetch
nothing on its own (its price map, Anthropic's beta headers: the copies it ships), and
where each model is served. A models file entry may name, for its model, `apiBase`
(a self-hosted or proxy server), `apiKeyEnv` (the NAME of the environment variable
holding its key: the key itself is read at call time and never written anywhere lwtool
writes: events, reports, OTel, the inspector), `options` (more litellm arguments a
server needs: `api_version`, `extra_headers`, `num_ctx`, ...) and `structuredOutput`
(`native`: the server enforces a step's schema, as a self-hosted Ollama or vLLM does
though litellm cannot know it of the model; `json`: JSON mode with the schema in the
prompt; default: what litellm knows of the model). `configure` installs them for the
process, keyed by the model string (as the limits are)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# litellm arguments lwtool sets itself (or that would carry a key into a file)
RESERVED = frozenset({"model", "messages", "tools", "response_format", "timeout", "api_key",
                      "api_base", "base_url", "stream", "num_retries", "max_retries"})


def litellm() -> Any:
    """litellm, imported (once) so that it never reaches out on its own: the price map
    and the other catalogs it would fetch are its bundled copies."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    os.environ.setdefault("LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS", "True")
    import litellm as module

    module.suppress_debug_info = True  # its "Give Feedback" banner is not ours to print
    return module


@dataclass(frozen=True)
class Endpoint:
    api_base: str | None = None
    api_key_env: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    structured: str | None = None  # native | json | None (litellm's word on the model)

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> Endpoint | None:
        """From a models file entry's `apiBase`, `apiKeyEnv`, `options`,
        `structuredOutput` (None when it has none; ValueError naming the field when one
        is wrong)."""
        base, key_env = entry.get("apiBase"), entry.get("apiKeyEnv")
        options, structured = entry.get("options", {}), entry.get("structuredOutput")
        if structured not in (None, "native", "json"):
            raise ValueError(f"structuredOutput is native or json, not {structured!r}")
        if base is not None and (not isinstance(base, str)
                                 or not base.startswith(("http://", "https://"))):
            raise ValueError(f"apiBase must be an http:// or https:// URL, not {base!r}")
        if key_env is not None and (not isinstance(key_env, str)
                                    or not ENV_NAME.fullmatch(key_env)):
            raise ValueError("apiKeyEnv names an environment variable (the key itself is "
                             f"never written in the file), not {key_env!r}")
        if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
            raise ValueError("options must be a mapping of litellm arguments")
        taken = sorted(set(options) & RESERVED)
        if taken:
            raise ValueError(f"options may not set {', '.join(taken)} (lwtool sets it"
                             f"{'' if len(taken) == 1 else ' each'}; a key goes in "
                             "apiKeyEnv)")
        if base is None and key_env is None and not options and structured is None:
            return None
        return cls(base, key_env, dict(options), structured)

    def arguments(self) -> dict[str, Any]:
        """litellm's arguments for a call: api_base, the key read now, the options
        (KeyError naming the variable when it is not set)."""
        found: dict[str, Any] = dict(self.options)
        if self.api_base is not None:
            found["api_base"] = self.api_base
        if self.api_key_env is not None:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise KeyError(self.api_key_env)
            found["api_key"] = key
        return found


_ENDPOINTS: dict[str, Endpoint] = {}


def configure(endpoints: Mapping[str, Endpoint]) -> None:
    """Install the models file's endpoints (model string -> Endpoint) for the process."""
    _ENDPOINTS.clear()
    _ENDPOINTS.update(endpoints)


def endpoint_for(model: str) -> Endpoint | None:
    return _ENDPOINTS.get(model)


def catalog_name(model: str) -> str:
    """The model as litellm's catalog (capabilities, prices) knows it: without the
    `responses/` route litellm takes OpenAI's Responses API by
    (`openai/responses/gpt-4o-mini` is `openai/gpt-4o-mini`)."""
    provider, sep, rest = model.partition("/")
    return f"{provider}/{rest.removeprefix('responses/')}" if sep else model
