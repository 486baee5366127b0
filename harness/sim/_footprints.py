"""What did this step read and write: footprints, notes, and which actors share memory.

A step's footprint (:class:`Access` records, from :meth:`_Footprints.touch`)
is kept only when someone asks: a chooser that reduces (the exhaustive
referee tells dependent actions from independent ones by it) or a run that
tells its story (notes, each step's footprint and program order). Memory
sharing (:meth:`_Footprints.share_memory`) declares which actors may share
memory and which processes record theirs key by key. A real operator's own
log lines (Python's ``logging``) become notes of the step that logged them
(:meth:`_Footprints.capture_logging`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import Any

from .._errors import UsageError
from ._state import _RunState
from ._trace import Access, Note


class _Footprints(_RunState):
    """The world's record of what each step read and wrote, and what happened inside it."""

    # ------------------------------------------------------------ footprints
    def share_memory(self, *prefixes: str, recorded: bool = False) -> None:
        """Declare one process: the actors named under these prefixes share memory, and no other actor does.

        A prefix is the first segment of an actor's name (``scheduler`` for
        ``scheduler/informer/Pod``). The exhaustive referee takes two actions of
        different declared processes that touch no common apiserver object (one
        writing it) to be independent, and does not try both orders of them.
        Actors under no declared prefix may share memory with any actor, so a
        model that declares nothing is explored in full. Declare a process only
        when its actors talk to the others through the apiserver alone, once,
        from the scenario: ``world.share_memory("informer", "job-controller")``
        for a controller whose informers were made without its prefix. A wrong
        declaration makes the referee skip orders it should have tried;
        ``Exhaustive(reduce=False)`` tries them all.

        ``recorded=True`` says more: every read and write of the process's
        memory is recorded with :meth:`touch`, by key (the kube layer's garbage
        collector is such a process: its graph, queues and caches all record).
        Then two actions of that process that touch no common key (one writing
        it) commute too, and the story follows its memory key by key. Any other
        process's memory is one resource, read by each of its steps and written
        by each of its handlers and timer callbacks.
        """
        if not prefixes:
            raise UsageError("share_memory() needs at least one actor-name prefix: share_memory('informer', 'ctrl')")
        name = self._processes.get(prefixes[0], prefixes[0])
        for p in prefixes:
            if "/" in p:
                raise UsageError(f"share_memory({p!r}): a prefix is the first segment of an actor name, without '/'")
            old = self._processes.get(p)
            if old is not None and old != name:
                for k, v in list(self._processes.items()):
                    if v == old:
                        self._processes[k] = name
            self._processes[p] = name
        if recorded:
            self._recorded.add(name)

    def process_of(self, actor: str) -> str | None:
        """The declared process an actor belongs to (see :meth:`share_memory`); None: it may share memory with any."""
        return self._processes.get(actor.split("/", 1)[0])

    def recorded(self, process: str | None) -> bool:
        """Whether ``process`` records every access to its memory (``share_memory(..., recorded=True)``)."""
        return process is not None and process in self._recorded

    def memory_of(self, actor: str) -> str | None:
        """The footprint resource of the memory ``actor``'s model code reads and writes unrecorded.

        ``"memory"`` for an actor of no declared process (it may share memory
        with any), ``"memory: <process>"`` for a declared one, None for a
        process that records its memory key by key.
        """
        p = self._processes.get(actor.split("/", 1)[0])
        if p is None:
            return "memory"
        return None if p in self._recorded else f"memory: {p}"

    @property
    def footprinting(self) -> bool:
        """Whether this step's reads and writes are recorded (a reducing referee's run, or a told run).

        Components test it before they build a resource's name or what it
        saw, so a search's run pays one attribute read per access.
        """
        return self._fp is not None

    def touch(self, *resources: str, write: bool = False, said: str = "", version: int | None = None,
              decides: bool = True) -> None:
        """The current step read (or, ``write=True``, wrote) ``resources``: one entry each in its footprint.

        The footprint (:class:`Access`) is one record per step that both of its
        readers use: the exhaustive referee tells dependent actions from
        independent ones by it, and the story of a counterexample walks back
        from the violated oracle's reads to the writes they read from. The kube
        layer calls it for every apiserver object and list a request reads or
        writes, every informer cache entry a delivery writes and a lister reads,
        every work-queue item and expectation; a model calls it for its own
        memory (``world.touch("mem:scheduler jobs/default/j1", said="2 tasks")``).
        ``said`` is what the access saw or did, as the story shows it;
        ``version`` makes a read of an immutable revision (a watch event);
        ``decides=False`` an access that orders actions but decides nothing (a
        FIFO's order). A run that records nothing pays one test; called from
        an oracle, the access is one of the oracle's reads.
        """
        fp = self._fp
        if fp is not None:
            for r in resources:
                fp.append(Access(r, write, said, version, decides))

    # ----------------------------------------------------------------- notes
    @property
    def noting(self) -> bool:
        """Whether this run records notes (a counterexample's replay does; a search's runs do not).

        Components test it before they build a note's text, so a search pays
        one attribute read per place that could note something.
        """
        return self._notes is not None

    def note(self, text: str, *, kind: str = "log", key: str | None = None, keys: Iterable[str] = (), **fields: Any) -> None:
        """Write ``text`` into the trace beside the current step: a log line, not a scheduling point.

        ``world.note("Expectation unsatisfied overtime", key="Job default/j1", waited=305.0)``
        is the line a maintainer greps for in the upstream logs. It adds no
        choice and no step, so a run with notes takes exactly the same path as
        one without (the digest of its choices and trace are unchanged); the
        story of a counterexample and the report show it. ``key``/``keys`` name
        the objects ("Kind ns/name") the line is about, which is how the story
        knows it belongs to the violation's causal slice; ``kind`` says what
        made it ("log" for a model's own lines); other keyword ``fields`` are
        kept as structured data (numbers, strings, booleans, lists of them).
        A search's runs record no notes: the counterexample it finds is re-run
        once with notes to tell its story.
        """
        notes = self._notes
        if notes is None:
            return
        refs = tuple(keys) if key is None else (key, *keys)
        notes.append(Note(self._step, self.now, self._who(), kind, text, refs, tuple(fields.items())))

    def capture_logging(self, *loggers: str, level: int = logging.INFO) -> None:
        """For the rest of the run, what these loggers emit from inside a step is a note of that step, not output.

        A real operator logs with Python's ``logging``
        (``logging.getLogger("app-operator").info("App %s has %d of %d secrets", ...)``),
        and the line it logs before its decisive read is the one a maintainer
        looks for: ``world.capture_logging("app-operator")`` turns every record
        of that logger (and of its children) at ``level`` or above into a note
        (``kind="log"``, the text ``"app-operator: INFO: App db has 0 of 1
        secrets"``, ``key``/``keys`` from the record's ``extra`` ``k8s_key`` /
        ``k8s_keys``), which the story and the report show. No names: the root
        logger, and so every logger that propagates to it.

        The records are consumed, never printed: a search runs the operator
        thousands of times, and its warnings would flood the terminal. For the
        run's duration the named loggers have the harness's handler alone,
        ``propagate=False`` and ``level``; the run puts their handlers,
        propagation and level back as it found them when it ends, however it
        ends. The level is the same whether the run is told or not (an operator
        that asks ``isEnabledFor`` takes the same path either way); a search's
        run formats nothing and notes nothing. Records logged outside a step
        (another thread, after the run) are swallowed without a note: a note
        belongs to a step, and the text holds no time, thread or process id,
        so a told run says the same every time.
        """
        self._log_thread = threading.get_ident()
        handler = self._log_handler
        if handler is None:
            handler = self._log_handler = _NoteHandler(self)
        for name in loggers or ("",):
            logger = logging.getLogger(name or None)
            if not any(logger is saved[0] for saved in self._log_saved):
                self._log_saved.append((logger, logger.handlers, logger.propagate, logger.level))
                logger.handlers = [handler]
                logger.propagate = False
            logger.setLevel(level)

    def _release_logging(self) -> None:
        """Give every captured logger back its handlers, propagation and level (the run ends, however it ends)."""
        while self._log_saved:
            logger, handlers, propagate, level = self._log_saved.pop()
            logger.handlers = handlers
            logger.propagate = propagate
            logger.setLevel(level)

    def _log_note(self, record: logging.LogRecord) -> None:
        """A captured record logged inside a step, in a told run: the step's note (see :meth:`capture_logging`)."""
        if threading.get_ident() != self._log_thread:
            from ._lockstep import in_lockstep_thread

            if not in_lockstep_thread():  # (a lockstep thread runs while the world waits for it: its step's note)
                return
        if self._me() is None and self._current_timer is None:
            return  # between steps: the controller's own code, not an actor's
        text = f"{record.name}: {record.levelname}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})"
        extra = record.__dict__
        key = extra.get("k8s_key")
        keys = extra.get("k8s_keys") or ()
        self.note(text, kind="log", key=key if isinstance(key, str) else None,
                  keys=(keys,) if isinstance(keys, str) else tuple(str(k) for k in keys),
                  logger=record.name, level=record.levelname)

    def observed(self, *refs: str, write: bool = False) -> None:
        """The older name of :meth:`touch` for objects ("Kind ns/name"): the same record."""
        self.touch(*refs, write=write)

    def _flush_footprint(self, last: bool = False) -> None:
        """Hand the step's footprint to the reducing chooser and to the told run's record; start the next one."""
        fp = self._fp
        if fp is None or not (fp or last):
            return
        if self._fp_chooser:
            self._chooser.footprint(  # type: ignore[attr-defined]
                tuple((a[0], a[1]) for a in fp if a[1] or a[3] is None), self.process_of, self.recorded)
        if fp:
            if self._footprints is not None:
                self._footprints.setdefault(self._fp_step, []).extend(fp)
            fp.clear()

    def _tell(self) -> None:
        """Record this run told: its notes, each step's footprint and program order (a story, a search member
        that reads the run's notes). One place, so every way of running a world records the same."""
        self._notes = []
        self._footprints = {}
        self._continues = {}
        if self._fp is None:
            self._fp = []


class _NoteHandler(logging.Handler):
    """The handler :meth:`_Footprints.capture_logging` puts on the loggers it captures: each record a note, or nothing.

    ``handle`` is overridden whole: a search's run (no notes) returns at the
    first test, with no filter, no lock and no formatting.
    """

    def __init__(self, world: _Footprints) -> None:
        super().__init__()
        self._world = world

    def handle(self, record: logging.LogRecord) -> bool:
        if self._world._notes is not None:
            self._world._log_note(record)
        return True

    def emit(self, record: logging.LogRecord) -> None:
        self.handle(record)


def _harness_code(fn: Callable[..., object]) -> bool:
    """Whether ``fn`` is the harness's own code (a kube structure's timer), which records what it touches."""
    return str(getattr(fn, "__module__", "") or "").startswith("harness.")
