"""Sending spans to an OTLP/HTTP collector with the exchange bounded, whatever the
collector does: the whole exchange (retries included) ends by the deadline even when a
reply drips in byte by byte; a reply is read raw (never decompressed) and only its
first REPLY_CAP bytes; a redirect is a failure that names where it points, not a
success; the failure message says what happened (the status and reason, a refused
connection, or no answer in time), never "retrying" after giving up.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import requests
from opentelemetry.sdk.trace import ReadableSpan

REPLY_CAP = 64 * 1024


class ExportFailed(Exception):
    """The spans could not be delivered; the message says where and why."""


class Redirected(requests.RequestException):
    """The collector answered with a redirect (not followed: the spans were not taken)."""


class BoundedSession(requests.Session):
    """A requests session for the OTLP exporter: a deadline over every request, raw
    replies capped at REPLY_CAP, redirects refused; `last` says how the last try went."""

    def __init__(self, deadline: float) -> None:
        super().__init__()
        self.deadline = deadline
        self.last = ""

    def request(self, method: str, url: str,  # type: ignore[override]
                *args: Any, **kwargs: Any) -> requests.Response:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise requests.Timeout("the deadline passed")
        kwargs["headers"] = {**(kwargs.get("headers") or {}), "Accept-Encoding": "identity"}
        kwargs.update(stream=True, allow_redirects=False,
                      timeout=min(float(kwargs.get("timeout") or remaining), remaining))
        try:
            response = super().request(method, url, *args, **kwargs)
        except requests.RequestException as exc:
            self.last = _reason(exc)
            raise
        try:
            body = response.raw.read(REPLY_CAP, decode_content=False)
        finally:
            response.close()
        response._content = body  # what the exporter may look at: the capped raw bytes
        self.last = f"HTTP {response.status_code} {response.reason or ''}".rstrip()
        if 300 <= response.status_code < 400:
            where = response.headers.get("Location", "elsewhere")
            self.last = (f"it redirected ({response.status_code}) to {where}: give the final "
                         "URL as --endpoint")
            raise Redirected(self.last)
        return response


def _reason(exc: BaseException) -> str:
    text = str(exc)
    if "Connection refused" in text:
        return "the connection was refused"
    if isinstance(exc, requests.Timeout):
        return "no answer in time"
    return text[:300]


def post_spans(found: list[ReadableSpan], url: str | None, timeout: float) -> str:
    """Export `found` to `url` (None: the OTEL_EXPORTER_OTLP_* environment); the URL
    they went to, or ExportFailed saying why not."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    session = BoundedSession(time.monotonic() + timeout)
    exporter = OTLPSpanExporter(endpoint=url, timeout=timeout, session=session)
    target = str(getattr(exporter, "_endpoint", url))
    outcome: list[Any] = []
    logger = logging.getLogger("opentelemetry.exporter")
    quiet = logging.NullHandler()  # its retry and failure lines are ours to say, once
    logger.addHandler(quiet)
    logger.propagate = False
    worker = threading.Thread(target=lambda: outcome.append(exporter.export(found)),
                              name="lwtool-otlp", daemon=True)
    try:
        worker.start()
        worker.join(timeout + 0.5)  # a reply dripping past the deadline is left behind
    finally:
        logger.removeHandler(quiet)
        logger.propagate = True
    if worker.is_alive():
        raise ExportFailed(f"the collector at {target} gave no complete answer within "
                           f"{timeout:g}s")
    exporter.shutdown()  # type: ignore[no-untyped-call]
    if outcome != [SpanExportResult.SUCCESS]:
        why = session.last or "no answer"
        raise ExportFailed(f"the collector at {target} did not accept the spans: {why}")
    return target
