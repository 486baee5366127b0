"""A test command as the subject of a search: its exit status is the oracle (:class:`TestProcess`).

A flaky integration test (an envtest suite, a pytest suite against a cluster)
is a program like an operator process: it talks to the apiserver over a
socket, on its own real-time schedule. ``TestProcess`` runs it as
:class:`ExternalOperator` runs an operator (every request an actor's steps,
every watch event to it a delivery held in its window, the quiescence wait
between choices) with three differences that make a *test* the subject:

* **its end is the verdict.** The scenario awaits :meth:`finished`; exit 0 is a
  pass, any other code is a failing test, an oracle of its own named by the
  failing test (``go test``'s ``--- FAIL: TestX``, ``go test -json``'s
  ``"Action":"fail"``, Ginkgo's ``[FAIL]``, pytest's ``FAILED``) with the lines
  it printed about it. A command that exits before its first request never
  ran against the apiserver: that is a usage error, never a result.
* **it holds the world.** While it runs, a world with nothing left to do waits
  for it in real time (``holds``) instead of ending the run under it.
* **polling is not progress.** Gomega's ``Eventually`` reads every 10 ms and a
  pytest helper loops on GETs, so "nothing new for ``quiet`` seconds" would
  never come while a test waits, and each poll made a step would make the
  trace as long as the wall clock. The rule here: a GET (not a watch) that
  repeats an earlier GET of the same URL and Accept, while the apiserver's
  store is at the revision that earlier answer was computed at, is *no
  progress*. It is answered at once with that answer (the same bytes the store
  would give now), is not a step, is not in the trace, and neither stirs the
  scheduler nor counts as traffic for the quiet wait. The first read at a new
  revision is a step like any request. Why that is sound: delaying a repeated
  read's answer is the same as the test polling later, which its next poll is;
  and its answer cannot differ from the store's. What it costs: a read the
  search could have delayed past a later write is answered before it (the
  test's next poll sees the write). The decision is made where requests
  become actors (``settled``), so it falls at the same points of every run.

What is not controlled: the test's own real-time timeouts (``Eventually``'s
timeout, ``time.Sleep``, pytest-timeout), the threads of the test process,
and its real clock. Virtual time moves when the process is quiet, so held
deliveries arrive as soon as the test waits, not after real seconds.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from harness.sim import Event, real_monotonic

from ..kube import APIServer
from ..kube._delivery import DEFAULT_MAX_LAG
from ._external import ExternalOperator

#: ``go test``'s plain failure line, ``--- FAIL: TestReconcile/sub (0.12s)``
_GO_FAIL = re.compile(r"^\s*--- FAIL: (\S+)")
#: Ginkgo v2's summary line, ``[FAIL] Secret controller [It] creates one Secret /path/x_test.go:42``
_GINKGO_FAIL = re.compile(r"^\s*\[FAIL\] (.+?)(?:\s+\S+\.go:\d+)?\s*$")
#: pytest's short summary line, ``FAILED tests/test_x.py::test_y - AssertionError: ...``
_PYTEST_FAIL = re.compile(r"^FAILED (\S+)(?: - (.*))?$")
#: lines of the output kept with a failing test's name: enough for Gomega's "Expected ... to equal ..."
_MESSAGE_LINES = 6


def failing_tests(output: str) -> list[tuple[str, str]]:
    """``(test, message)`` for each failing test the output names, in its order, deduplicated by name.

    Read from ``go test -json`` events (``"Action":"fail"`` with the test's ``"Output"`` lines before it),
    ``go test``'s ``--- FAIL:`` lines, Ginkgo v2's ``[FAIL]`` summary, and pytest's ``FAILED`` lines. The message
    is the test's own words where the format carries them (pytest's after `` - ``, the ``Output`` of a JSON event
    stream, the lines a Go test printed before its ``--- FAIL``), at most a few lines."""
    found: dict[str, str] = {}
    json_output: dict[str, list[str]] = {}
    plain: list[str] = []
    for line in output.splitlines():
        if line.startswith("{") and '"Action"' in line:
            try:
                event = json.loads(line)
            except ValueError:
                event = None
            if isinstance(event, dict):
                test = event.get("Test")
                if event.get("Action") == "output" and test:
                    text = str(event.get("Output", "")).rstrip()
                    if text and not text.lstrip().startswith(("=== RUN", "--- FAIL", "=== CONT", "=== PAUSE")):
                        json_output.setdefault(test, []).append(text.strip())
                elif event.get("Action") == "fail" and test:
                    found.setdefault(test, " ".join(json_output.get(test, [])[-_MESSAGE_LINES:]))
                continue
        if m := _GO_FAIL.match(line):
            found.setdefault(m.group(1), " ".join(x.strip() for x in plain[-_MESSAGE_LINES:] if x.strip()))
        elif m := _GINKGO_FAIL.match(line):
            found.setdefault(m.group(1).strip(), "")
        elif m := _PYTEST_FAIL.match(line):
            found.setdefault(m.group(1), (m.group(2) or "").strip())
        if not line.lstrip().startswith(("=== RUN", "--- PASS", "--- FAIL", "PASS", "FAIL", "ok ")):
            plain.append(line)
        else:
            plain.clear()
    # a parent Go test fails with its subtest: name the innermost only
    names = list(found)
    return [(n, found[n][:400]) for n in names if not any(o != n and o.startswith(n + "/") for o in names)]


class TestProcess(ExternalOperator):
    """A test command run against this scenario's apiserver, its exit status the oracle (see the module).

    ``argv`` runs the tests (``["go", "test", "./internal/controller/..."]``, ``["pytest", "tests/e2e"]``);
    ``KUBECONFIG`` names this apiserver and ``USE_EXISTING_CLUSTER=true`` tells envtest to use it instead of
    starting its own. ``startup`` covers what comes before the first request (``go test`` compiles the test
    binary: seconds with a warm build cache, a minute cold); ``timeout`` bounds the whole test in real seconds.
    """

    __test__ = False  # (pytest: a class named Test* here is not a test class)

    def __init__(
        self,
        api: APIServer,
        argv: Sequence[str],
        *,
        name: str = "test",
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        quiet: float = 0.15,
        bound: float = 5.0,
        startup: float = 180.0,
        timeout: float = 900.0,
        max_lag: float | None = None,
        tls: bool = True,
        ahead: bool = False,
    ) -> None:
        """See the class; ``quiet``, ``bound``, ``max_lag`` and ``tls`` are :class:`ExternalOperator`'s.

        ``ahead``: start the next run's command during this one (:class:`ExternalOperator`'s start-ahead); off by
        default, because a test's own real-time timeouts start with its process: envtest's and Ginkgo's waits
        (5 s) would count the time its first request was held for its run, and the suite fails on its own."""
        if timeout <= 0:
            raise ValueError(f"TestProcess {name!r}: timeout must be > 0 (got {timeout})")
        super().__init__(api, name, argv, env={"USE_EXISTING_CLUSTER": "true", **(env or {})}, cwd=cwd,
                         quiet=quiet, bound=bound, startup=startup, tls=tls, ahead=ahead,
                         max_lag=DEFAULT_MAX_LAG if max_lag is None else max_lag)
        self._timeout = timeout
        self._started_at: float | None = None
        #: set when the command has exited (its code in :attr:`exit_code`)
        self.exited = Event(self.world)
        #: repeated reads answered at once (no progress), and the reads that were steps
        self.reads_at_once = 0
        self._answers: dict[tuple[str, str], tuple[int, Any]] = {}  # (target, accept) -> (revision, reply)
        self._repeats: list[tuple[tuple[str, str], tuple[Any, ...]]] = []  # repeated reads not yet judged
        self._polled_at = -1e9  # (real) when a repeated read was last answered at once

    def start(self) -> TestProcess:
        """Serve the apiserver, write the kubeconfig, and start the test command."""
        super().start()
        self._started_at = real_monotonic()
        return self

    async def finished(self) -> int:
        """Wait (a yield point of the world) until the command exits; its exit code. A non-zero code has already
        failed the run, naming the failing test."""
        await self.exited.wait(f"{self.name} runs")
        assert self.exit_code is not None
        return self.exit_code

    # ------------------------------------------------------------------ requests: polling is not progress
    def _activity(self, delta: int) -> None:
        if delta:  # a request being read: in flight (the wait looks again), its arrival judged once read whole
            self._inflight = max(0, self._inflight + delta)
            self.world._poke_outside()
            return
        super()._activity(0)

    def _spawn_request(self, name: str, fn: Any, *args: Any) -> str:
        method, target, headers = args[0], args[1], args[2]
        if method == "GET" and self.world._real is None and not _is_watch(target):
            key = (target, headers.get("accept", ""))
            fn = self._recording(fn, key)
            if key in self._answers:  # not progress, unless the store moved: judged now if the world waits (no
                # step runs meanwhile, so the store is what it will be when the wait settles), else when it settles
                self._repeats.append((key, (name, fn, *args)))
                if self.world._outside_waiting:
                    self._judge_repeats(keep=True)
                return name
        name = super()._spawn_request(name, fn, *args)
        super()._activity(0)  # a request that is progress: the scheduler waits for the process to go quiet
        return name

    def settled(self) -> None:
        self._judge_repeats(keep=False)
        super().settled()

    def _judge_repeats(self, *, keep: bool) -> None:
        """Answer each repeated read at once whose answer is the store's now; the others are steps, made actors
        when the wait settles (``keep``: they stay for it) with the other requests that came meanwhile."""
        repeats, self._repeats = self._repeats, []
        revision = self.api.resource_version
        for key, (name, fn, *args) in repeats:
            answer = self._answers.get(key)
            if answer is not None and answer[0] == revision and len(self.popens) and not self.process.crashed:
                box, done = args[4], args[5]
                box["reply"], box["at_once"] = answer[1], True
                done.set()
                self.reads_at_once += 1
                self._polled_at = real_monotonic()
            elif keep:
                self._repeats.append((key, (name, fn, *args)))
            else:  # the store moved since: this read is a step (settled with the other arrivals)
                self._arrived.append((name, args[3], len(self.popens), fn, tuple(args)))

    def quiet_for(self) -> float | None:
        """As :class:`ExternalOperator`'s, except that while the test polls (a read answered at once within the
        last ``quiet``), its CPU is the polling's, not work: the traffic rule alone applies then (a reconcile of
        the process's own controllers sends requests, which are traffic)."""
        if self._started_at is not None and real_monotonic() - self._started_at > self._timeout:
            self._time_out()
        return self._quiet_for(look=real_monotonic() - self._polled_at >= self._quiet)

    def _recording(self, fn: Any, key: tuple[str, str]) -> Any:
        """``fn`` (a read's handling), keeping its answer for the next identical read: only when the store did not
        move while it was computed, so the answer is the store's at the revision it is kept with."""
        api = self.api

        async def read(*args: Any) -> None:
            before = api.resource_version
            await fn(*args)
            reply = args[4].get("reply")
            if reply is not None and reply.watch is None and reply.code < 500 and api.resource_version == before:
                self._answers[key] = (before, reply)
            else:
                self._answers.pop(key, None)

        return read

    # ------------------------------------------------------------------ its end is the verdict
    def holds(self) -> bool:
        """The scenario awaits the command's end: while it runs, the world waits for it."""
        return self.exit_code is None and self.popen is not None

    def check(self) -> None:
        """The command exited: its code is the verdict (see the module)."""
        code = self._exited()
        if code is None:
            return
        self.exited.set()
        world = self.world
        output = self._read(len(self.popens)) if self._dir is not None else ""
        if code == 0:
            if world.noting:
                world.note(f"{self.name} passed (exit 0)", kind="log", process=self.name)
            return
        command = " ".join(self.argv)
        if self.requests == 0 or code in (126, 127):
            tail = self._output_tail(len(self.popens))
            world._fail("misuse", f"{self.name} could not run",
                        f"the test command ({command}) exited with code {code} before it sent the apiserver a "
                        f"request: it did not run against it (it does not build, or its command or environment is "
                        f"wrong){tail}", None)
            return
        failed = failing_tests(output)
        if failed:
            first, message = failed[0]
            more = f" (and {len(failed) - 1} more: {', '.join(n for n, _ in failed[1:4])})" if len(failed) > 1 else ""
            name = f"test {first} failed"
            said = f"{first} failed{more}" + (f": {message}" if message else "")
        else:
            name, said = f"{self.name} failed", "no failing test named in its output"
        world._fail("oracle", name, f"the test command exited with code {code}: {said} ({command})"
                    + self._output_tail(len(self.popens), lines=8), None)

    def _time_out(self) -> None:
        if self.world._violation is None:
            self.world._fail("runaway", f"{self.name} did not finish",
                             f"the test command ({' '.join(self.argv)}) ran longer than its timeout of "
                             f"{self._timeout:g} real seconds; raise it (hunt-test --timeout) if the suite is that "
                             f"long{self._output_tail(len(self.popens), lines=8)}", None)
        self.exited.set()


def _is_watch(target: str) -> bool:
    query = target.partition("?")[2]
    return any(part in ("watch=true", "watch=1") for part in query.split("&"))
