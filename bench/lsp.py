"""Language server speed: start-up (spawn to initialize response) and diagnostics
latency after an edit to a 200-step document (didChange to publishDiagnostics; goal
under 100 ms), through a real LSP client over stdio.

Run: .venv/bin/python bench/lsp.py
"""

from __future__ import annotations

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

URI = "file:///bench/chain-200.lwir.yaml"


async def main() -> None:
    yaml_like = to_yaml(chain_lwir(200))
    arrived: asyncio.Queue[float] = asyncio.Queue()
    client = LanguageClient("bench", "0")

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: types.PublishDiagnosticsParams) -> None:
        arrived.put_nowait(time.perf_counter())

    started = time.perf_counter()
    await client.start_io(sys.executable, "-m", "lwtool", "lsp")
    await client.initialize_async(types.InitializeParams(capabilities=types.ClientCapabilities()))
    startup = (time.perf_counter() - started) * 1000
    client.initialized(types.InitializedParams())
    opened = time.perf_counter()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=URI, language_id="yaml", version=1,
                                             text=yaml_like)))
    first = (await arrived.get() - opened) * 1000
    latencies = []
    for version in range(2, 32):
        edited = yaml_like.replace("name: chain-200", f"name: chain-{version}")
        sent = time.perf_counter()
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=URI, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=edited)]))
        latencies.append((await arrived.get() - sent) * 1000)
        await asyncio.sleep(0.05)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    print(f"lsp start-up (spawn to initialize response): {startup:.0f} ms")
    print(f"first diagnostics for a 200-step document (open): {first:.0f} ms")
    print(f"diagnostics after an edit, 200-step document: median "
          f"{statistics.median(latencies):.0f} ms, p90 "
          f"{sorted(latencies)[int(len(latencies) * 0.9)]:.0f} ms  (goal < 100 ms, "
          "includes the 20 ms debounce)")


if __name__ == "__main__":
    asyncio.run(main())
