"""One run of a scenario: the :class:`World`, its actors and oracles, and the deterministic scheduler.

A world keeps one of two clocks. Under virtual time (below) the harness decides
every switch; under the real clock (``_realtime.py``) Trio does, and the world's
yield points, timers and end go through that module's driver. Everything a model
calls (actors, primitives, oracles, views, notes) is this one class either way.
Around it: ``_choice`` (what a strategy sees), ``_time`` (whole nanoseconds and
Trio's view of virtual time), ``_outcome`` (limits, violations, results) and
``_primitives`` (``Event``, ``Queue``, ``Lock``).

How a run is driven under virtual time
--------------------------------------
Every actor is a Trio task spawned by the harness. An actor runs until it reaches
a *yield point* (``world.step``, ``world.sleep``, a wait on a harness ``Event``,
``Queue`` or ``Lock``, or any kube call built on those). There it registers the
action it is about to take and calls :meth:`World._dispatch`, which checks the
oracles, computes the *enabled set*, asks the chooser for an index into it and
hands control **directly** to the chosen actor (``trio.lowlevel.reschedule``).
If the chosen actor is the one that yielded, it simply continues: no Trio switch
at all. Rejected alternative: a controller task that every actor bounces
through costs two Trio switches per step instead of at most one.

The controller task only moves virtual time (when nothing is enabled) and ends
the run. When no Trio deadline lies at or before the target, it sets the clock
(most jumps: the Trio round trip was over a quarter of some runs). Otherwise time
moves by ``trio.sleep_until`` under :class:`VirtualClock`, which
jumps straight to the earliest Trio deadline *only while the controller is
advancing time*; that way ``trio.move_on_after``/``fail_after`` inside an actor
expire in virtual time, while a raw ``trio.sleep`` inside an actor (a block
outside the harness) does not silently move time: the clock refuses to jump,
Trio goes idle, and a ``wait_all_tasks_blocked`` watcher turns it into the
"blocked outside the harness" verdict. (``MockClock(autojump_threshold=0)`` was
rejected: it busy-spins when everything is blocked without a deadline.)

Canonical order: the enabled set is sorted oldest-waiting first, ties by
registration order; a choice is an absolute index into it, so choice 0 is the
canonical action and any other choice is a *deviation*. A decision with one
enabled action draws nothing.
"""

from __future__ import annotations

import heapq
import linecache
import math
import os
import sysconfig
import warnings
from collections.abc import Awaitable, Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import outcome
import trio
import trio.lowlevel as tl
import trio.testing

from .._errors import UsageError
from ._choice import Chooser, Option, _Canonical
from ._misuse import ending, misuse
from ._oracles import first_broken_invariant, first_exceeded_bound, holds, where
from ._outcome import Limits, RunOutcome, Violation
from ._plan import Ident, identity_label
from ._primitives import Event, Lock, Queue
from ._primitives import Queue as _Queue  # in the class body of World, "Queue" is its method
from ._time import NEVER, TICKS_PER_SECOND, VirtualClock, ceil_ns, later, to_ns, to_seconds
from ._trace import Access, Note, Record, Trace, _record
from ._watchdog import NoYield, Watch, arm, disarm

if TYPE_CHECKING:
    from ._realtime import RealClock, RealTime

_CANCEL = object()  # resume value meaning "a cancel scope around this wait fired"
#: the scenario's own actor: the test that builds the cluster and plays the user (no fault points)
MAIN_ACTOR = "main"

_NOT_THE_MODEL = tuple(
    str(Path(p).resolve()) + os.sep
    for p in (Path(__file__).parent.parent, Path(trio.__file__).parent, sysconfig.get_paths()["stdlib"])
)


def waiting_at(task: tl.Task | None) -> str | None:
    """``model.py:88 in scenario (await done.wait(...))``: the innermost line of the model's own code a task awaits on.

    Walks the task's chain of awaited coroutines (``cr_await``) and keeps the
    last frame outside the harness, Trio and the standard library, so a wait
    that never ends is named where its author wrote it, not in ``_primitives``.
    """
    if task is None:
        return None
    coro: Any = task.coro
    found = None
    for _ in range(200):  # a chain of awaits, never a cycle; bounded all the same
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        path = frame.f_code.co_filename
        if not str(Path(path).resolve()).startswith(_NOT_THE_MODEL):
            line = linecache.getline(path, frame.f_lineno).strip()
            found = f"{Path(path).name}:{frame.f_lineno} in {frame.f_code.co_name}" + (f" ({line[:80]})" if line else "")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return found


class _Actor:
    __slots__ = (
        "abort_fn",
        "cancel_pending",
        "daemon",
        "done",
        "fresh",
        "go",
        "guard",
        "idle",
        "index",
        "key",
        "label",
        "latest_ns",
        "name",
        "option",
        "ready_ns",
        "rv",
        "seq",
        "since_ns",
        "task",
        "task_parked",
        "waiting",
    )

    def __init__(self, name: str, index: int, daemon: bool) -> None:
        self.name = name
        self.index = index
        self.daemon = daemon
        self.task: tl.Task | None = None
        self.label = "start"
        self.key: str | None = None
        self.rv: int | None = None
        self.guard: Callable[[], bool] | None = None
        self.ready_ns = 0  # when its action becomes enabled (a sleep's end), in nanoseconds
        self.since_ns = 0  # when it became enabled: its place in the canonical order
        self.latest_ns = 0  # the end of its window: it may be postponed until then
        self.seq = 0
        self.waiting = False  # registered an action and waits to be chosen
        self.task_parked = False  # physically inside wait_task_rescheduled
        self.go = False  # chosen; continue at the next check
        self.cancel_pending = False
        self.done = False
        self.idle = False  # a daemon's "waiting for work" wait (not a deadlock)
        self.fresh = False  # it waits for work or for time: what it does next starts afresh (a story's program order)
        self.option = Option(name, "start", None)
        self.abort_fn: Callable[[Any], tl.Abort] = lambda _rc: tl.Abort.SUCCEEDED


class TimerHandle:
    """A pending ``call_later``/``call_at``; ``cancel()`` removes it before it fires.

    It fires at ``when`` (its nominal time, in seconds) in the canonical run; a
    strategy may let it wait until ``latest`` (the end of its window). The world
    keeps both in whole nanoseconds (``when_ns``, ``latest_ns``).
    """

    __slots__ = ("actor", "cancelled", "fired", "fn", "key", "label", "latest_ns", "option", "rv", "scope", "seq",
                 "when_ns")

    def __init__(
        self,
        when_ns: int,
        seq: int,
        fn: Callable[[], object],
        label: str,
        actor: str,
        key: str | None,
        rv: int | None = None,
        latest_ns: int | None = None,
    ) -> None:
        self.when_ns = when_ns
        self.latest_ns = when_ns if latest_ns is None or latest_ns < when_ns else latest_ns
        self.seq = seq
        self.fn = fn
        self.label = label
        self.actor = actor
        self.key = key
        self.rv = rv
        self.cancelled = False
        self.fired = False
        self.option = Option(actor, label, key, to_seconds(when_ns), to_seconds(self.latest_ns))
        #: the real clock's sleeping task (None under virtual time, where the scheduler holds the timer)
        self.scope: trio.CancelScope | None = None

    def cancel(self) -> None:
        self.cancelled = True
        if self.scope is not None:
            self.scope.cancel()

    @property
    def when(self) -> float:
        """Its nominal time, in virtual seconds."""
        return to_seconds(self.when_ns)

    @property
    def latest(self) -> float:
        """The end of its window, in virtual seconds."""
        return to_seconds(self.latest_ns)

    def __lt__(self, other: TimerHandle) -> bool:
        return (self.when_ns, self.seq) < (other.when_ns, other.seq)


