"""Where a replay of a hunted file runs it, and which files beside it the report folder's copy could not find.

A hunt copies a file scenario next to its trace, so a report folder replays
anywhere (a CI artifact, another machine). But a scenario often finds files
beside itself: ``Path(__file__).parent / "operator.py"`` (an operator script for
``ExternalOperator``, a kopf handlers file, a CRD's YAML). Run from the copy,
``__file__`` names the report folder, where those files are not.

So a replay runs the scenario **where it was hunted** when that file is still
there, byte for byte the one hunted (its SHA-256 is the trace's, which the
trace's checksum covers): ``__file__`` then names the hunted place and its
siblings resolve as they did in the hunt. Running a file other than the copy
is sound because its bytes are the copy's; only the folder it runs from
differs, and that folder is the one the hunt ran it from. The copy is the
fallback (the hunted file moved, edited or deleted; a folder copied elsewhere).

A replay of the copy is **watched** (:func:`watching`): every file the run
tries to open, every file a process it starts names on its command line, and
every file a part of the harness looks for and does not find
(:data:`~harness._errors.FILE_NOT_FOUND_EVENT`, e.g. a kopf handlers file) is
seen through Python's audit hooks (:pep:`578`). One that lies in the copy's
folder and is not there is a file the hunted folder had and this one lacks;
when the replay then fails, it is named, with the fix, instead of a divergence
that blames the trace. Audit hooks see every client alike (the ``open`` of
``Path.read_text``, ``subprocess.Popen`` of an operator process, ``os.exec``),
so nothing here knows one client's error text. Rejected: matching error texts
("can't open file", "does not exist"), which every client words its own way;
comparing the folder with the hunted one, which is gone exactly when it matters.
"""

from __future__ import annotations

import hashlib
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .._errors import FILE_NOT_FOUND_EVENT


def same_file(path: Path, sha256: str) -> bool:
    """``path`` is a regular ``.py`` file whose SHA-256 is ``sha256``."""
    try:
        return path.suffix == ".py" and path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256
    except OSError:
        return False


def hunted_place(origin: str | None, hunted_file: Any, sha256: str) -> tuple[Path | None, Path | None]:
    """``(where to run, where it was hunted)``: the hunted file when it is there unchanged, else None; and its path.

    ``origin`` is the absolute path a trace records (``scenario_origin``);
    a trace written before it existed has only ``meta["hunted_file"]``, relative
    to the folder the hunt ran in, which is looked for under the current folder.
    """
    candidate: Path | None = None
    if isinstance(origin, str) and os.path.isabs(origin):
        candidate = Path(origin)
    elif isinstance(hunted_file, str) and hunted_file.endswith(".py") and not os.path.isabs(hunted_file):
        here = Path.cwd().resolve()
        under = (here / hunted_file).resolve()
        if under.is_relative_to(here):
            candidate = under
    if candidate is None:
        return None, None
    return (candidate if same_file(candidate, sha256) else None), candidate


# --------------------------------------------------------------------------- the watch
_EVENTS = frozenset({"open", "subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", FILE_NOT_FOUND_EVENT})
_CREATE_FLAGS = os.O_CREAT | getattr(os, "O_TMPFILE", 0)


