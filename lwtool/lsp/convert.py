"""The only conversion between lwtool positions (1-based code points) and LSP ones
(0-based, in the client's position encoding, UTF-16 by default), through pygls's
PositionCodec (Finding -> Diagnostic is lwtool.lsp.early.diagnostic, which both phases
publish)."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types
from pygls.workspace import PositionCodec

from lwtool.source.position import Pos, Span


def to_position(pos: Pos, lines: Sequence[str], codec: PositionCodec) -> types.Position:
    line = pos.line - 1
    if line >= len(lines):
        return types.Position(line=max(len(lines) - 1, 0), character=0)
    return codec.position_to_client_units(lines, types.Position(line=line,
                                                                character=pos.column - 1))


def to_range(span: Span, lines: Sequence[str], codec: PositionCodec) -> types.Range:
    return types.Range(start=to_position(span.start, lines, codec),
                       end=to_position(span.end, lines, codec))


def from_position(position: types.Position, lines: Sequence[str],
                  codec: PositionCodec) -> Pos:
    server = codec.position_from_client_units(lines, position)
    return Pos(server.line + 1, server.character + 1)
