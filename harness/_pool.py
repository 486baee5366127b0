"""A hunt whose subject runs OS processes uses every core: its shards on a pool of worker processes here.

A run of a scenario with an operator process (``ExternalOperator``, a test
command's ``TestProcess``) costs seconds, nearly all of them waiting on the
real clock for the process, so two runs at once on two cores take about as
long as one. ``hunt`` therefore probes each search's canonical run
(:func:`harness.sim._driver.waits_for_outside`: it stops where a program
outside the world would start, before it starts) and, when one would run,
cuts the search into the shards ``hunt --cluster`` runs (``harness._shards``:
seeds derived from ``--seed`` and the shard's index, the budget split by the
shard count) and runs them on :class:`LocalPool`, one worker per usable core
(``os.sched_getaffinity``). ``hunt-test`` always does: a test command is a
process. A search that runs in process stays in process: thousands of runs a
second, which a pool would only slow.

One mechanism serves both: :class:`LocalPool` is the part of
``distributed.Client`` that :class:`harness._cluster.ClusterHunt` and
:class:`harness._cluster.DaskShards` use (``submit``, ``run``, ``nthreads``,
``cancel``, futures with ``done``/``result``/``status``), over the standard
library's ``ProcessPoolExecutor`` with the ``spawn`` context, so the shards,
their shrink on the worker, the minimality proof here with its referee's
shards on the pool, the merge by signature and the output are the cluster's,
and the core install needs no Dask. ``--workers 1`` runs the same shards one
after another in this process (:class:`SerialPool`): the same verdicts and
trace digests as any number of workers, the proof proving each finding's
canonical minimum.

Processes and signals. Each worker leads a session of its own (a terminal's
Ctrl-C reaches this process only, which forwards the stop) and sets
``RACE_HARNESS_POOL`` to the pool's token, which the operator processes it
starts inherit; the pool is registered as one process family
(:class:`harness._processes.WorkerFamily`). The first Ctrl-C or SIGTERM here
asks every worker to stop (SIGINT): each ends its run in hand as interrupted,
which ends its operator processes, and returns what its shard found; the pool
then waits a few seconds for the workers to go and kills what is left. The
second signal's at-once exit (``harness._interrupt``) kills the workers and
every process carrying the token before ``os._exit``.

Rejected: ``multiprocessing.Pool`` (a worker's death hangs ``map``; no
per-task future to poll for Ctrl-C), ``fork`` (a forked copy of a process
holding Trio's and the loopback server's state and threads), and running
every search of a hunt sharded (a search in process would lose its speed and
the digests it has today).
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from ._interrupt import request_stop, stop_requested
from ._processes import POOL_MARKER, WorkerFamily, end_all

#: seconds the workers have, once asked to stop, to end their runs (and operator processes) before SIGKILL
STOP_GRACE = 3.0
_LOOK = 0.05


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity, as a container's cpuset limits it), else all."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # (no affinity on macOS)
        return max(1, os.cpu_count() or 1)


# ------------------------------------------------------------------ a worker's side
_stops = 0


def _worker_start(token: str) -> None:
    """A worker's first act: a session of its own, the pool's token for what it starts, and stop handlers."""
    try:
        os.setsid()
    except OSError:  # (already a session leader)
        pass
    os.environ[POOL_MARKER] = token
    signal.signal(signal.SIGINT, _worker_stop)
    signal.signal(signal.SIGTERM, _worker_stop)


def _worker_stop(signum: int, frame: FrameType | None) -> None:
    """SIGINT (the hunt's stop, forwarded): the shard's search ends after its run in hand (interrupted); a
    second SIGINT, or SIGTERM (the hunt's at-once exit, ``WorkerFamily.kill``): at once, its operator processes
    killed and its runs' folders removed first (``os._exit`` skips every ``finally``)."""
    global _stops
    _stops += 1
    if _stops == 1 and signum == signal.SIGINT:
        request_stop()
        return
    try:
        end_all()
    finally:
        os._exit(130)


# ------------------------------------------------------------------ this process's side
class _PoolFuture:
    """A shard's future with the part of Dask's future the hunt reads (``status``)."""

    def __init__(self, inner: concurrent.futures.Future[Any]) -> None:
        self._inner = inner

    def done(self) -> bool:
        return self._inner.done()

    def result(self) -> Any:
        return self._inner.result()

    def cancel(self) -> bool:
        return self._inner.cancel()

    @property
    def status(self) -> str:
        if self._inner.cancelled():
            return "cancelled"
        if not self._inner.done():
            return "pending"
        return "error" if self._inner.exception() is not None else "finished"


class LocalPool:
    """``workers`` processes on this machine behind the part of ``distributed.Client`` the hunt uses."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.family = WorkerFamily()
        self._executor = concurrent.futures.ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
            initializer=_worker_start, initargs=(self.family.token,),
        )
        self._closed = threading.Event()
        self._forwarded = False  # a worker's second SIGINT is its at-once exit: the stop is forwarded once
        self._lock = threading.Lock()
        self._watch = threading.Thread(target=self._forward_stop, name="race-harness-pool", daemon=True)
        self._watch.start()

    def __str__(self) -> str:
        return f"{self.workers} local worker{'s' if self.workers != 1 else ''}"

    def nthreads(self) -> dict[str, int]:
        return {f"worker-{i}": 1 for i in range(self.workers)}

    def submit(self, fn: Callable[..., Any], *args: Any, pure: bool = False) -> _PoolFuture:
        del pure  # (Dask's: every shard is a task of its own)
        future = _PoolFuture(self._executor.submit(fn, *args))
        self._note_pids()  # (a worker is started by the submit that finds none idle)
        return future

    def run(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """``fn(*args)`` once per worker, as far as the pool can tell (best effort: a warm-up).

        Submitted ``workers`` times at once, which starts every worker, so their
        imports overlap and happen before the hunt's clock starts.
        """
        futures = [self.submit(fn, *args) for _ in range(self.workers)]
        out: list[Any] = []
        for f in futures:
            while not f.done():
                if stop_requested():
                    return out
                self._closed.wait(_LOOK)
            out.append(f.result())
        return out

    def cancel(self, futures: list[Any]) -> None:
        """Futures not started are dropped; the workers' runs in hand end when a stop was asked (forwarded)."""
        for f in futures:
            f.cancel()

    def close(self) -> None:
        """Every worker ends, and every process it started: at once when idle; after a stop, within
        :data:`STOP_GRACE` seconds (then SIGKILL)."""
        self._closed.set()
        stopping = stop_requested()
        self._note_pids()
        if stopping:
            self._signal_workers()
        self._executor.shutdown(wait=not stopping, cancel_futures=True)
        self.family.end(STOP_GRACE if stopping else 0.5)

    def _note_pids(self) -> None:
        # the executor's table of its processes: the one place their pids are (``_processes`` is private but has
        # kept its name and meaning since Python 3.2)
        self.family.pids.update(dict(getattr(self._executor, "_processes", None) or {}))

    def _signal_workers(self) -> None:
        """SIGINT to every worker, once for the pool's life (from the watcher or from :meth:`close`, whichever
        comes first): a worker's second SIGINT is its at-once exit."""
        with self._lock:
            if self._forwarded:
                return
            self._forwarded = True
            for pid in sorted(self.family.pids):
                try:
                    os.kill(pid, signal.SIGINT)
                except OSError:
                    pass

    def _forward_stop(self) -> None:
        """A stop asked here (Ctrl-C, SIGTERM, a closed pipe) is asked of every worker, once."""
        while not self._closed.wait(_LOOK):
            if stop_requested():
                self._note_pids()
                self._signal_workers()
                return


class _SerialFuture:
    """A shard run here, in order, when the hunt first asks whether it is done (never after a stop was asked)."""

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self._fn, self._args = fn, args
        self._state = "pending"
        self._value: Any = None
        self._error: BaseException | None = None

    def done(self) -> bool:
        if self._state == "pending" and not stop_requested():
            try:
                self._value = self._fn(*self._args)
                self._state = "finished"
            except Exception as exc:
                self._error, self._state = exc, "error"
        return self._state != "pending"

    def result(self) -> Any:
        self.done()
        if self._error is not None:
            raise self._error
        if self._state != "finished":
            raise concurrent.futures.CancelledError()
        return self._value

    def cancel(self) -> bool:
        if self._state == "pending":
            self._state = "cancelled"
        return self._state == "cancelled"

    @property
    def status(self) -> str:
        return self._state


class SerialPool:
    """``--workers 1``: the pool's interface, its shards run in this process one after another (no worker)."""

    workers = 1

    def __str__(self) -> str:
        return "1 worker (this process)"

    def nthreads(self) -> dict[str, int]:
        return {"this process": 1}

    def submit(self, fn: Callable[..., Any], *args: Any, pure: bool = False) -> _SerialFuture:
        del pure
        return _SerialFuture(fn, args)

    def run(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        return [fn(*args)]

    def cancel(self, futures: list[Any]) -> None:
        for f in futures:
            f.cancel()

    def close(self) -> None:
        pass


@contextmanager
def open_pool(workers: int) -> Iterator[LocalPool | SerialPool]:
    """A pool of ``workers`` (1: this process), closed however the hunt leaves."""
    pool: LocalPool | SerialPool = SerialPool() if workers == 1 else LocalPool(workers)
    try:
        yield pool
    finally:
        pool.close()
