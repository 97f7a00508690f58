"""The bash tool's path check, run before every command whatever the sandbox: each word
of the command that names a path is resolved (`..`, `~` and symlinks, the way the
command will see them) and must land inside a registered root; a word the command
writes to (a redirection target, an argument of rm/mv/cp/touch/tee/...) must land in
a writable one. Under bubblewrap the kernel enforces the same view and this check
gives the clear message; in the opt-in `path-check` mode it is the only guard, and a
guard of the command's words, not a sandbox (an interpreter can still open any path).
"""

from __future__ import annotations

import os
import posixpath
import shlex
from dataclasses import dataclass
from pathlib import Path

MAX_SYMLINKS = 40
OPERATORS = {";", "&&", "||", "|", "&", "(", ")", "|&", ";;", "\n"}
# Commands whose every path argument is written (or removed), and those that write
# only their last argument (the others are read).
WRITES_ALL = {"rm", "rmdir", "mv", "touch", "mkdir", "tee", "chmod", "chown", "chgrp",
              "truncate", "unlink", "shred", "mkfifo", "mknod"}
WRITES_LAST = {"cp", "ln", "install", "rsync"}
EDITS_IN_PLACE = {"sed", "perl"}  # with -i
PREFIXES = {"env", "nice", "nohup", "time", "timeout", "command", "exec", "builtin", "xargs"}


class BashRefused(Exception):
    """The command names a path it may not use; the message says which and why."""


@dataclass(frozen=True)
class Root:
    """A folder the command may use: `virtual` as the command sees it, `host` where it
    is on this machine (None for a fresh tmpfs), writable or not."""

    virtual: str
    host: str | None
    writable: bool


@dataclass(frozen=True)
class View:
    roots: tuple[Root, ...]
    cwd: str
    home: str

    def root_of(self, path: str) -> Root | None:
        best: Root | None = None
        for root in self.roots:
            if _within(path, root.virtual) and (best is None
                                                or len(root.virtual) > len(best.virtual)):
                best = root
        return best

    def host_path(self, path: str) -> str | None:
        root = self.root_of(path)
        if root is None or root.host is None:
            return None
        rest = posixpath.relpath(path, root.virtual)
        return root.host if rest == "." else os.path.join(root.host, rest)


def resolve(path: str, view: View, cwd: str) -> str:
    """The absolute path `path` names inside the view: `~` expanded, `..` applied after
    each symlink is followed (as the kernel does), symlink targets read on the host."""
    if path == "~" or path.startswith("~/"):
        path = view.home + path[1:]
    pending = [p for p in (path if path.startswith("/") else f"{cwd}/{path}").split("/")]
    resolved, hops = "/", 0
    while pending:
        name = pending.pop(0)
        if name in ("", "."):
            continue
        if name == "..":
            resolved = posixpath.dirname(resolved)
            continue
        candidate = posixpath.join(resolved, name)
        host = view.host_path(candidate)
        if host is not None and os.path.islink(host):
            hops += 1
            if hops > MAX_SYMLINKS:
                raise BashRefused(f"{path}: too many levels of symbolic links")
            target = os.readlink(host)
            if target.startswith("/"):
                resolved = "/"
            pending = target.split("/") + pending
            continue
        resolved = candidate
    return resolved


def check_command(command: str, view: View) -> None:
    """Raise BashRefused for the first word that names a path outside the view (or a
    write to a read-only root)."""
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
    except ValueError as exc:
        raise BashRefused(f"cannot parse the command: {exc}") from None
    cwd = view.cwd
    command_words: list[str] = []
    redirect: str | None = None
    for index, word in enumerate(words + [";"]):
        if word in OPERATORS or (word and set(word) <= set(";&|()")):
            cwd = _check_simple(command_words, view, cwd)
            command_words, redirect = [], None
        elif word and set(word) <= set("<>&|"):
            redirect = word
        elif redirect is not None:
            if not (redirect.endswith("&") and (word.isdigit() or word == "-")):
                _check_path(word, view, cwd, write=">" in redirect)
            redirect = None
        elif not (word.isdigit() and index + 1 < len(words)
                  and set(words[index + 1]) <= set("<>&")):
            command_words.append(word)  # (a digit before a redirection is its fd)


def _check_simple(words: list[str], view: View, cwd: str) -> str:
    """Check one simple command's words; return the cwd after it (`cd` moves it)."""
    while words and "=" in words[0] and not words[0].startswith(("=", "-", "/")):
        _check_value(words.pop(0).split("=", 1)[1], view, cwd, write=False)
    while words and posixpath.basename(words[0]) in PREFIXES:
        words = words[1:]
        while words and words[0].startswith("-"):
            words = words[1:]
    if not words:
        return cwd
    name, args = posixpath.basename(words[0]), words[1:]
    if "/" in words[0]:
        _check_path(words[0], view, cwd, write=False)
    operands = [a for a in args if not a.startswith("-")]
    in_place = name in EDITS_IN_PLACE and any(a.startswith("-i") for a in args)
    for arg in args:
        write = ((name in WRITES_ALL or in_place) and arg in operands) or (
            name in WRITES_LAST and bool(operands) and arg == operands[-1])
        if name == "dd" and arg.startswith("of="):
            _check_path(arg[3:], view, cwd, write=True)
        else:
            _check_value(arg, view, cwd, write=write)
    if name == "cd":
        target = operands[0] if operands else view.home
        return resolve(target, view, cwd)
    return cwd


def _check_value(value: str, view: View, cwd: str, write: bool) -> None:
    """A word, or the part after `=` of `--opt=value`/`VAR=value`, that may be a path."""
    if value.startswith("-") and "=" in value:
        value = value.split("=", 1)[1]
    if write or "/" in value or value in ("..", "~") or _is_symlink(value, view, cwd):
        _check_path(value, view, cwd, write)


def _is_symlink(word: str, view: View, cwd: str) -> bool:
    host = view.host_path(posixpath.join(cwd, word))
    return host is not None and os.path.islink(host)


def _check_path(word: str, view: View, cwd: str, write: bool) -> None:
    path = resolve(word, view, cwd)
    root = view.root_of(path)
    if root is None:
        if not write and any(_within(r.virtual, path) for r in view.roots):
            return  # an ancestor of a mount (`ls /mnt`): listing is fine
        shown = word if word == path else f"{word} (resolves to {path})"
        raise BashRefused(f"{shown} is outside the mounts; use paths under "
                          + ", ".join(sorted(r.virtual for r in view.roots)))
    if write and not root.writable:
        shown = word if word == path else f"{word} (resolves to {path})"
        raise BashRefused(f"{shown} is read-only ({root.virtual} is mounted ro)")


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def host_roots(extra: list[Root]) -> tuple[Root, ...]:
    """The system folders a command may read (binaries, libraries, devices)."""
    system = [p for p in ("/usr", "/bin", "/lib", "/lib32", "/lib64", "/sbin",
                          "/etc/alternatives") if Path(p).exists()]
    return tuple([Root(p, p, False) for p in system] + extra)
