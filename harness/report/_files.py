"""Writing report files: atomically, into a folder that ignores itself in git."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

#: what ``ensure_report_dir`` writes as ``.gitignore`` (as hypothesis' ``.hypothesis/`` and coverage's ``htmlcov/``)
GITIGNORE = "# Created by race-harness: reports are build output.\n*\n"


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` through a temp file in the same folder and ``os.replace``.

    A reader (a browser refreshing ``index.html``, a CI artifact upload) sees the
    old file or the new one, never half of one; a crash leaves no partial file.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        # mkstemp creates 0600 files; a report is for sharing (a CI artifact, a web server), so it gets
        # the mode an ordinary open() would give it: 0666 less the umask (0644 under the usual 022).
        os.chmod(tmp, 0o666 & ~current_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def current_umask() -> int:
    """The process umask, read without changing it where the OS allows.

    ``os.umask`` can only be read by setting it, which briefly changes it for
    every thread; Linux reports it in ``/proc/self/status``, so that is tried first.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def ensure_report_dir(directory: str | os.PathLike[str]) -> Path:
    """Create ``directory`` if missing and, only then, a ``.gitignore`` holding ``*`` in it.

    A folder that already exists is the user's (a project folder, a CI
    workspace): nothing is written into it but the reports themselves, never a
    ``.gitignore`` that would silently hide the user's files from git. A folder
    the harness creates ignores itself, as hypothesis' ``.hypothesis/`` and
    coverage's ``htmlcov/`` do.
    """
    path = Path(directory)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir()
    except FileExistsError:
        if not path.is_dir():
            raise
        return path
    try:
        with (path / ".gitignore").open("x", encoding="utf-8") as fh:  # "x": never over a file someone put there
            fh.write(GITIGNORE)
    except FileExistsError:
        pass
    return path


# ------------------------------------------------------------------ what the harness owns
#: the folder's list of the files the harness wrote there, with the SHA-256 each had when written
OWNED_FILE = ".race-harness-files"
_OWNED_FORMAT = "race-harness-files"
#: how a page or trace of an older harness (before the list) is known: it carries the harness's own mark
_MARKS = {".html": ('<meta name="generator" content="race-harness',), ".json": ('"format": "race-harness-',)}


def _digest(path: Path) -> str | None:
    import hashlib

    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _owned(directory: Path) -> dict[str, str]:
    import json

    try:
        raw = json.loads((directory / OWNED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    files = raw.get("files") if isinstance(raw, dict) and raw.get("format") == _OWNED_FORMAT else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(k, str) and isinstance(v, str)}


def is_ours(path: str | os.PathLike[str]) -> bool:
    """Whether the harness may replace ``path``: it does not exist, or the harness wrote it and nobody changed it.

    A file is the harness's when the folder's list (:data:`OWNED_FILE`) names
    it with the SHA-256 it still has, or when it carries the mark of a page or
    trace of an older harness (which kept no list). Anything else is the user's:
    their own ``index.html``, a trace they edited, a ``model.py`` that happens
    to share a name with a scenario's copy.
    """
    p = Path(path)
    if not p.exists():
        return True
    if not p.is_file():
        return False
    recorded = _owned(p.parent).get(p.name)
    if recorded is not None:
        return recorded == _digest(p)
    if p.name.startswith(".race-harness"):  # the folder's own bookkeeping (this list, the index's history)
        return True
    marks = _MARKS.get(p.suffix)
    if marks is None:
        return False
    try:
        with p.open(encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return any(m in head for m in marks)


def free_stem(directory: str | os.PathLike[str], stem: str, suffixes: tuple[str, ...]) -> str:
    """``stem``, or ``stem-2``, ``stem-3``...: the first stem whose files (one per suffix) are all the harness's
    to write, so a user's file of the same name is kept and the new one goes beside it."""
    d = Path(directory)
    n = 1
    while True:
        candidate = stem if n == 1 else f"{stem}-{n}"
        if all(is_ours(d / f"{candidate}{s}") for s in suffixes):
            return candidate
        n += 1


def record_written(*paths: str | os.PathLike[str]) -> None:
    """Add ``paths`` (written by the harness just now) to their folder's list, with their SHA-256."""
    import json

    by_dir: dict[Path, list[Path]] = {}
    for p in paths:
        by_dir.setdefault(Path(p).parent, []).append(Path(p))
    for d, files in by_dir.items():
        owned = _owned(d)
        for f in files:
            digest = _digest(f)
            if digest is not None:
                owned[f.name] = digest
        doc = {"format": _OWNED_FORMAT, "version": 1, "files": dict(sorted(owned.items()))}
        atomic_write_text(d / OWNED_FILE, json.dumps(doc, indent=1) + "\n")


def write_owned(path: str | os.PathLike[str], text: str) -> Path:
    """:func:`atomic_write_text` to ``path``, or beside it (``name-2.html``) when ``path`` is not the harness's;
    the file written is recorded as the harness's. Returns where it went."""
    p = Path(path)
    if not is_ours(p):
        p = p.with_name(free_stem(p.parent, p.stem, (p.suffix,)) + p.suffix)
    atomic_write_text(p, text)
    record_written(p)
    return p
