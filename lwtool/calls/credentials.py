"""Credentials a model call could have used, removed from what lwtool says about the
call. A provider (a proxy, a self-hosted server) may quote the key it refused in its
error; that text reaches the run's record, its events, `report` and OTel exports. So
every failure's text is scrubbed before it is cut to length (a key across the cut kept
its first characters) of:

- the key the models file's `apiKeyEnv` named, and any `api_key` argument;
- every environment variable a provider reads its key from (litellm reads
  `OPENAI_API_KEY` and its kin itself when an entry names no `apiKeyEnv`): any
  variable whose name says key, token, secret, password or credential;
- the values of `Authorization`, `x-api-key` and their kin, in the call's own headers
  and wherever the text quotes such a header, and bearer tokens.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
MIN_SECRET = 6  # shorter values ("1", "true") are not keys, and masking them mangles text
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.I)
_AUTH_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key",
                 "x-goog-api-key", "ocp-apim-subscription-key")
# a header quoted in text: `Authorization: Bearer abc`, `"x-api-key": "abc"`, `api-key=abc`
_QUOTED_HEADER = re.compile(
    r"(?i)(\b(?:" + "|".join(re.escape(h) for h in _AUTH_HEADERS) + r")\b['\"]?\s*[:=]\s*"
    r"['\"]?(?:(?:bearer|basic|token)\s+)?)([^\s'\",;}\]]+)")
_BEARER = re.compile(r"(?i)(\b(?:bearer|basic)\s+)([A-Za-z0-9._~+/=-]{" + str(MIN_SECRET) + ",})")


def call_secrets(arguments: Mapping[str, Any],
                 environ: Mapping[str, str] | None = None) -> list[str]:
    """The values a call with these litellm `arguments` could have sent as a
    credential: its `api_key`, its auth headers, and each credential-like variable of
    the environment. Longest first (a key that holds another is masked whole)."""
    found: set[str] = set()
    key = arguments.get("api_key")
    if isinstance(key, str):
        found.add(key)
    for headers in (arguments.get("extra_headers"), arguments.get("headers")):
        if isinstance(headers, Mapping):
            found.update(str(v) for k, v in headers.items()
                         if str(k).lower() in _AUTH_HEADERS)
    for name, value in (os.environ if environ is None else environ).items():
        if _SECRET_NAME.search(name):
            found.add(value)
    parts = set(found)
    for value in found:  # `Bearer sk-...` as a header's value: the token alone too
        parts.update(value.split())
    return sorted((s for s in parts if len(s) >= MIN_SECRET), key=len, reverse=True)


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with each secret, each quoted auth header's value and each bearer token
    replaced by MASK."""
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    text = _QUOTED_HEADER.sub(rf"\g<1>{MASK}", text)
    return _BEARER.sub(rf"\g<1>{MASK}", text)
