"""What a strategy sees and answers: the :class:`Chooser` protocol and the :class:`Option` it chooses among."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ._plan import Ident


class Chooser(Protocol):
    """Decides each branch of a run; strategies build one per run.

    Optional attributes the world reads: ``wants_identities`` (compute
    :attr:`Option.ident` and call :meth:`schedule` at every step, even without a
    choice, so the chooser sees what ran) and ``wait_until`` (read after
    :meth:`schedule` returned "wait": the latest virtual time the chooser wants
    to skip to; default: the next deadline). Two more for a search that aims
    by what a run did: ``wants_notes`` (record the run's notes, as
    ``run_once(notes=True)`` does) and ``seen(outcome)`` (called with the run's
    outcome when it ends, in :func:`run_once` and :func:`run_batch` alike).
    """

    def schedule(self, options: Sequence[Option], now: float, can_wait: bool) -> int:
        """An index into ``options`` (canonical order: 0 is the canonical action), or
        ``len(options)`` to let virtual time pass (only when ``can_wait``)."""
        ...

    def choose(self, n: int, point: Option) -> int:
        """A data choice in ``range(n)``; 0 is the default."""
        ...

    def fault(self, point: Option) -> bool:
        """Whether the fault point fires; False is the default."""
        ...


class _Canonical:
    """The chooser of a world built without one: the canonical action, no data choice, no fault."""

    def schedule(self, options: Sequence[Option], now: float, can_wait: bool) -> int:
        return 0

    def choose(self, n: int, point: Option) -> int:
        return 0

    def fault(self, point: Option) -> bool:
        return False


class Option:
    """An action (or a fault point, or a data choice) as a strategy sees it.

    ``nominal`` is when it became (or becomes) possible and ``latest`` the end of
    its window: an informer event may be delivered any time in
    ``[nominal, latest]``; an actor's step has ``latest == nominal`` (it can be
    reordered among what is enabled at the same instant, but virtual time does
    not pass for it). ``ident`` is set when the chooser ``wants_identities``.
    """

    __slots__ = ("actor", "ident", "key", "kind", "label", "latest", "nominal")

    def __init__(self, actor: str, label: str, key: str | None, nominal: float = 0.0, latest: float = 0.0) -> None:
        #: "action" for scheduled actions; the fault kind for a fault point; "data" for a data choice
        self.kind = "action"
        self.actor = actor
        self.label = label
        self.key = key
        self.nominal = nominal
        self.latest = latest
        self.ident: Ident | None = None

    def __repr__(self) -> str:
        return f"<Option {self.actor}: {self.label} [{self.nominal:g}, {self.latest:g}]>"