class _Eventually:
    """An ``eventually`` oracle not yet met: ``fn`` must hold by ``deadline_ns``."""

    __slots__ = ("deadline_ns", "fn", "name", "scope", "since_ns", "why")

    def __init__(self, name: str, fn: Callable[[], object], since_ns: int, deadline_ns: int) -> None:
        self.name = name
        self.fn = fn
        self.since_ns = since_ns
        self.deadline_ns = deadline_ns
        #: the last explanation ``fn`` gave for not holding (the violation's "because")
        self.why: str | None = None
        #: the real clock's watchdog (None under virtual time, where the scheduler watches the deadline)
        self.scope: trio.CancelScope | None = None

    @property
    def deadline(self) -> float:
        return to_seconds(self.deadline_ns)

    def because(self) -> str:
        """': <the last explanation>' when ``fn`` returned one, else ''."""
        why = self.why
        return f": {why}" if why and why != f"'{self.name}' does not hold" else ""

    def missed(self, extra: str = "", *, because: bool = True) -> str:
        """The violation's message when the deadline passed with ``fn`` still not holding."""
        since = self.since_ns / TICKS_PER_SECOND
        return (f"'{self.name}' did not happen within {self.deadline - since:g} virtual seconds "
                f"(expected by t={self.deadline:g}, registered at t={since:g}{extra}){self.because() if because else ''}")


