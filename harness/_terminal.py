"""Text from a trace file, or from any model, made safe to print on a terminal.

A trace file is untrusted input, and its labels, messages and parameters are
printed by ``replay`` and ``hunt``. Raw, ``ESC]52;...`` would write the user's
clipboard and ``ESC[2J`` clear the screen. Every C0 and C1 control character
(and DEL) except newline and tab is shown as a Python escape (``\\x1b``);
:func:`markup_safe` also escapes rich markup (``[bold]``) for text that goes
through a rich console with markup on.
"""

from __future__ import annotations

import re
from typing import Any

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: object) -> str:
    """``text`` with every control character but newline and tab escaped, e.g. ``\\x1b[2J``."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def markup_safe(text: object) -> str:
    """:func:`printable`, then rich's own ``escape``: for a rich console with markup on."""
    from rich.markup import escape

    return escape(printable(text))


class QuietPipe:
    """``sys.stdout`` that goes quiet when its reader goes away (``hunt ... | head``).

    A closed pipe stops the command as Ctrl-C does (:meth:`watch_reader`): the
    run in hand ends, what was found is kept and the index written, and the exit
    status is 141, a shell's for a closed pipe. Python's default (``BrokenPipeError`` at the next print, then another at
    exit) made ``hunt | head`` exit 1 with a traceback or with nothing. The file
    descriptor is pointed at ``os.devnull`` so the interpreter's last flush
    cannot fail either (the recipe of Python's ``signal`` documentation, "Note on
    SIGPIPE").
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.closed_by_reader = False

    def write(self, text: str) -> int:
        if not self.closed_by_reader:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.closed_by_reader:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        import os

        self.closed_by_reader = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass

    def watch_reader(self, gone: Any) -> None:
        """Call ``gone()`` the moment the reader of this pipe goes away, from a daemon thread.

        A search prints nothing until it ends, so waiting for the next write made
        ``hunt | head -3`` run the whole hunt after ``head`` had exited. Linux
        reports a pipe whose reader closed as ``POLLERR`` on its write end; the
        thread blocks in ``poll`` (no CPU) and is started only when standard
        output is a pipe or a socket.
        """
        import os
        import select
        import stat
        import threading

        try:
            fd = self._stream.fileno()
            mode = os.fstat(fd).st_mode
        except (OSError, ValueError, AttributeError):
            return
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)) or not hasattr(select, "poll"):
            return

        def watch() -> None:
            poller = select.poll()
            poller.register(fd, select.POLLERR)
            try:
                while not any(ev & (select.POLLERR | select.POLLHUP | select.POLLNVAL) for _, ev in poller.poll()):
                    pass
            except OSError:
                return
            self._drop()
            gone()

        threading.Thread(target=watch, name="stdout reader", daemon=True).start()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...: the stream's own
        return getattr(self._stream, name)
