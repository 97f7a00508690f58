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
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from lwtool.ui import pages
from lwtool.world.base import ArtifactMissing, RunNotFound, WorldError

ASSETS = Path(__file__).resolve().parent.parent / "_data" / "ui"
LIVE_POLL = 0.25  # seconds between looks at a running run's head
_ARTIFACT = "artifact://sha256:"


def create_app(world: Any) -> Starlette:
    """The inspector over `world` (a LocalWorld opened read-only)."""
    templates = Jinja2Templates(directory=str(ASSETS / "templates"))
    templates.env.globals["short"] = pages.short

    def render(request: Request, name: str, context: dict[str, Any],
               status: int = 200) -> HTMLResponse:
        return templates.TemplateResponse(request, name, context, status_code=status)

    def problem(request: Request, message: str, status: int) -> HTMLResponse:
        return render(request, "error.html", {"message": message}, status)

    def record_or_none(run_id: str) -> Any:
        try:
            return world.get_run(run_id)
        except RunNotFound:
            return None

    def runs(request: Request) -> HTMLResponse:
        query = request.query_params
        page = _int(query.get("page"), 0)
        context = pages.runs_page(world, query.get("status", ""), query.get("q", "").strip(),
                                  page)
        return render(request, "runs.html", context)

    def run(request: Request) -> HTMLResponse:
        run_id = request.path_params["run_id"]
        record = record_or_none(run_id)
        if record is None:
            return problem(request, f"no run {run_id} in {world.data_dir}", 404)
        query = request.query_params
        context = pages.run_page(world, record, world.events(run_id),
                                 query.getlist("type"), _int(query.get("offset"), 0),
                                 _int(query.get("attempts"), 0))
        context["query"] = str(query)
        name = "run_main.html" if query.get("partial") else "run.html"
        return render(request, name, context)

    def attempt(request: Request) -> HTMLResponse:
        run_id = request.path_params["run_id"]
        record = record_or_none(run_id)
        if record is None:
            return problem(request, f"no run {run_id} in {world.data_dir}", 404)
        path = request.query_params.get("path", "")
        number = _int(request.query_params.get("attempt"), 1)
        context = pages.attempt_page(record, world.events(run_id), path, number)
        if context is None:
            return problem(request, f"run {run_id} has no attempt {number} of a step at "
                           f"{path!r}", 404)
        return render(request, "attempt.html", context)

    def event(request: Request) -> HTMLResponse:
        run_id = request.path_params["run_id"]
        record = record_or_none(run_id)
        if record is None:
            return problem(request, f"no run {run_id} in {world.data_dir}", 404)
        seq = _int(request.path_params["seq"], 0)
        context = pages.event_page(record, world.events(run_id), seq)
        if context is None:
            return problem(request, f"run {run_id} has no event {seq}", 404)
        return render(request, "event.html", context)

    def version(request: Request) -> HTMLResponse:
        version_id = request.path_params["version_id"]
        lwir = world.get_version(version_id)
        if lwir is None:
            return problem(request, f"no version {version_id} in {world.data_dir}", 404)
        return render(request, "version.html", pages.version_page(world, version_id, lwir))

    def artifact(request: Request) -> HTMLResponse:
        digest = request.path_params["digest"]
        ref = _ARTIFACT + digest
        if len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            return problem(request, f"{digest!r} is not an artifact address", 404)
        try:
            context = pages.artifact_page(world, ref, _int(request.query_params.get("offset"),
                                                           0))
        except ArtifactMissing as exc:
            return problem(request, str(exc), 404)
        return render(request, "artifact.html", context)

    async def live(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if record_or_none(run_id) is None:
            return Response(f"no run {run_id}", 404)
        return StreamingResponse(_follow(request, world, run_id), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store"})

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
    ], exception_handlers={WorldError: damaged})


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
        record = await asyncio.to_thread(world.get_run, run_id)
        if pages.shown_status(world, record) != "running":
            yield f"event: end\ndata: {json.dumps({'status': status})}\n\n"
            return
        await asyncio.sleep(LIVE_POLL)


def _int(value: Any, default: int) -> int:
    try:
        return max(0, int(value))
    except (TypeError, ValueError):
        return default