class World:
    """One run of a scenario: actors, time, oracles and the trace.

    Scenarios receive the world as their first argument. Everything an actor
    waits on goes through the world, and the world runs under one of two clocks:

    * **virtual time** (the default, ``clock=None``): the deterministic scheduler
      decides every switch and asks ``chooser`` at every branch, time moves only
      when the scheduler moves it, and the same choices give the same run;
    * **the real clock** (``clock=RealClock(...)``): Trio's own scheduler decides
      who runs, sleeps and timers are real sleeps scaled by ``time_scale``, no
      fault is injected: what a plain test of the same model sees (``python -m
      harness live``).

    The API is the same under both (the same actors, primitives, oracles,
    views and notes); only who decides and what a second is differ.
    """

    #: move time by setting the clock when no Trio deadline intervenes (False: always through
    #: ``trio.sleep_until``, the older and slower path; the bench compares the two, tests pin that
    #: both give the same traces)
    _direct_time = True

    def __init__(
        self,
        chooser: Chooser | None = None,
        *,
        limits: Limits = Limits(),
        params: dict[str, Any] | None = None,
        observer: Callable[[World, Record | None], None] | None = None,
        clock: RealClock | None = None,
    ) -> None:
        self.params: dict[str, Any] = dict(params or {})
        self.limits = limits
        self._horizon = math.inf
        self._horizon_ns = NEVER
        self._max_ns = to_ns(limits.max_time)
        if chooser is None:
            chooser = _Canonical()
        self._chooser = chooser
        #: called before each dispatch with the record of the step that just completed
        #: (None before the first); reports use it to snapshot model state per step
        self._observer = observer
        self._wants_idents = bool(getattr(chooser, "wants_identities", False))
        self._occurrences: dict[tuple[str, str, str | None], int] = {}
        self._choices: list[int] = []
        self._fault_points: dict[str, int] = {}
        #: fault kinds this run may inject; None = each component's own default (a real-clock run: none)
        self.fault_kinds: frozenset[str] | None = None if clock is None else frozenset()
        self._wait_target = NEVER
        self._current_timer: TimerHandle | None = None
        #: the widest window any action of this run had (verdicts state the explored space)
        self.max_window = 0.0
        #: the clock: whole nanoseconds since the run started (``now`` shows it in seconds)
        self._now_ns = 0
        self._seq = 0
        self._actors: list[_Actor] = []
        self._by_name: dict[str, _Actor] = {}
        self._timers: list[TimerHandle] = []  # heap of future timers
        self._due: list[TimerHandle] = []  # timers whose time has come, in (when, seq) order
        # raw tuples in Record field order, deviation words unformatted (see _trace._record); a Trace
        # builds Records only when someone reads them (hot path: random and PCT read only counts)
        self._records: list[tuple[Any, ...]] = []
        self._step = 0
        self._instant = (0, 0)  # (virtual time, the first step taken at it): livelock detection
        self._violation: Violation | None = None
        self._interrupted = False
        self._reraise: BaseException | None = None
        #: the watchdog's watch over this run (None: off, or a real-clock run)
        self._watch: Watch | None = None
        self._current: _Actor | None = None
        self._controller: tl.Task | None = None
        self._controller_parked = False
        self._advancing = False
        self._advance_scope: trio.CancelScope | None = None
        self._stopping = False
        self._ended = False
        self._nursery: trio.Nursery | None = None
        self._invariants: list[tuple[str, Callable[[], object]]] = []
        self._eventually: list[_Eventually] = []
        self._bounds: list[tuple[str, Callable[[], float], float]] = []
        self._at_end: list[tuple[str, Callable[[], object]]] = []
        self.peaks: dict[str, float] = {}
        #: named views of the model's own memory (``expose``), for reports and violations
        self.views: dict[str, Callable[[], object]] = {}
        #: free-form per-run state for models (e.g. counters their oracles read)
        self.state: dict[str, Any] = {}
        #: actor-name prefix -> process, from share_memory()
        self._processes: dict[str, str] = {}
        #: processes that record every access to their memory (share_memory(..., recorded=True))
        self._recorded: set[str] = set()
        # The current step's footprint: what it read and wrote (Access tuples), kept only when someone asks: a
        # chooser that reduces (the exhaustive referee) or a run that tells its story. None else, and touch()
        # is one test. During an oracle check it points at the oracle's reads (or is None: a referee's run).
        self._fp_chooser = bool(getattr(chooser, "wants_footprints", False))
        self._fp: list[Access] | None = [] if self._fp_chooser else None
        #: the run or timer step the accesses being made belong to (a fault inside it has a step of its own)
        self._fp_step = 0
        # notes (what happened inside steps) and each step's footprint, for a run that tells its
        # story (run_once(notes=True)); None in a search's runs, where note() and touch() are one test
        self._notes: list[Note] | None = None
        self._footprints: dict[int, list[Access]] | None = None
        self._continues: dict[int, int] | None = None
        self._last_step_of: dict[str, int] = {}
        self._oracle_reads: list[Access] | None = None
        self._last_oracle_reads: tuple[Access, ...] = ()
        self._eventually_reads: dict[str, tuple[Access, ...]] = {}
        #: the real clock's driver, or None: the deterministic scheduler with virtual time drives the run
        self._real: RealTime | None = None
        #: called when a primitive's state changes (an Event set, a Queue put, a Lock released): the real
        #: clock's waiters re-check their guards; the deterministic scheduler re-checks them at every step
        self._wake: Callable[[], None] | None = None
        if clock is not None:
            from ._realtime import RealTime

            self._real = RealTime(self, clock)
            self._wake = self._real.wake

    @property
    def clock(self) -> RealClock | None:
        """The real clock this run keeps (:class:`RealClock`), or None: virtual time under the harness's scheduler."""
        return self._real.clock if self._real is not None else None

    @property
    def horizon(self) -> float:
        """Virtual seconds at which a periodic scenario ends normally (its ``at_end`` checks run).

        A scenario whose controllers resync or poll for ever never settles; set
        ``world.horizon = 600`` in it so a run ends at t=600 instead of as a
        runaway. With the real clock it is ``horizon * time_scale`` real seconds.
        """
        return self._horizon

    @horizon.setter
    def horizon(self, value: float) -> None:
        self._horizon = value
        self._horizon_ns = to_ns(value)
        if self._real is not None:
            self._real.horizon_moved()

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

    # ------------------------------------------------------------------ time
    @property
    def now(self) -> float:
        """Virtual seconds since the run started (with the real clock: real seconds elapsed / ``time_scale``)."""
        return self._now_ns / TICKS_PER_SECOND if self._real is None else self._real.now()

    # ---------------------------------------------------------------- actors
    def spawn(self, name: str, fn: Callable[..., Awaitable[object]], *args: Any, daemon: bool = False) -> str:
        """Start ``fn(*args)`` as an actor; its first step is itself a scheduled action.

        ``daemon=True`` marks loops that may wait forever for work (informers,
        workers); a run may end while they wait. Names must be unique.
        """
        if self._nursery is None:
            raise RuntimeError("World.spawn() is only available while the world runs")
        base, n = name, 1
        while name in self._by_name:
            n += 1
            name = f"{base}#{n}"
        actor = _Actor(name, len(self._actors), daemon)
        self._actors.append(actor)
        self._by_name[name] = actor
        if self._real is None:
            actor.abort_fn = lambda _rc: self._abort(actor)
            self._register(actor, f"start {name}", None, None, None, self._now_ns)
        self._nursery.start_soon(self._run_actor, actor, fn, args, name=name)
        return name

    async def _run_actor(self, actor: _Actor, fn: Callable[..., Awaitable[object]], args: tuple[Any, ...]) -> None:
        actor.task = tl.current_task()
        real = self._real
        try:
            if real is None:
                await self._wait_turn(actor)
            else:
                real.started(actor)
            await fn(*args)
            if real is not None and not self._stopping:
                self._check_oracles()  # what the actor did after its last yield point
        except trio.Cancelled:
            if not self._stopping:
                msg = f"actor '{actor.name}' was cancelled outside any cancel scope it opened"
                self._fail("actor-raised", actor.name, msg, actor)
            raise
        except AssertionError as exc:
            at = where(exc)
            msg = f"assertion failed in actor '{actor.name}' at {at}: {exc}"
            self._fail("oracle", f"assertion in {actor.name}", msg, actor)
        except Exception as raised:
            err = ending(raised)  # a task group's exception group: the exception that ended it
            words = misuse(err, actor.name)
            if words is not None:  # the harness misused: the model's error at its line, never a finding
                self._fail("misuse", f"misuse in {actor.name}", words, actor)
            elif isinstance(err, AssertionError):
                self._fail("oracle", f"assertion in {actor.name}",
                           f"assertion failed in actor '{actor.name}' at {where(err)}: {err}", actor)
            else:
                self._fail(
                    "actor-raised",
                    f"{type(err).__name__} in {actor.name}",
                    f"actor '{actor.name}' raised {type(err).__name__}: {err} (at {where(err)}). "
                    "Fix the model, or catch the error where the upstream code does.",
                    actor,
                )
        except NoYield as exc:  # the watchdog: this actor ran past its bound without a yield point
            self._no_yield(actor.name, where(exc), actor)
        except BaseException as exc:
            if real is not None:
                raise  # KeyboardInterrupt: the real-clock driver ends the run
            # KeyboardInterrupt, SystemExit, or a control-flow exception of the
            # code driving us (Hypothesis' StopTest): end the run cleanly, then
            # re-raise it from run_once() outside Trio.
            self._reraise = exc
            self._interrupted = isinstance(exc, KeyboardInterrupt)
            self._fail(
                "interrupted",
                type(exc).__name__,
                f"{type(exc).__name__} inside actor '{actor.name}' at step {self._step}; the run stopped there. "
                "Results found before it are kept; re-run with the same seed to continue.",
                actor,
            )
        finally:
            actor.done = True
            actor.waiting = False
            if real is not None:
                real.ended(actor)
        if not self._stopping and real is None:
            try:
                self._handoff(actor)
            except BaseException as exc:  # the chooser's own control flow (e.g. StopTest)
                self._reraise = exc
                self._fail("interrupted", type(exc).__name__, f"{type(exc).__name__} while scheduling", actor)
                self._wake_controller()

    def _register(
        self,
        actor: _Actor,
        label: str,
        key: str | None,
        rv: int | None,
        guard: Callable[[], bool] | None,
        ready_ns: int,
        idle: bool = False,
        window: float = 0.0,
        keep_order: bool = False,
        fresh: bool = False,
    ) -> None:
        if keep_order:
            # The continuation of the action just taken (an API response): canonically it comes next,
            # so it keeps the place in the canonical order of the action it continues.
            self._register_keep(actor, label, key, rv, window)
            return
        self._seq += 1
        actor.label = label
        actor.key = key
        actor.rv = rv
        actor.guard = guard
        actor.ready_ns = ready_ns
        since = actor.since_ns = self._now_ns if ready_ns <= self._now_ns else ready_ns
        latest = actor.latest_ns = later(since, window)
        actor.seq = self._seq
        actor.waiting = True
        actor.idle = idle
        actor.fresh = idle or fresh
        opt = actor.option = Option(actor.name, label, key, since / TICKS_PER_SECOND,
                                    latest / TICKS_PER_SECOND if latest < NEVER else math.inf)
        if window > self.max_window:
            self.max_window = window
        if self._wants_idents:
            opt.ident = self._ident(actor.name, label, key)

    def _register_keep(self, actor: _Actor, label: str, key: str | None, rv: int | None, window: float) -> None:
        actor.label = label
        actor.key = key
        actor.rv = rv
        actor.guard = None
        now = actor.ready_ns = self._now_ns
        latest = actor.latest_ns = later(now, window)
        actor.waiting = True
        actor.idle = False
        actor.fresh = False
        opt = actor.option = Option(actor.name, label, key, now / TICKS_PER_SECOND,
                                    latest / TICKS_PER_SECOND if latest < NEVER else math.inf)
        if window > self.max_window:
            self.max_window = window
        if self._wants_idents:
            opt.ident = self._ident(actor.name, label, key)

    def _ident(self, actor: str, label: str, key: str | None) -> Ident:
        triple = (actor, identity_label(label), key)
        n = self._occurrences.get(triple, 0) + 1
        self._occurrences[triple] = n
        return Ident(triple[0], triple[1], key, n)

    async def _yield(
        self,
        label: str,
        key: str | None = None,
        rv: int | None = None,
        guard: Callable[[], bool] | None = None,
        ready_ns: int | None = None,
        idle: bool = False,
        window: float = 0.0,
        keep_order: bool = False,
        fresh: bool = False,
    ) -> None:
        if self._real is not None:
            await self._real.wait(label, key, rv, guard, ready_ns, idle)
            return
        actor = self._current
        if actor is None or self._nursery is None or actor.task is not tl.current_task():
            from .._errors import NotInSimulation

            raise NotInSimulation(
                f"'{label}' was awaited outside a harness actor. Await harness primitives only from "
                "code spawned with world.spawn() or from the scenario function itself."
            )
        self._register(actor, label, key, rv, guard, self._now_ns if ready_ns is None else ready_ns, idle, window,
                       keep_order, fresh)
        self._handoff(actor)
        if actor.go:  # chosen again at once: its turn, without a Trio switch
            actor.go = False
            return
        await self._wait_turn(actor)

    async def _wait_turn(self, actor: _Actor) -> None:
        while True:
            if not actor.go:
                actor.task_parked = True
                value = await tl.wait_task_rescheduled(actor.abort_fn)
            else:
                value = None
            actor.go = False
            if value is _CANCEL:
                # A cancel scope around this wait fired: deliver it at a checkpoint.
                await tl.checkpoint()
                # Not cancelled after all (scope left); wait again for our turn.
                self._register(actor, actor.label, actor.key, actor.rv, actor.guard, self._now_ns, actor.idle,
                               fresh=actor.fresh)
                self._handoff(actor)
                continue
            return

    def _abort(self, actor: _Actor) -> tl.Abort:
        if self._stopping or (self._nursery is not None and self._nursery.cancel_scope.cancel_called):
            actor.task_parked = False
            actor.waiting = False
            return tl.Abort.SUCCEEDED
        # Keep control: the cancellation becomes an enabled action of its own.
        actor.cancel_pending = True
        if self._advancing and self._advance_scope is not None:
            self._advance_scope.cancel()
        return tl.Abort.FAILED

    # -------------------------------------------------------------- dispatch
    def _handoff(self, current: _Actor | None) -> None:
        """Pick the next action and resume it; called by the actor that yields."""
        chosen = self._dispatch()
        if chosen is None:
            self._wake_controller()
        else:
            self._resume(chosen)

    def _resume(self, actor: _Actor) -> None:
        actor.waiting = False
        self._current = actor
        value: object = None
        if actor.cancel_pending:
            actor.cancel_pending = False
            value = _CANCEL
        if actor.task_parked:
            actor.task_parked = False
            assert actor.task is not None
            tl.reschedule(actor.task, outcome.Value(value))
        else:
            actor.go = True

    def _wake_controller(self) -> None:
        if self._controller_parked and self._controller is not None:
            self._controller_parked = False
            tl.reschedule(self._controller)

    def _enabled(self) -> list[tuple[int, int, object]]:
        now = self._now_ns
        out: list[tuple[int, int, object]] = []
        for a in self._actors:
            if not a.waiting:
                continue
            if a.cancel_pending or (a.ready_ns <= now and (a.guard is None or a.guard())):
                out.append((a.since_ns, a.seq, a))
        timers = self._timers
        while timers and (timers[0].cancelled or timers[0].when_ns <= now):
            t = heapq.heappop(timers)
            if not t.cancelled:
                self._due.append(t)
        if self._due:
            self._due = [t for t in self._due if not t.cancelled]
            for t in self._due:
                out.append((t.when_ns, t.seq, t))
        if len(out) > 1:
            out.sort()  # (since, seq) is unique: the target is never compared
        return out

    def _dispatch(self) -> _Actor | None:
        """Run due timers and choose the next actor; None means 'controller, move time'."""
        chooser = self._chooser
        while True:
            if self._fp:
                self._flush_footprint()
            if self._observer is not None:
                self._observer(self, _record(self._records[-1]) if self._records else None)
            if self._violation is not None or self._ended:
                return None
            if self._invariants or self._eventually or self._bounds:
                self._check_oracles()
                if self._violation is not None:
                    return None
            enabled = self._enabled()
            if not enabled:
                return None
            n = len(enabled)
            now_ns = self._now_ns
            now = now_ns / TICKS_PER_SECOND
            can_wait = True
            for e in enabled:
                if e[2].latest_ns <= now_ns:  # type: ignore[attr-defined]
                    can_wait = False
                    break
            if n == 1 and not can_wait and not self._wants_idents:
                idx = 0
            else:
                options = [e[2].option for e in enabled]  # type: ignore[attr-defined]
                idx = chooser.schedule(options, now, can_wait)
                if n > 1 or can_wait:
                    self._choices.append(idx)
                if idx == n and can_wait:
                    self._step += 1
                    self._wait_target = ceil_ns(getattr(chooser, "wait_until", math.inf))
                    held = tuple(e[2].option for e in enabled[:3])  # type: ignore[attr-defined]
                    self._records.append(
                        (self._step, now, "scheduler", (held, n > 3), None, None, idx, n + 1, "wait", held[0])
                    )
                    return None
                if not 0 <= idx < n:
                    idx %= n
            target = enabled[idx][2]
            self._step += 1
            if now_ns != self._instant[0]:
                self._instant = (now_ns, self._step)
            elif self._step - self._instant[1] >= self.limits.max_steps_per_instant:
                self._fail(
                    "livelock",
                    "livelock",
                    f"at t={now:.9g}, {self._step - self._instant[1]:,} steps without virtual time passing; "
                    f"looping: {self._looping()}. Something re-triggers itself at once (a requeue after "
                    "a duration that rounds to nothing, two writers undoing each other): fix the loop, or raise "
                    "Limits(max_steps_per_instant=...) if it is meant to settle.",
                    None,
                )
                return None
            if self._step > self.limits.max_steps:
                self._fail(
                    "runaway",
                    "step limit",
                    f"the run took more than {self.limits.max_steps:,} steps without settling (t={now:.3f}); "
                    f"looping: {self._looping()}. If the scenario is periodic, set world.horizon (the virtual time "
                    "at which a run ends and its at_end checks run); otherwise fix the loop, or raise "
                    "Limits(max_steps=...).",
                    None,
                )
                return None
            instead = enabled[0][2].option if idx else None  # type: ignore[attr-defined]
            size = n + 1 if can_wait else n
            self._fp_step = self._step
            if isinstance(target, TimerHandle):
                self._records.append(
                    (self._step, now, target.actor, target.label, target.key, target.rv, idx, size, "timer", instead)
                )
                if self._continues is not None and not _harness_code(target.fn):
                    mem = self.memory_of(target.actor)  # a model's callback: it reads and writes its memory
                    if mem is not None and self._fp is not None:
                        self._fp.append(Access(mem))
                        self._fp.append(Access(mem, True, f"{target.actor}: {target.label}"))
                self._fire(target)
                continue
            actor: _Actor = target  # type: ignore[assignment]
            label = f"deadline expired during '{actor.label}'" if actor.cancel_pending else actor.label
            self._records.append((self._step, now, actor.name, label, actor.key, actor.rv, idx, size, "run", instead))
            if self._continues is not None:  # program order, for a story: a step continues what its actor did
                prev = self._last_step_of.get(actor.name)
                if prev is not None and not actor.fresh:
                    self._continues[self._step] = prev
                self._last_step_of[actor.name] = self._step
                mem = self.memory_of(actor.name)
                if mem is not None and self._fp is not None:
                    self._fp.append(Access(mem))  # what it does may come from what its process remembers
            return actor

    def _looping(self) -> str:
        """The actors of the last 200 steps, busiest first, with their most frequent action: what loops."""
        counts: dict[str, dict[str, int]] = {}
        for rec in self._records[-200:]:
            actor, label = rec[2], rec[3]
            if isinstance(label, str):
                per = counts.setdefault(actor, {})
                per[label] = per.get(label, 0) + 1
        ranked = sorted(counts.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))[:3]
        return "; ".join(f"{actor} ({max(per.items(), key=lambda kv: (kv[1], kv[0]))[0]!r}, "
                         f"{sum(per.values())} of the last 200 steps)" for actor, per in ranked) or "nothing"

    def _fire(self, timer: TimerHandle) -> None:
        """Run a due timer's callback (synchronously, as no actor: ``_who()`` is the timer's actor)."""
        timer.fired = True
        timer.cancelled = True
        previous, self._current = self._current, None
        self._current_timer = timer
        try:
            self._run_callback(timer)
        finally:
            self._current = previous
            self._current_timer = None

    def _run_callback(self, timer: TimerHandle) -> None:
        try:
            timer.fn()
        except AssertionError as exc:
            self._fail("oracle", f"assertion in {timer.actor}", f"assertion failed in timer '{timer.label}': {exc}", None)
        except Exception as exc:
            self._fail(
                "actor-raised",
                f"{type(exc).__name__} in {timer.actor}",
                f"timer '{timer.label}' raised {type(exc).__name__}: {exc} (at {where(exc)})",
                None,
            )

    # -------------------------------------------------------------- oracles
    def invariant(self, fn: Callable[[], object], name: str) -> None:
        """Check ``fn`` after every step and at every time jump.

        ``fn`` holds when it returns None or True (or any other non-string value but False). A
        violation is ``False``, a raised AssertionError (its message is the violation's), or a
        returned string: the string is the violation's message, so a check written as
        ``def check() -> str | None`` says what is wrong ("Pod rs1-2 has no PodGroup").

        An invariant that reads ``world.now`` ("no expectation older than the
        timeout + 20 s") can turn false while time jumps with nothing running;
        the jump is then bisected so the violation carries the instant it
        became false, not the next instant something happened.
        """
        self._invariants.append((name, fn))

    def eventually(self, fn: Callable[[], object], *, within: float, name: str) -> None:
        """``fn`` must hold within ``within`` virtual seconds from now (liveness).

        ``fn`` may return a string saying why it does not hold yet ("1 of 2
        pods; expectations add=2"); the last one it returned is the
        violation's explanation when the deadline passes.
        """
        now_ns = self._clock_ns()
        deadline_ns = later(now_ns, within)
        ev = _Eventually(name, fn, now_ns, deadline_ns)
        self._eventually.append(ev)
        if self._real is not None:
            self._real.eventually_deadline(ev, within)

    def bound(self, metric: Callable[[], float], max: float, name: str) -> None:
        """``metric()`` must never exceed ``max``; its peak is reported either way."""
        self._bounds.append((name, metric, max))
        self.peaks.setdefault(name, -math.inf)

    def expose(self, name: str, fn: Callable[[], object]) -> None:
        """Show ``fn()`` (the model's own memory: expectations, a controller's cache) in reports.

        Reports snapshot every view at every step, like the object stores, so a
        leaked expectation or a stale in-memory job is visible where it changed.
        ``fn`` must not change the run; it should return plain data (dicts,
        lists, strings, numbers).
        """
        self.views[name] = fn

    def at_end(self, fn: Callable[[], object], name: str) -> None:
        """Check ``fn`` once the run settles or reaches its horizon; it fails as :meth:`invariant` does."""
        self._at_end.append((name, fn))

    def fail(self, message: str, *, name: str = "scenario assertion") -> None:
        """Declare a violation from model code (ends the run at the current step)."""
        self._fail("oracle", name, message, self._me())

    def _check_oracles(self) -> None:
        fp = self._fp
        if fp is None:
            self._check_oracles_now()
            return
        # what an oracle reads is no step's footprint: in a told run it is the oracle's reads, else nothing
        reads: list[Access] | None = [] if self._notes is not None else None
        self._fp = self._oracle_reads = reads
        try:
            self._check_oracles_now()
        finally:
            if reads is not None and self._violation is not None and not self._last_oracle_reads:
                self._last_oracle_reads = tuple(reads)
            self._fp, self._oracle_reads = fp, None

    def _check_oracles_now(self) -> None:
        broken = first_broken_invariant(self._invariants)
        if broken is not None:
            self._fail("oracle", broken[0], broken[1], None)
            return
        if self._eventually:
            keep = []
            reads = self._oracle_reads
            for ev in self._eventually:
                if reads is not None:
                    reads.clear()
                why = holds(ev.name, ev.fn)
                if why is not None:
                    ev.why = why
                    keep.append(ev)
                    if reads is not None:  # what it read when it last did not hold: the story starts there
                        self._eventually_reads[ev.name] = tuple(reads)
                elif ev.scope is not None:
                    ev.scope.cancel()  # the real clock's watchdog: discharged, it no longer keeps the run alive
            self._eventually = keep
            if reads is not None:
                reads.clear()
        exceeded = first_exceeded_bound(self._bounds, self.peaks)
        if exceeded is not None:
            self._fail("oracle", exceeded[0], exceeded[1], None)

    def _fail(self, kind: str, name: str, message: str, actor: _Actor | None) -> None:
        if self._violation is None:
            self._violation = Violation(kind, name, message, self._step, self.now, actor.name if actor else None)
            if self._real is not None:
                self._real.stop()

    # ------------------------------------------------------- timers & sleep
    def call_later(
        self,
        delay: float,
        fn: Callable[[], object],
        *,
        label: str,
        actor: str = "timer",
        key: str | None = None,
        rv: int | None = None,
        window: float = 0.0,
    ) -> TimerHandle:
        """Run ``fn()`` (synchronously) ``delay`` virtual seconds from now, as a scheduled action.

        ``window`` > 0 lets a strategy fire it up to ``window`` seconds late (jitter).
        """
        when = later(self._clock_ns(), delay)
        return self._call_at(when, later(when, window), fn, label, actor, key, rv)

    def call_at(
        self,
        when: float,
        fn: Callable[[], object],
        *,
        label: str,
        actor: str = "timer",
        key: str | None = None,
        rv: int | None = None,
        latest: float | None = None,
    ) -> TimerHandle:
        """Run ``fn()`` at virtual time ``when`` (its nominal time), or as late as ``latest``.

        The canonical run fires it at ``when``; a strategy may postpone it to any
        time up to ``latest`` (its window), which is how informer lag and timer
        jitter become part of the explored space.
        """
        return self._call_at(max(to_ns(when), self._clock_ns()), None if latest is None else to_ns(latest), fn, label,
                             actor, key, rv)

    def _clock_ns(self) -> int:
        """The clock in nanoseconds (the real clock's reading, under the real clock)."""
        if self._real is not None:
            self._real.now()  # reads the real clock into _now_ns
        return self._now_ns

    def _call_at(
        self, when_ns: int, latest_ns: int | None, fn: Callable[[], object], label: str, actor: str, key: str | None,
        rv: int | None,
    ) -> TimerHandle:
        self._seq += 1
        handle = TimerHandle(when_ns, self._seq, fn, label, actor, key, rv, latest_ns)
        if self._real is not None:
            self._real.start_timer(handle)
            return handle
        if handle.latest_ns - handle.when_ns > self.max_window * TICKS_PER_SECOND:
            self.max_window = to_seconds(handle.latest_ns - handle.when_ns)
        if self._wants_idents:
            handle.option.ident = self._ident(actor, label, key)
        heapq.heappush(self._timers, handle)
        return handle

    def step(
        self, label: str, *, key: str | None = None, rv: int | None = None, window: float = 0.0, follows: bool = False,
        delay: float = 0.0,
    ) -> Awaitable[None]:
        """A yield point (``await world.step(...)``): the harness may run any other enabled action before this one.

        ``window`` > 0 lets a strategy postpone this step in virtual time by up to
        ``window`` seconds (an API response that comes late, for instance).
        ``follows=True`` marks the continuation of the step just taken (the
        response to a request): it keeps that step's place in the canonical
        order, so the canonical run continues at once, and any other order is
        a deviation. ``delay`` > 0: the step takes that long (it is enabled
        ``delay`` seconds from now; work that takes time, such as a request in a
        loop, see :attr:`steps_at_instant`). (A plain function returning the
        yield itself: one coroutine fewer per step on the hottest path.)
        """
        if delay > 0:
            return self._yield(label, key, rv, ready_ns=later(self._clock_ns(), delay), window=window,
                               keep_order=follows)
        return self._yield(label, key, rv, window=window, keep_order=follows)

    @property
    def steps_at_instant(self) -> int:
        """Steps taken since virtual time last moved (0 on the real clock, where time always moves).

        A loop that takes many steps at one instant is a loop a real cluster
        spreads over time (every request takes some); a kube structure reads this
        to charge its work a nominal latency once an instant gets busy, so such a
        loop heals as it would on a cluster instead of starving the timers.
        """
        if self._real is not None or self._now_ns != self._instant[0]:
            return 0
        return self._step - self._instant[1]

    async def sleep(self, seconds: float, label: str | None = None, *, window: float = 0.0) -> None:
        """Sleep in virtual time (a yield point that becomes enabled after ``seconds``, or up to ``window`` later)."""
        await self._yield(
            label or f"wake after sleep {seconds:g}s", None, None, None, later(self._clock_ns(), seconds), window=window,
            fresh=True,
        )

    def _me(self) -> _Actor | None:
        """The actor whose code runs now (None in a timer's callback)."""
        return self._current if self._real is None else self._real.me()

    def _who(self) -> str:
        me = self._me()
        if me is not None:
            return me.name
        return self._current_timer.actor if self._current_timer is not None else "timer"

    def _point(self, label: str, key: str | None) -> Option:
        who = self._who()
        now = self._now_ns / TICKS_PER_SECOND
        opt = Option(who, label, key, now, now)
        if self._wants_idents:
            opt.ident = self._ident(who, label, key)
        return opt

    def choose(self, label: str, n: int) -> int:
        """A data choice in ``range(n)`` (a user operation, a rule); 0 is the default."""
        if n <= 1:
            return 0
        point = self._point(label, None)
        point.kind = "data"
        idx = self._chooser.choose(n, point)
        if not 0 <= idx < n:
            idx %= n
        self._choices.append(idx)
        self._step += 1
        self._records.append((self._step, self.now, self._who(), label, None, None, idx, n, "choose", None))
        return idx

    def fault_enabled(self, kind: str, default: bool = False) -> bool:
        """Whether faults of ``kind`` may be injected in this run (``default``: the component's own flag)."""
        kinds = self.fault_kinds
        return default if kinds is None else (kind in kinds or "*" in kinds)

    def fault(self, kind: str, label: str, *, key: str | None = None, default: bool = False) -> bool:
        """A fault point: True when the strategy injects the fault here.

        ``kind`` names the fault (``crash``, ``watch_drop``, ``ambiguous_write``,
        ...); the run's :attr:`fault_kinds` (or, when that is None, ``default``,
        the component's own flag) decides whether this point exists at all.
        ``label`` says in words what happens ("controller crashes before delete
        StatefulSet ns/x"); it names the fault in plans and reports. Strategies
        place faults under a budget, so a late fault point is as likely as an
        early one.

        The scenario's own actor (``main``: the test that builds the cluster and
        plays the user) gets no fault points: a fault in the test's setup is a
        broken test, not a controller bug. A model that wants the user's
        requests to fail spawns the user as an actor of its own.
        """
        kinds = self.fault_kinds
        if not (default if kinds is None else (kind in kinds or "*" in kinds)):
            return False
        if self._who() == MAIN_ACTOR:
            return False
        self._fault_points[kind] = self._fault_points.get(kind, 0) + 1
        point = self._point(label, key)
        point.kind = kind
        fired = bool(self._chooser.fault(point))
        self._choices.append(1 if fired else 0)
        if fired:
            self._step += 1
            self._records.append((self._step, self.now, point.actor, label, key, None, 1, 2, "fault", None))
        return fired

    def move_on_after(self, seconds: float) -> trio.CancelScope:
        """A cancel scope that expires after ``seconds`` of virtual time (real clock: scaled real time)."""
        return trio.move_on_after(seconds if self._real is None else self._real.real(seconds, jitter=False))

    def fail_after(self, seconds: float) -> Any:
        """Like ``trio.fail_after``, in virtual time (real clock: scaled real time)."""
        return trio.fail_after(seconds if self._real is None else self._real.real(seconds, jitter=False))

    # ------------------------------------------------------------ primitives
    def Event(self) -> Event:  # noqa: N802 - reads like the class it makes
        return Event(self)

    def Queue(self) -> _Queue[Any]:  # noqa: N802 - the alias: in the class body "Queue" is this method
        return Queue(self)

    def Lock(self) -> Lock:  # noqa: N802
        return Lock(self)

    # ---------------------------------------------------------------- driver
    async def _main(self, scenario: Callable[..., Awaitable[object]]) -> None:
        if self._real is not None:
            await self._real.main(scenario)
            return
        self._controller = tl.current_task()
        self._watch = arm(self._progress, self._running)
        try:
            try:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    nursery.start_soon(self._watch_outside_blocks)
                    self.spawn(MAIN_ACTOR, _call_with_params, scenario, self)
                    try:
                        await self._control()
                    finally:
                        self._stopping = True
                        nursery.cancel_scope.cancel()
            except KeyboardInterrupt:
                self._interrupted = True
                self._fail("interrupted", "KeyboardInterrupt", "KeyboardInterrupt while the run was in progress", None)
                raise
        except* NoYield:  # landed outside an actor (an oracle the scheduler checked): charged to the running one
            self._no_yield(self._running(), "an oracle or timer callback", None)
        finally:
            disarm(self._watch)

    def _progress(self) -> int:
        """The watchdog's measure of progress: the step counter."""
        return self._step

    def _running(self) -> str | None:
        return self._current.name if self._current is not None else None

    def _no_yield(self, name: str | None, at: str, actor: _Actor | None) -> None:
        """The watchdog stopped ``name`` at ``at``: a model error (the bound passed) or a stop (Ctrl-C)."""
        tripped = self._watch.tripped if self._watch is not None else None
        seconds = tripped.seconds if tripped is not None else 0.0
        who = name or "an actor"
        if tripped is not None and tripped.stop:
            self._interrupted = True
            self._fail("interrupted", "stopped without a yield point",
                       f"{who} was stopped at {at} when the stop was requested: it had run {seconds:.1f} s "
                       "without a yield point", actor)
            return
        self._fail("no-yield", f"{who} never yielded",
                   f"{who} ran {seconds:.0f} s without a yield point at {at}: a model must await the harness "
                   "(world.step, world.sleep, an API call, a queue's get); a CPU loop never yields. The bound is "
                   "hunt --yield-timeout (wall seconds)", actor)

    async def _control(self) -> None:
        chosen = self._dispatch()
        while True:
            if chosen is not None:
                self._resume(chosen)
                self._controller_parked = True
                await tl.wait_task_rescheduled(lambda _rc: tl.Abort.SUCCEEDED)
            if self._violation is not None or self._ended:
                return
            if not await self._advance():
                return
            chosen = self._dispatch()

    async def _advance(self) -> bool:
        """Nothing is enabled: move virtual time, or end the run. False = run over.

        Every instant here is a whole nanosecond (an int), so two instants are
        equal or at least a nanosecond apart, and a jump always moves the clock.
        """
        now = self._now_ns
        t_next = NEVER
        timers = self._timers
        while timers and timers[0].cancelled:
            heapq.heappop(timers)
        if timers:
            t_next = timers[0].when_ns
        waiting_actors = [a for a in self._actors if a.waiting]
        for a in waiting_actors:
            if now < a.ready_ns < t_next:
                t_next = a.ready_ns
            elif now < a.latest_ns < t_next:
                t_next = a.latest_ns  # the end of a postponed action's window
        for ev in self._eventually:
            if ev.deadline_ns < t_next:
                t_next = ev.deadline_ns
        # A strategy chose to let time pass: stop at the next window end, or earlier if it asked.
        if self._wait_target < t_next:
            t_next = self._wait_target
        self._wait_target = NEVER
        for t in self._due:
            if not t.cancelled and now < t.latest_ns < t_next:
                t_next = t.latest_ns
        target = max(now, min(t_next, self._horizon_ns, self._max_ns))
        before = now
        if self._direct_time and target < NEVER \
                and tl.current_statistics().seconds_to_next_deadline > (target - now) / TICKS_PER_SECOND:
            # No Trio deadline (an actor's move_on_after/fail_after) lies at or before the target, so
            # nothing in Trio can fire on the way: set the clock. The comparison is in seconds from now
            # because that is what Trio reports; rounding can only make it refuse a jump it could have
            # made (then the exact path below runs), never accept one past a deadline.
            self._now_ns = target
        else:
            # A deadline may expire on the way: let Trio move time, so the clock stops at that deadline
            # and the actor's cancel scope fires at its own instant (see VirtualClock).
            self._advancing = True
            try:
                with trio.CancelScope() as scope:
                    self._advance_scope = scope
                    await trio.sleep_until(to_seconds(target))
            finally:
                self._advancing = False
                self._advance_scope = None
        if self._now_ns > before and self._invariants and self._violation is None and target < NEVER \
                and (t_next != NEVER or target == self._horizon_ns):  # a real jump, not the probe for settling
            self._check_invariants_over_jump(before)
            if self._violation is not None:
                return False
        if any(a.cancel_pending for a in self._actors):
            return True  # a Trio deadline inside an actor expired on the way
        # eventually deadlines that passed
        for ev in self._eventually:
            if ev.deadline_ns <= self._now_ns:
                self._now_ns = ev.deadline_ns
                self._last_oracle_reads = self._eventually_reads.get(ev.name, ())
                self._fail("oracle", ev.name, ev.missed(), None)
                return False
        if t_next != NEVER and self._now_ns < self._horizon_ns and self._now_ns < self._max_ns:
            return True
        if self._now_ns >= self._horizon_ns:
            self._now_ns = self._horizon_ns
            self._end_checks("reached its horizon")
            return False
        if t_next == NEVER:
            self._now_ns = before
            blocked = [a for a in waiting_actors if not a.done and not (a.daemon and a.idle)]
            if blocked:
                # the scenario's own actor first: when it waits forever, the model is what is broken
                a = next((b for b in blocked if b.name == MAIN_ACTOR), blocked[0])
                where = waiting_at(a.task)
                self._fail(
                    "deadlock",
                    "deadlock",
                    f"actor '{a.name}' waits for '{a.label}'{f' at {where}' if where else ''} at t={self.now:g}, "
                    "and no enabled action or timer can wake it. Make sure every wait has a producer, or spawn "
                    "long-lived loops with daemon=True and wait for work with Queue.get().",
                    a,
                )
                return False
            self._end_checks("settled")
            return False
        self._fail(
            "runaway",
            "time limit",
            f"virtual time passed the limit of {self.limits.max_time:g} s without the run settling. "
            "If the scenario is periodic, set world.horizon; otherwise raise Limits(max_time=...).",
            None,
        )
        return False

    def _check_invariants_over_jump(self, before: int) -> None:
        fp = self._fp
        reads: list[Access] | None = [] if self._notes is not None else None
        self._fp = reads
        try:
            self._bisect_invariants(before)
        finally:
            if reads is not None and self._violation is not None and not self._last_oracle_reads:
                self._last_oracle_reads = tuple(reads)
            self._fp = fp

    def _bisect_invariants(self, before: int) -> None:
        """Nothing ran while time moved from ``before``: find the first instant an invariant broke.

        Only time changed, so an invariant broken now and holding at ``before``
        depends on time; bisecting (to a microsecond) puts the violation at the
        instant it became false. Rejected: checking at fixed ticks, which adds
        steps to every run and still misses the instant.
        """
        target = self._now_ns
        if first_broken_invariant(self._invariants) is None:
            return
        lo, hi = before, target
        while hi - lo > 1_000:
            self._now_ns = mid = (lo + hi) // 2
            if first_broken_invariant(self._invariants) is None:
                lo = mid
            else:
                hi = mid
        self._now_ns = hi
        broken = first_broken_invariant(self._invariants)
        if broken is None:  # not monotone in time: report where it was seen broken
            self._now_ns = target
            broken = first_broken_invariant(self._invariants)
        if broken is not None:
            self._fail("oracle", broken[0], broken[1], None)

    def _end_checks(self, how: str) -> None:
        self._ended = True
        for ev in self._eventually:
            if how == "settled" and (self._real is None or holds(ev.name, ev.fn) is not None):
                self._last_oracle_reads = self._eventually_reads.get(ev.name, ())
                self._fail(
                    "oracle",
                    ev.name,
                    f"'{ev.name}' never happened: the run settled at t={self.now:g} "
                    f"(it was expected by t={ev.deadline:g}){ev.because()}",
                    None,
                )
                return
        for name, fn in self._at_end:
            fp = self._fp
            if fp is not None:
                self._fp = self._oracle_reads = [] if self._notes is not None else None
            msg = holds(name, fn)
            if self._oracle_reads is not None:
                self._last_oracle_reads, self._oracle_reads = tuple(self._oracle_reads), None
            self._fp = fp
            if msg is not None:
                self._fail("oracle", name, f"at the end of the run: {msg}", None)
                return
        self._check_oracles()

    async def _watch_outside_blocks(self) -> None:
        while True:
            await trio.testing.wait_all_tasks_blocked()
            if self._advancing or self._stopping:
                await trio.sleep(0)
                continue
            who = self._current.name if self._current is not None else MAIN_ACTOR
            task = self._current.task if self._current is not None else None
            where = waiting_at(task)
            self._fail(
                "blocked-outside",
                "blocked outside the harness",
                f"actor '{who}' is blocked on something the harness does not control (a raw trio.sleep, "
                f"trio.Event, memory channel or real I/O){f' at {where}' if where else ''} at t={self.now:g}. "
                "Use world.sleep, world.Event(), world.Queue(), world.Lock() or world.step so the harness can "
                "schedule it.",
                self._current,
            )
            self._wake_controller()
            return

    def _tell(self) -> None:
        """Record this run told: its notes, each step's footprint and program order (a story, a search member
        that reads the run's notes). One place, so every way of running a world records the same."""
        self._notes = []
        self._footprints = {}
        self._continues = {}
        if self._fp is None:
            self._fp = []

    # ------------------------------------------------------------- results
    def outcome(self) -> RunOutcome:
        self._flush_footprint(last=True)
        trace = Trace._lazy(self._records)
        if self._notes is not None:
            trace.notes = tuple(self._notes)
            trace.noted = True
            assert self._footprints is not None and self._continues is not None
            trace.footprints = {s: tuple(a) for s, a in self._footprints.items()}
            trace.oracle_reads = tuple(dict.fromkeys(self._last_oracle_reads))
            trace.continues = dict(self._continues)
        return RunOutcome(
            trace,
            self._violation,
            self.now,
            dict(self.peaks),
            self._interrupted,
            self._choices,
            dict(self._fault_points),
            self.max_window,
        )


