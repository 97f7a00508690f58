"""Language server speed, through a real LSP client over stdio (`lwtool lsp`, as an
editor starts it):

- start-up: spawn to the `initialize` response;
- first diagnostics: spawn to the first publishDiagnostics of a document opened right
  after `initialized` (goal: under 600 ms of `initialize`), for examples/candidate-review.lwir.yaml
  and a 200-step document; the early phase (lwtool/lsp/early.py) serves both before
  pygls loads;
- first hover: the first request after the open, answered once the full server has
  loaded (what the early phase defers);
- diagnostics after an edit to the 200-step document (didChange to publishDiagnostics;
  goal under 100 ms, including the 20 ms debounce).

Start-up figures are medians over --spawns sessions (default 5).

Run: .venv/bin/python bench/lsp.py [--spawns N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _generate import chain_lwir, to_yaml  # noqa: E402

EXAMPLE = HERE.parent / "examples" / "candidate-review.lwir.yaml"


async def session(text: str, edits: int) -> dict[str, float | list[float]]:
    uri = "file:///bench/doc.lwir.yaml"
    arrived: asyncio.Queue[float] = asyncio.Queue()
    client = LanguageClient("bench", "0")

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        arrived.put_nowait(time.perf_counter())

    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "lwtool", "lsp")
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    initialized = time.perf_counter()
    client.initialized(types.InitializedParams())
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="yaml", version=1,
                                             text=text)))
    diagnosed = await arrived.get()
    await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=0, character=1)))
    hovered = time.perf_counter()
    latencies = []
    for version in range(2, 2 + edits):
        edited = text.replace("apiVersion:", f"# edit {version}\napiVersion:", 1)
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)]))
        latencies.append((await arrived.get() - sent) * 1000)
        await asyncio.sleep(0.05)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return {"startup": (initialized - started) * 1000,
            "first": (diagnosed - started) * 1000,
            "after_initialize": (diagnosed - initialized) * 1000,
            "hover": (hovered - diagnosed) * 1000, "edits": latencies}


def _median(runs: list[dict[str, float | list[float]]], key: str) -> float:
    return statistics.median(float(run[key]) for run in runs)  # type: ignore[arg-type]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spawns", type=int, default=5)
    spawns = parser.parse_args().spawns
    documents = {"the candidate-review example": EXAMPLE.read_text(),
                 "a 200-step document": to_yaml(chain_lwir(200))}
    for name, text in documents.items():
        runs = [await session(text, 0) for _ in range(spawns)]
        print(f"{name}: start-up {_median(runs, 'startup'):.0f} ms; first diagnostics "
              f"{_median(runs, 'first'):.0f} ms after spawn, "
              f"{_median(runs, 'after_initialize'):.0f} ms after initialize (goal < 600 ms); "
              f"first hover {_median(runs, 'hover'):.0f} ms after them "
              f"(medians of {spawns})")
    edits = (await session(documents["a 200-step document"], 30))["edits"]
    assert isinstance(edits, list)
    print(f"diagnostics after an edit, 200-step document: median "
          f"{statistics.median(edits):.0f} ms, p90 "
          f"{sorted(edits)[int(len(edits) * 0.9)]:.0f} ms  (goal < 100 ms, "
          "includes the 20 ms debounce)")


if __name__ == "__main__":
    asyncio.run(main())
