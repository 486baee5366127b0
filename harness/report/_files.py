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
