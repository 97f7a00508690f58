"""lwtool's optional extras (pyproject.toml), the modules each brings, and the one line
that says how to add one: to an installed lwtool, or to a checkout's `.venv` (the demo's,
made by scripts/bootstrap.sh)."""

from __future__ import annotations

# The modules of each extra: validate, check and lsp need none of them.
EXTRA_MODULES = {
    "run": frozenset({"orjson", "aiofiles", "litellm", "deno", "rich"}),
    "observe": frozenset({"opentelemetry", "google", "starlette", "uvicorn"}),
    "postgres": frozenset({"psycopg", "psycopg_pool", "psycopg_binary", "prometheus_client"}),
    "mcp": frozenset({"mcp", "mcp_types", "httpx2"}),
}
NEEDED_FOR = {"run": "runs workflows and needs lwtool's runtime",
              "observe": "needs lwtool's observability extra",
              "postgres": "uses the PostgreSQL world and needs the postgres extra",
              "mcp": "talks MCP and needs the MCP SDK (the mcp extra)"}


def hint(extra: str) -> str:
    """How to install `extra`."""
    return (f"pip install 'lwtool[{extra}]' (in a checkout's .venv: "
            f".venv/bin/pip install -e '.[{extra}]')")


def extra_of(module: str | None) -> str | None:
    """The extra a missing module belongs to, if any."""
    top = (module or "").split(".")[0]
    return next((extra for extra, modules in EXTRA_MODULES.items() if top in modules), None)