def _harness_code(fn: Callable[..., object]) -> bool:
    """Whether ``fn`` is the harness's own code (a kube structure's timer), which records what it touches."""
    return str(getattr(fn, "__module__", "") or "").startswith("harness.")


async def _call_with_params(scenario: Callable[..., Awaitable[object]], world: World) -> None:
    await scenario(world, **world.params)


def run_once(
    scenario: Callable[..., Awaitable[object]],
    chooser: Chooser,
    *,
    params: dict[str, Any] | None = None,
    limits: Limits = Limits(),
    observer: Callable[[World, Record | None], None] | None = None,
    faults: frozenset[str] | None = None,
    notes: bool = False,
) -> RunOutcome:
    """Run ``scenario(world, **params)`` once under ``chooser``; never raises for a verdict.

    ``observer(world, last_record)`` is called at every scheduling point (reports
    use it to capture object state per step); it must not change the run.
    ``notes=True`` records what happened inside the steps (:class:`Note`) and
    which objects each step read and wrote: the same run, told.
    """
    world = World(chooser, limits=limits, params=params, observer=observer)
    world.fault_kinds = faults
    if notes or getattr(chooser, "wants_notes", False):
        world._tell()
    run_trio(world._main, scenario, clock=VirtualClock(world))
    if world._reraise is not None:
        raise world._reraise
    return _shown(chooser, world.outcome())


