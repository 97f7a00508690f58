"""Secrets: where their values come from (a broker), and the redaction that keeps the
values a run was granted out of everything it writes.

LWIR names secrets (`permissions.secrets`, a step's `secrets`), never holds a value. A
`Secrets` broker answers names with values: the process environment by default, a
dotenv file (`--secrets FILE`), or a mapping given to the Python API. A run takes the
values of the names its workflow declares when it starts (`resolve`), fails naming
any it cannot find, and hands each step only the names it is granted.

`Redactor` replaces each granted value, and its base64 and URL-encoded forms, by
`[secret:NAME]` in text, bytes and JSON values. A value shorter than MIN_VALUE is not
masked (masking `1` or `true` mangles text; such a value is no secret).
"""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

MIN_VALUE = 6
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# an environment variable whose name says it holds a credential: what code.run's
# `env: allow` never passes, and what a worker offers runs from its environment
CREDENTIAL_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.I)
ENVIRONMENT = "the environment"


class SecretMissing(LookupError):
    """Names the broker has no value for (`names`); the message says where it looked."""

    def __init__(self, names: list[str], where: str) -> None:
        self.names = names
        many = len(names) > 1
        super().__init__(f"secret{'s' if many else ''} {', '.join(names)} "
                         f"{'are' if many else 'is'} not in {where}; set "
                         f"{'them' if many else 'it'} there or give the run --secrets FILE")


@dataclass(frozen=True)
class Secrets:
    """A broker: name -> value, and where the values come from (for messages)."""

    values: Mapping[str, str] = field(default_factory=dict, repr=False)
    where: str = "the given secrets"

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Secrets:
        return cls(dict(os.environ if environ is None else environ), ENVIRONMENT)

    @classmethod
    def from_dotenv(cls, path: str | Path) -> Secrets:
        """A dotenv file's values (python-dotenv's syntax; no variable is set)."""
        from dotenv import dotenv_values

        file = Path(path)
        if not file.is_file():
            raise FileNotFoundError(f"{path}: no such secrets file")
        found = {k: v for k, v in dotenv_values(file).items() if v is not None}
        return cls(found, f"the secrets file {path}")

    @classmethod
    def of(cls, given: Secrets | Mapping[str, str] | str | Path | None) -> Secrets:
        """The API's `secrets=`: a broker, a mapping, a dotenv path, or None (the
        environment)."""
        if given is None:
            return cls.from_environ()
        if isinstance(given, Secrets):
            return given
        if isinstance(given, (str, Path)):
            return cls.from_dotenv(given)
        return cls({str(k): str(v) for k, v in given.items()})

    def offered(self) -> list[str]:
        """The names a worker offers runs (never values): all of a file's or mapping's;
        of the environment, those whose name says it holds a credential."""
        return sorted(n for n in self.values
                      if self.where != ENVIRONMENT or CREDENTIAL_NAME.search(n))

    def resolve(self, names: Iterable[str]) -> dict[str, str]:
        """The values of `names`; SecretMissing naming every one not found."""
        wanted = sorted(set(names))
        missing = [n for n in wanted if n not in self.values]
        if missing:
            raise SecretMissing(missing, self.where)
        return {n: self.values[n] for n in wanted}


class Redactor:
    """Replaces secret values in what is about to be written."""

    def __init__(self, values: Mapping[str, str]) -> None:
        forms: dict[str, str] = {}
        for name, value in values.items():
            if len(value) < MIN_VALUE:
                continue
            mark = f"[secret:{name}]"
            for form in _forms(value):
                forms.setdefault(form, mark)
        # longest first: a value holding another is masked whole
        self._forms = sorted(forms.items(), key=lambda kv: len(kv[0]), reverse=True)
        self._bytes = [(f.encode(), m.encode()) for f, m in self._forms]

    def __bool__(self) -> bool:
        return bool(self._forms)

    def text(self, text: str) -> str:
        for form, mark in self._forms:
            if form in text:
                text = text.replace(form, mark)
        return text

    def data(self, data: bytes) -> bytes:
        for form, mark in self._bytes:
            if form in data:
                data = data.replace(form, mark)
        return data

    def value(self, value: Any) -> Any:
        """A JSON value with every string (keys too) redacted; the same object when
        nothing changed (no copy of a large output for nothing)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            items = [self.value(v) for v in value]
            return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
        if isinstance(value, dict):
            pairs = [(self.text(k) if isinstance(k, str) else k, self.value(v))
                     for k, v in value.items()]
            changed = any(k2 is not k or v2 is not v
                          for (k2, v2), (k, v) in zip(pairs, value.items(), strict=True))
            return dict(pairs) if changed else value
        return value


NO_REDACTION = Redactor({})

# The broker runs take their secrets from: the environment unless a caller (`--secrets
# FILE`, the API's `secrets=`) gives another for what it starts. A ContextVar, so the
# runs a call starts (children, branches, sub-runs) use the same one.
_BROKER: ContextVar[Secrets | None] = ContextVar("lwtool_secrets", default=None)


_process_broker: list[Secrets] = []  # a command line's --secrets FILE: every thread's


def set_broker(broker: Secrets) -> None:
    """The broker of this process from now on (a command line's `--secrets FILE`): also
    for runs executed on loops of their own, which start in an empty context (a
    worker's, lwtool.runtime.own_loop)."""
    _process_broker[:] = [broker]


def current_broker() -> Secrets:
    """The caller's (`using`), else the process's (`set_broker`), else the environment."""
    return _BROKER.get() or (_process_broker[0] if _process_broker else None) \
        or Secrets.from_environ()


@contextmanager
def using(given: Secrets | Mapping[str, str] | str | Path | None) -> Iterator[Secrets]:
    """Runs started inside take their secrets from `given` (None: as before)."""
    if given is None:
        yield current_broker()
        return
    broker = Secrets.of(given)
    token = _BROKER.set(broker)
    try:
        yield broker
    finally:
        _BROKER.reset(token)


def _forms(value: str) -> list[str]:
    raw = value.encode()
    forms = {value, quote(value, safe=""), base64.b64encode(raw).decode(),
             base64.urlsafe_b64encode(raw).decode()}
    # base64 without its padding too (JWT-style encoders drop it)
    forms |= {f.rstrip("=") for f in list(forms)}
    return [f for f in forms if len(f) >= MIN_VALUE]