class _Watch:
    """The files one replay looked for in ``folder`` and did not find, in the order first seen."""

    def __init__(self, folder: Path) -> None:
        self.folder = os.path.realpath(folder)
        self.missing: dict[str, None] = {}

    def _check(self, path: Any, cwd: Any = None) -> None:
        try:
            text = os.fsdecode(os.fspath(path))
        except TypeError:
            return  # a file descriptor, or nothing path-like
        if not text:
            return
        base = os.fsdecode(os.fspath(cwd)) if cwd is not None else os.getcwd()
        full = os.path.realpath(os.path.join(base, text))
        if "__pycache__" in full or full.endswith(".pyc"):
            return  # the import system looking for a bytecode cache: never a file the scenario needs
        if full.startswith(self.folder + os.sep) and not os.path.exists(full):
            self.missing[os.path.relpath(full, self.folder)] = None

    def _command(self, argv: Any, cwd: Any, program: Any = None) -> None:
        """The files a command line names: its program when given with a path, and each argument that names a file
        (an absolute path; a relative one with a separator or an extension; the value of ``--opt=FILE``)."""
        if isinstance(argv, (str, bytes)) or not isinstance(argv, Sequence):
            return  # a shell string is the shell's to split
        words = [os.fsdecode(os.fspath(a)) for a in argv if isinstance(a, (str, bytes, os.PathLike))]
        if program is not None:
            self._check(program, cwd)
        for i, word in enumerate(words):
            if word.startswith("-"):
                word = word.partition("=")[2]
            if not word or (i == 0 and os.sep not in word and "/" not in word):
                continue  # a program named without a path is looked up on PATH
            if os.path.isabs(word) or os.sep in word or "/" in word or _has_extension(word):
                self._check(word, cwd)

    def saw(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "open":
            path, mode, flags = (*args, None, None, 0)[:3]
            creates = (isinstance(mode, str) and any(c in mode for c in "wax")) or (
                isinstance(flags, int) and flags & _CREATE_FLAGS)
            if not creates:
                self._check(path)
        elif event == "subprocess.Popen":
            executable, argv, cwd = (*args, None, None, None)[:3]
            self._command(argv, cwd, executable)
        elif event in ("os.exec", "os.posix_spawn"):
            self._command([args[0], *list(args[1])[1:]], None)
        elif event == "os.spawn":
            self._command([args[1], *list(args[2])[1:]], None)
        elif event == FILE_NOT_FOUND_EVENT:
            self._check(args[0])


def _has_extension(word: str) -> bool:
    """``handlers.py``, ``crd.yaml``: a word with a file extension (and not a number such as ``0.5``)."""
    stem, dot, ext = word.rpartition(".")
    return bool(stem and dot and ext.isalnum() and not ext.isdigit())


_WATCHES: list[_Watch] = []
_LOCAL = threading.local()
_hooked = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    """The process's audit hook: idle (one test) unless a replay of a copy is watched."""
    if not _WATCHES or event not in _EVENTS or getattr(_LOCAL, "busy", False):
        return
    _LOCAL.busy = True  # what the watch itself calls must not be seen again
    try:
        for watch in list(_WATCHES):
            watch.saw(event, args)
    except Exception:  # an audit hook that raises would fail the audited call itself: a watch never does
        pass
    finally:
        _LOCAL.busy = False


@contextmanager
def watching(folder: Path) -> Iterator[dict[str, None]]:
    """Within the block, collect the files the run looked for in ``folder`` and did not find (see the module).

    The audit hook is added to the process once, on first use (audit hooks can
    never be removed); outside a watch it returns at its first test.
    """
    global _hooked
    if not _hooked:
        sys.addaudithook(_hook)
        _hooked = True
    watch = _Watch(folder)
    _WATCHES.append(watch)
    try:
        yield watch.missing
    finally:
        _WATCHES.remove(watch)


def missing_beside(missing: Sequence[str], copy: Path, origin: Path | None, sha256: str,
                   relative: str | None = None) -> str:
    """The paragraph that names the files a replay of ``copy`` lacked beside it, and the two ways to fix it.

    ``origin``: where it was hunted, as the trace records it; None for a trace older than that record, which
    knows it only as ``relative`` to the folder the hunt ran in (``meta["hunted_file"]``), if at all.
    """
    names = list(missing)
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    one = len(names) == 1
    nested = [n for n in names if os.sep in n or "/" in n]
    into = f" (as {copy.parent / nested[0]})" if nested else ""  # a file in a folder beside it: say where it goes
    if origin is None:
        why = "the trace is older than the record of where it was hunted"
        where = "replay it from the folder the hunt ran in" + (f" (the one that holds {relative})" if relative else "")
    elif origin.is_file() and not same_file(origin, sha256):
        why = f"{origin}, where it was hunted, has changed since the hunt"
        where = f"restore {origin} as it was hunted and replay again, or hunt it again"
    else:
        why = f"{origin}, where it was hunted, is {'not the hunted file' if origin.is_file() else 'no longer there'}"
        where = f"replay it where it was hunted ({origin})"
    return (f"the scenario refers to {shown} beside it, which {'is' if one else 'are'} not in this folder "
            f"({copy.parent}); this replay runs the copy saved beside the trace, {copy.name}, because {why}. Copy "
            f"{'it' if one else 'them'} next to {copy}{into}, or {where}")