def _shown(chooser: Chooser, out: RunOutcome) -> RunOutcome:
    """Hand the run to a chooser that asks to see what it decided (``seen(outcome)``: its trace, its notes)."""
    seen = getattr(chooser, "seen", None)
    if seen is not None:
        seen(out)
    return out


def run_batch(
    scenario: Callable[..., Awaitable[object]],
    choosers: Iterator[Chooser],
    keep_going: Callable[[RunOutcome], bool],
    *,
    params: dict[str, Any] | None = None,
    limits: Limits = Limits(),
    faults: frozenset[str] | None = None,
) -> None:
    """Run one execution per chooser inside a single ``trio.run``, until ``keep_going`` says stop.

    Same results as calling :func:`run_once` per chooser (each run has its own
    World, nursery and watcher, and every task of a run ends with it), without
    paying Trio's start-up (~150-250 us) per execution. Used by the searches
    that own their loop (random, pct); Hypothesis owns its loop, so it uses
    :func:`run_once`.
    """
    clock = VirtualClock(None)

    async def main() -> None:
        for chooser in choosers:
            world = World(chooser, limits=limits, params=params)
            world.fault_kinds = faults
            if getattr(chooser, "wants_notes", False):  # a search member that reads the run's notes
                world._tell()
            clock._world = world
            await world._main(scenario)
            clock._world = None
            if world._reraise is not None:
                raise world._reraise
            if not keep_going(_shown(chooser, world.outcome())):
                return

    run_trio(main, clock=clock)


