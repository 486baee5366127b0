"""What a session shows while it runs: a line per finished search, or a hunt's rich live table."""

from __future__ import annotations

import re
from typing import Any

import pytest

from ._settings import settings_of


# -------------------------------------------------------------------------- progress
class _Progress:
    """One plain line per finished race search on the controller, through pytest's terminal reporter.

    Shown for findings always and for every search under ``-v``; nothing under
    ``-q``. Writing through the terminal reporter keeps the lines in pytest's
    own output stream, so they never clobber it. A hunt in an interactive
    terminal (neither ``-q`` nor ``-v``) gets :class:`_LiveProgress` instead.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.done = 0

    @classmethod
    def open(cls, config: pytest.Config) -> _Progress | None:
        if config.get_verbosity() < 0:
            return None
        tr = config.pluginmanager.get_plugin("terminalreporter")
        tw = getattr(tr, "_tw", None)
        real = getattr(tw, "_file", None)
        hunting = settings_of(config).hunt_minutes is not None
        if hunting and config.get_verbosity() == 0 and real is not None and _isatty(real):
            return _LiveProgress(config, tw, real)
        return cls(config)

    def advance(self, nodeid: str, payloads: list[dict[str, Any]]) -> None:
        self.done += 1
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:
            return
        for p in payloads:
            if self.config.get_verbosity() > 0 or p.get("counterexample") is not None:
                tr.write_line(f"race-harness: {nodeid}: {p['outcome']}")

    def close(self) -> None:
        pass


def _isatty(f: Any) -> bool:
    try:
        return bool(f.isatty())
    except (AttributeError, ValueError):
        return False


class _LineProxy:
    """Stands in for pytest's terminal file while the live display runs.

    Complete lines go to ``console.print`` (so rich prints them *above* the live
    area); a partial line (pytest's progress dots) is held until its newline,
    so nothing pytest writes is ever drawn over. ``close()`` hands back the rest.
    """

    def __init__(self, console: Any, real: Any) -> None:
        self._console = console
        self._real = real
        self._buf = ""

    def write(self, text: str) -> int:
        from rich.text import Text

        self._buf += text
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            self._console.print(Text.from_ansi(line), soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        pass  # a partial line waits for its newline (see the class docstring)

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return int(self._real.fileno())

    @property
    def encoding(self) -> str:
        return str(getattr(self._real, "encoding", "utf-8"))

    def close(self) -> None:
        if self._buf:
            self._real.write(self._buf)
            self._buf = ""
        self._real.flush()


class _LiveProgress(_Progress):
    """The rich live display of a hunt, on the controller, in an interactive terminal, not ``-q``/``-v``.

    One row per race test (its shards folded together): shards done, runs
    explored, failures. pytest's own output keeps flowing above it through
    :class:`_LineProxy`, so the display never clobbers it; the display is
    transient and the terminal summary prints the findings as usual.
    """

    def __init__(self, config: pytest.Config, tw: Any, real: Any) -> None:
        super().__init__(config)
        from rich.console import Console
        from rich.live import Live

        self._tw = tw
        self._real = real
        self.console = Console(file=real, force_terminal=True)
        self.rows: dict[str, list[int]] = {}  # race test -> [shards done, runs, failures], first-seen order
        self.live = Live(self.render(), console=self.console, transient=True, auto_refresh=False)
        self.live.start()
        self._proxy = _LineProxy(self.console, real)
        tw._file = self._proxy

    def render(self) -> Any:
        from rich.table import Table

        shards = settings_of(self.config).shards
        table = Table(title="race-harness hunt", title_justify="left", expand=False)
        table.add_column("race test")
        table.add_column("shards", justify="right")
        table.add_column("runs explored", justify="right")
        table.add_column("failures", justify="right")
        for name, (done, runs, failures) in self.rows.items():
            style = "bold red" if failures else ""
            table.add_row(name, f"{done}/{shards}", f"{runs:,}", f"[{style}]{failures}[/]" if style else "0")
        return table

    def advance(self, nodeid: str, payloads: list[dict[str, Any]]) -> None:
        self.done += 1
        key = re.sub(r"\[shard\d+-?", "[", nodeid.split("::", 1)[-1]).replace("[]", "")
        row = self.rows.setdefault(key, [0, 0, 0])
        row[0] += 1
        for p in payloads:
            row[1] += int(p["runs"])
            row[2] += 1 if p.get("counterexample") is not None else 0
        self.live.update(self.render(), refresh=True)

    def close(self) -> None:
        self.live.stop()
        self._tw._file = self._real
        self._proxy.close()
