"""The run driver: one run (:func:`run_once`) or many in one ``trio.run`` (:func:`run_batch`), and ``trio.run``
as every run of the harness takes it (:func:`run_trio`)."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import trio

from ._choice import Chooser
from ._outcome import Limits, RunOutcome
from ._time import VirtualClock
from ._trace import Record
from ._world import World


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


def waits_for_outside(
    scenario: Callable[..., Awaitable[object]], *, params: dict[str, Any] | None = None, limits: Limits = Limits(),
) -> str | None:
    """Whether the canonical run of ``scenario`` waits for a program outside the world (an operator's OS process):
    the kind of the first one it meets (``"ExternalOperator"``), or None.

    The probe's run stops where the first such program would join the world
    (``World._add_outside`` raises before the program starts), so it costs the
    scenario's set-up, never a process's start-up; a scenario with none runs to
    its end, which in process costs milliseconds. A run that raises or fails
    before meeting one says None: the search that follows reports it.
    """
    from ._choosers import PlanChooser

    world = World(PlanChooser(), limits=limits, params=params)
    world._probe_outside = True
    try:
        run_trio(world._main, scenario, clock=VirtualClock(world))
    except Exception:
        pass
    return world._probed_outside


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