#: What Trio says when it collects an async generator its task left suspended (``async for`` over a lightkube watch
#: or an httpx body when the run cancels the actor): trio.lowlevel's finalizer warns, then closes it itself.
_ABANDONED_GENERATOR = r"Async generator '.*' was garbage collected before it had been exhausted"


def run_trio(fn: Callable[..., Awaitable[object]], *args: object, clock: trio.abc.Clock | None = None) -> None:
    """``trio.run`` as every run of the harness takes it: one exception, not a group, and no warning for generators
    the harness itself abandoned.

    A run ends by cancelling its daemon actors wherever they wait, and a crash fault cancels a process's actors
    mid-``async for``: a real client's watch (lightkube's ``watch``, httpx's ``aiter_lines``) is left suspended at a
    ``yield``, and when the garbage collector meets it Trio warns that it was abandoned. That is the harness's doing,
    not the model's, and Trio closes it all the same (within this run: at the run's end it closes every generator still
    alive); left alone, the warning lands wherever the collector happens to run, and a test suite that turns warnings
    into errors fails at random.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_ABANDONED_GENERATOR, category=ResourceWarning)
        try:
            trio.run(fn, *args, clock=clock, strict_exception_groups=True)
        except BaseExceptionGroup as group:
            raise _unwrap(group) from None


def _unwrap(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The first leaf of an exception group: the harness never raises two at once."""
    exc: BaseException = group
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc
