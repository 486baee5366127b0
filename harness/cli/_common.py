"""What every command shares: the program name, one-line errors, counts in words."""

from __future__ import annotations

from typing import Any

from .._terminal import printable

PROG = "python -m harness"

_TARGET_FORMS = "a race name (see 'list'), package.module:function or path/to/file.py:function"


def _caused_by_interrupt(exc: BaseException) -> bool:
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, KeyboardInterrupt):
            return True
        todo += [e.__cause__, e.__context__, *getattr(e, "exceptions", ())]
    return False


def _one_line(exc: BaseException) -> str:
    """An error in one line, with any control character from a trace file escaped (see harness/_terminal.py)."""
    return printable(" ".join(str(exc).split()))


def _registered() -> dict[str, Any]:
    """The registered races, found through their entry points as a user's own package's are."""
    from ..explore import registered_races

    return registered_races()


def _n(count: int, word: str, plural: str | None = None) -> str:
    """``1 deviation``, ``2 deviations``."""
    return f"{count:,} {word if count == 1 else plural or word + 's'}"


def _fmt(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())
