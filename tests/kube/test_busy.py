"""Whether an operator process still computes (``harness.operators._busy``): the quiescence wait asks, not only its sockets.

The states and times read are Linux's ``proc(5)``: ``/proc/<pid>/task/<tid>/stat``
(state ``R`` running or runnable, ``S`` sleeping; ``utime``/``stime``) and
``.../children``. Elsewhere the class says "not busy" and the tests that need
``/proc`` skip with that reason.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import ExternalOperator
from harness.operators._busy import ProcessLoad
from harness.sim import run_once
from harness.sim._choice import _Canonical

needs_proc = pytest.mark.skipif(not ProcessLoad.available, reason="reads Linux's /proc (proc(5)); none here")

SPIN = "while True: pass"
SLEEP = "import time; time.sleep(60)"


@contextmanager
def _process(argv: list[str]) -> Iterator[subprocess.Popen[bytes]]:
    """``argv`` in a session of its own, ended with every process it started (a shell's child outlives the shell's
    own SIGKILL: left running, a CPU loop burns a core for ever)."""
    popen = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        yield popen
    finally:
        with suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGKILL)
        popen.wait()


def _settles(load: ProcessLoad, bound: float = 20.0) -> bool:
    """Whether ``load`` reads "not busy" twice in a row, 0.1 s apart, within ``bound`` real seconds (a fresh
    interpreter computes while it starts: its imports)."""
    end = time.monotonic() + bound
    quiet = 0
    while time.monotonic() < end:
        quiet = quiet + 1 if not load.busy() else 0
        if quiet >= 2:
            return True
        time.sleep(0.1)
    return False


@needs_proc
def test_process_load_tells_computing_from_waiting() -> None:
    """A process in a CPU loop is busy at every look (running or runnable, its ticks growing); one asleep in
    ``time.sleep`` settles to not busy once its start-up is over."""
    with _process([sys.executable, "-c", SPIN]) as spinning:
        load = ProcessLoad(spinning.pid)
        assert all(load.busy() for _ in range(5))
    with _process([sys.executable, "-c", SLEEP]) as sleeping:
        assert _settles(ProcessLoad(sleeping.pid))


@needs_proc
def test_process_load_sees_descendants() -> None:
    """An operator started through a shell (``sh -c "./manager; ..."``) waits for its child: the shell sleeps
    while the child computes, and the tree counts as busy."""
    shell = ["sh", "-c", f'"{sys.executable}" -c "{SPIN}"; true']  # (the "; true" keeps sh from exec'ing)
    with _process(shell) as sh:
        load = ProcessLoad(sh.pid)
        end = time.monotonic() + 20
        while not all(load.busy() for _ in range(3)):  # (until the child exists)
            assert time.monotonic() < end, "the shell's child never showed up as busy"
            time.sleep(0.05)
    with _process(["sh", "-c", f'"{sys.executable}" -c "{SLEEP}"; true']) as sh:
        assert _settles(ProcessLoad(sh.pid))


def test_process_load_of_a_gone_process_is_not_busy() -> None:
    """A process that exited (and was reaped) is not busy: the wait falls back to its traffic."""
    with _process([sys.executable, "-c", "pass"]) as p:
        p.wait()
        assert ProcessLoad(p.pid).busy() is False


#: an operator that answers nothing for a while: after its first reply it computes (0.6 s of its own CPU time,
#: whatever the machine's speed) before its next request, silent on the wire all along
COMPUTES_THEN_CREATES = """
import base64, json, os, ssl, time, urllib.request, yaml
cluster = yaml.safe_load(open(os.environ["KUBECONFIG"]))["clusters"][0]["cluster"]
server = cluster["server"]
tls = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
urllib.request.urlopen(server + "/api/v1/namespaces/default/configmaps", context=tls).read()
start = time.process_time()
while time.process_time() - start < 0.6:
    pass
body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "computed"}}).encode()
urllib.request.urlopen(urllib.request.Request(server + "/api/v1/namespaces/default/configmaps", data=body,
                       headers={"Content-Type": "application/json"}, method="POST"), context=tls).read()
time.sleep(60)
"""


def _creations() -> list[str]:
    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        ExternalOperator(api, "op", [sys.executable, "-c", COMPUTES_THEN_CREATES], quiet=0.15).start()
        await world.sleep(1.0, "user waits")  # virtual: the process is quiescent before time moves
        await api.create(KubeObject("ConfigMap", "default", "user"))
        await world.sleep(1.0, "user waits")

    out = run_once(scenario, _Canonical())
    assert out.violation is None, out.violation
    return [r.label.split()[-1] for r in out.trace if r.label.startswith("create ConfigMap")]


@needs_proc
def test_quiescence_waits_for_a_process_that_computes() -> None:
    """The process's POST comes 0.6 s of computing after its first reply, four times ``quiet``: the wait sees it
    compute and the POST comes before virtual time moves, so the user's create follows it. Without the look at
    its CPU (the traffic rule alone) each wait ended after 0.15 s of silence and the user's create came first
    (measured: the run was over before the process's POST came)."""
    assert _creations() == ["default/computed", "default/user"]
    available = ProcessLoad.available
    try:
        ProcessLoad.available = False  # the traffic rule alone, as where there is no /proc
        assert _creations()[0] == "default/user"  # (the process's POST came later, or after the run had ended)
    finally:
        ProcessLoad.available = available


#: a thread that blocks in ``poll(2)`` with a relative timeout of 400 ms, again and again
POLLS = "import select\np = select.poll()\nwhile True:\n    p.poll(400)"


@needs_proc
def test_a_relative_timeout_is_judged_by_when_it_ends() -> None:
    """A process whose only thread sleeps in ``poll(..., 400)`` over and over is settled for a horizon 100 ms ahead
    only while its call has more than 100 ms left: every look that said "settled" saw the thread sleep on past
    that horizon (its next run came later), although the call's length, 400 ms, is always longer than the horizon
    (judged by its length, a call 350 ms old would count as settled with 50 ms left). And for a horizon a second
    ahead it is never settled: each of its calls ends within it."""
    from harness.operators._waits import ThreadWaits

    if not ThreadWaits.available:
        pytest.skip("reads the threads' system calls (Linux x86-64 or arm64)")
    with _process([sys.executable, "-c", POLLS]) as polling:
        time.sleep(0.5)  # (its start-up)
        tid = str(polling.pid)
        waits, far = ThreadWaits(), ThreadWaits()
        looks: list[tuple[float, bool, bytes]] = []
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            now = time.monotonic()
            said = waits.settled([polling.pid], now + 0.1)
            assert not far.settled([polling.pid], now + 1.0)
            looks.append((now, said, Path(f"/proc/{polling.pid}/task/{tid}/schedstat").read_bytes()))
            time.sleep(0.005)
    settled = [i for i, (_, said, _) in enumerate(looks) if said]
    assert settled, "never settled: a call with more than 100 ms left should have been"
    for i in settled:
        at, _, runs = looks[i]
        woke = next((t for t, _, r in looks[i + 1:] if r != runs), None)  # the first look that saw it run again
        assert woke is None or woke > at + 0.1, (at, woke)

