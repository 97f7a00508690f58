"""A code.run step's files as modules: pins checked, each file a `data:` URL, and an
import map that lets the files import each other as `./<name>` while every `file:`,
absolute-path and remote import is mapped to a scheme Deno refuses. (Deno loads local
files for `import()` without read permission; the map closes that door.)"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from lwtool.canonical.digest import text_pin

_PIN = re.compile(r"sha256:[0-9a-f]{64}")
_MEDIA = {".ts": "application/typescript", ".mts": "application/typescript",
          ".cts": "application/typescript", ".tsx": "text/tsx", ".jsx": "text/jsx",
          ".js": "text/javascript", ".mjs": "text/javascript", ".cjs": "text/javascript",
          ".json": "application/json"}
DENIED = "lwtool-denied://"
_REFUSED_PREFIXES = ("file:///", "file://", "/", "http://", "https://", "blob:", "npm:",
                     "jsr:")


class PinBroken(ValueError):
    """A file's content does not match its `sha256:` pin (or the step has no such file)."""


def checked_files(settings: dict[str, Any]) -> dict[str, str]:
    """name -> content of the step's files, every pin verified; raises PinBroken."""
    files = settings.get("files")
    if not isinstance(files, dict) or not files:
        raise PinBroken("the step declares no files")
    contents: dict[str, str] = {}
    for name, file in files.items():
        content = file.get("content") if isinstance(file, dict) else None
        if not isinstance(content, str):
            raise PinBroken(f"file '{name}' has no content")
        pin = file.get("sha256")
        if pin is not None:
            actual = text_pin(content)
            if not isinstance(pin, str) or not _PIN.fullmatch(pin) or pin != actual:
                raise PinBroken(f"file '{name}' is pinned to {pin} but its content hashes to "
                                f"{actual}; the source was not loaded")
        contents[str(name)] = content
    entry = settings.get("entrypoint")
    if entry not in contents:
        raise PinBroken(f"the entrypoint '{entry}' is not one of the step's files")
    return contents


def specifier(name: str) -> str:
    """How the files import each other (and the bootstrap imports the entrypoint)."""
    return name if name.startswith(("./", "../")) else "./" + name


def data_url(name: str, content: str) -> str:
    suffix = name[name.rfind("."):] if "." in name else ".ts"
    media = _MEDIA.get(suffix.lower(), "application/typescript")
    encoded = base64.b64encode(content.encode("utf-8", "surrogatepass")).decode()
    return f"data:{media};base64,{encoded}"


def module_urls(files: dict[str, str]) -> dict[str, str]:
    """name -> its `data:` URL, for every file."""
    return {name: data_url(name, content) for name, content in files.items()}


def import_map(urls: dict[str, str], refuse_local: bool = True) -> str:
    """The import map of the files' `module_urls`, itself a `data:` URL (its relative
    keys stay bare, matching the specifiers written in data: modules)."""
    imports: dict[str, str] = {}
    if refuse_local:
        imports.update({prefix: f"{DENIED}{i}/" for i, prefix in enumerate(_REFUSED_PREFIXES)})
    for name, url in urls.items():
        imports[specifier(name)] = url
    text = json.dumps({"imports": imports}, separators=(",", ":"))
    return "data:application/json;base64," + base64.b64encode(text.encode()).decode()
