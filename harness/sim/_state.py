"""What one run holds: the state every concern of the :class:`World` reads, declared once for the type checker.

The world is one object made of concerns, each in its own module: who runs next
(``_dispatch``), when time moves (``_time``), what a step read and wrote
(``_footprints``), whether the run is over (``_oracles``). They share one run's
state, which ``World.__init__`` (``_world``) sets; :class:`_RunState` declares it
(and the methods one concern calls on another) so that each concern's module
type-checks on its own. It holds no values and no code: at run time it is an
empty base class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

    import trio
    import trio.lowlevel as tl

    from ._actors import _Actor
    from ._choice import Chooser
    from ._oracles import _Eventually
    from ._outcome import Limits, Violation
    from ._plan import Ident
    from ._realtime import RealTime
    from ._tasks import TaskAdopter
    from ._time import TimerHandle
    from ._trace import Access, Note, Record
    from ._watchdog import Watch
    from ._world import World


class _RunState:
    """The attributes of one run that more than one concern reads (``World.__init__`` says what each is)."""

    _direct_time: bool
    params: dict[str, Any]
    limits: Limits
    _horizon: float
    _horizon_ns: int
    _max_ns: int
    _chooser: Chooser
    _observer: Callable[[World, Record | None], None] | None
    _wants_idents: bool
    _await_deadline: float
    _awaiting_outside: bool
    _occurrences: dict[tuple[str, str, str | None], int]
    _choices: list[int]
    _fault_points: dict[str, int]
    _faults_injected: dict[str, int]
    fault_kinds: frozenset[str] | None
    _wait_target: int
    _current_timer: TimerHandle | None
    max_window: float
    _now_ns: int
    _seq: int
    _actors: list[_Actor]
    _by_name: dict[str, _Actor]
    _timers: list[TimerHandle]
    _due: list[TimerHandle]
    _records: list[tuple[Any, ...]]
    _step: int
    _instant: tuple[int, int]
    _violation: Violation | None
    _interrupted: bool
    _reraise: BaseException | None
    _watch: Watch | None

    def _no_yield(self, name: str | None, at: str, actor: _Actor | None) -> None: ...
    _current: _Actor | None
    _controller: tl.Task | None
    _controller_parked: bool
    _advancing: bool
    _advance_scope: trio.CancelScope | None
    _stopping: bool
    _ended: bool
    _nursery: trio.Nursery | None
    _invariants: list[tuple[str, Callable[[], object]]]
    _eventually: list[_Eventually]
    _bounds: list[tuple[str, Callable[[], float], float]]
    _at_end: list[tuple[str, Callable[[], object]]]
    peaks: dict[str, float]
    views: dict[str, Callable[[], object]]
    state: dict[str, Any]
    _processes: dict[str, str]
    _recorded: set[str]
    _fp_chooser: bool
    _fp: list[Access] | None
    _fp_step: int
    _notes: list[Note] | None
    _footprints: dict[int, list[Access]] | None
    _continues: dict[int, int] | None
    _last_step_of: dict[str, int]
    _oracle_reads: list[Access] | None
    _last_oracle_reads: tuple[Access, ...]
    _eventually_reads: dict[str, tuple[Access, ...]]
    _log_handler: logging.Handler | None
    _log_saved: list[tuple[logging.Logger, list[logging.Handler], bool, int]]
    _log_thread: int
    _real: RealTime | None
    _adopter: TaskAdopter | None
    _wake: Callable[[], None] | None
    _outsides: list[Any]

    if TYPE_CHECKING:
        # one concern's methods that another calls (each defined in the module named)

        # _time
        @property
        def now(self) -> float: ...
        def _clock_ns(self) -> int: ...

        # _dispatch
        async def _yield(
            self, label: str, key: str | None = None, rv: int | None = None, guard: Callable[[], bool] | None = None,
            ready_ns: int | None = None, idle: bool = False, window: float = 0.0, keep_order: bool = False,
            fresh: bool = False,
        ) -> None: ...
        def _ident(self, actor: str, label: str, key: str | None) -> Ident: ...
        def _me(self) -> _Actor | None: ...
        def _who(self) -> str: ...
        def _wake_controller(self) -> None: ...
        def _outside_stirred(self) -> bool: ...

        # _oracles
        def _fail(self, kind: str, name: str, message: str, actor: _Actor | None) -> None: ...
        def _not_a_result(self, name: str, message: str) -> None: ...
        def _check_oracles(self) -> None: ...
        def _check_invariants_over_jump(self, before: int) -> None: ...
        def _end_checks(self, how: str) -> None: ...

        # _footprints
        def _flush_footprint(self, last: bool = False) -> None: ...
        def memory_of(self, actor: str) -> str | None: ...
        def process_of(self, actor: str) -> str | None: ...
        def recorded(self, process: str | None) -> bool: ...
