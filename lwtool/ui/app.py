"""The web inspector (`lwtool ui`): a Starlette app over one data dir, opened read-only.
Pages are rendered on the server (Jinja2); the page script only follows a running run
(server-sent events from `/runs/{id}/live`, then the page's main part is fetched again).
Everything it serves ships inside the package: no internet at run time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from lwtool.ui import attempt as attempt_pages
from lwtool.ui import pages
from lwtool.ui.text import short
from lwtool.world.base import (
    ArtifactMissing,
    InspectedWorld,
    RunNotFound,
    WorldError,
    shown_status,
)

ASSETS = Path(__file__).resolve().parent.parent / "_data" / "ui"
LIVE_POLL = 0.25  # seconds between looks at a running run's head
_ARTIFACT = "artifact://sha256:"


def create_app(world: InspectedWorld) -> Starlette:
    """The inspector over `world` (a LocalWorld opened read-only, or any InspectedWorld)."""
    templates = Jinja2Templates(directory=str(ASSETS / "templates"))
    templates.env.globals["short"] = short

    def render(request: Request, name: str, context: dict[str, Any],
               status: int = 200) -> HTMLResponse:
        return templates.TemplateResponse(request, name, context, status_code=status)

    def problem(request: Request, message: str, status: int) -> HTMLResponse:
        return render(request, "error.html", {"message": message}, status)

    def run_of(request: Request) -> tuple[Any, list[Any]]:
        """The run a request names and its events; NotFound when there is none."""
        run_id = request.path_params["run_id"]
        try:
            return world.get_run(run_id), world.events(run_id)
        except RunNotFound:
            raise NotFound(f"no run {run_id} in {world.data_dir}") from None

    def found(context: dict[str, Any] | None, missing: str) -> dict[str, Any]:
        if context is None:
            raise NotFound(missing)
        return context

    def runs(request: Request) -> HTMLResponse:
        query = request.query_params
        page = _int(query.get("page"), 0)
        context = pages.runs_page(world, query.get("status", ""), query.get("q", "").strip(),
                                  page)
        return render(request, "runs.html", context)

    def run(request: Request) -> HTMLResponse:
        record, events = run_of(request)
        query = request.query_params
        context = pages.run_page(world, record, events, query.getlist("type"),
                                 _int(query.get("offset"), 0), _int(query.get("attempts"), 0))
        return render(request, "run_main.html" if query.get("partial") else "run.html",
                      context)

    def attempt(request: Request) -> HTMLResponse:
        record, events = run_of(request)
        path = request.query_params.get("path", "")
        number = _int(request.query_params.get("attempt"), 1)
        return render(request, "attempt.html", found(
            attempt_pages.attempt_page(record, events, path, number),
            f"run {record.run_id} has no attempt {number} of a step at {path!r}"))

    def event(request: Request) -> HTMLResponse:
        record, events = run_of(request)
        seq = _int(request.path_params["seq"], 0)
        return render(request, "event.html", found(
            pages.event_page(record, events, seq), f"run {record.run_id} has no event {seq}"))

    def version(request: Request) -> HTMLResponse:
        version_id = request.path_params["version_id"]
        lwir = world.get_version(version_id)
        if lwir is None:
            raise NotFound(f"no version {version_id} in {world.data_dir}")
        return render(request, "version.html", pages.version_page(world, version_id, lwir))

    def artifact(request: Request) -> HTMLResponse:
        digest = request.path_params["digest"]
        if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            raise NotFound(f"{digest!r} is not an artifact address")
        offset = _int(request.query_params.get("offset"), 0)
        try:
            context = pages.artifact_page(world, _ARTIFACT + digest, offset)
        except ArtifactMissing as exc:
            raise NotFound(str(exc)) from None
        return render(request, "artifact.html", context)

    async def live(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if await asyncio.to_thread(world.run_head, run_id) is None:
            return Response(f"no run {run_id}", 404)
        return StreamingResponse(_follow(request, world, run_id), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})

    async def missing(request: Request, exc: Exception) -> Response:
        return problem(request, str(exc), 404)

    async def damaged(request: Request, exc: Exception) -> Response:
        return problem(request, str(exc), 500)

    return Starlette(routes=[
        Route("/", runs),
        Route("/runs/{run_id}", run),
        Route("/runs/{run_id}/live", live),
        Route("/runs/{run_id}/step", attempt),
        Route("/runs/{run_id}/events/{seq}", event),
        Route("/versions/{version_id}", version),
        Route("/artifacts/sha256/{digest}", artifact),
        Mount("/static", app=StaticFiles(directory=str(ASSETS / "static")), name="static"),
    ], exception_handlers={NotFound: missing, WorldError: damaged}, middleware=[
        # Only requests addressed to this machine by name: a web page elsewhere cannot
        # reach the runs through a DNS name rebound to 127.0.0.1.
        Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost"]),
        Middleware(_Hardened),
    ])


async def _follow(request: Request, world: Any, run_id: str) -> Any:
    """Server-sent events: `changed` with the last seq whenever the run commits, `end`
    once it is no longer running (or its process is gone)."""
    seen = -1
    while not await request.is_disconnected():
        head = await asyncio.to_thread(world.run_head, run_id)
        if head is None:
            return
        seq, status = head
        if seq != seen:
            seen = seq
            yield f"event: changed\ndata: {json.dumps({'seq': seq})}\n\n"
        if shown_status(world, run_id, status) != "running":
            yield f"event: end\ndata: {json.dumps({'status': status})}\n\n"
            return
        await asyncio.sleep(LIVE_POLL)


class _Hardened:
    """Headers on every response: run data (prompts, tool output) is shown, never run;
    only the inspector's own script and stylesheet load (inline style attributes are
    allowed: the timeline places its bars with them)."""

    HEADERS = [(b"content-security-policy", b"default-src 'none'; script-src 'self'; "
                b"style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                b"connect-src 'self'; base-uri 'none'; form-action 'self'; "
                b"frame-ancestors 'none'"),
               (b"x-content-type-options", b"nosniff"),
               (b"referrer-policy", b"no-referrer")]

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []),
                                                  *self.HEADERS]}
            await send(message)

        await self.app(scope, receive, with_headers)


class NotFound(Exception):
    """What a request names is not in the world; the message says what."""


MAX_QUERY_INT = 1 << 31  # past it SQLite cannot take a LIMIT/OFFSET (an OverflowError)


def _int(value: Any, default: int) -> int:
    """A non-negative query number, clamped to MAX_QUERY_INT; `default` when not one."""
    try:
        return min(max(0, int(value)), MAX_QUERY_INT)
    except (TypeError, ValueError):
        return default
