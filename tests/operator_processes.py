"""An operator process that leaves processes behind, and the test's own look for them in ``/proc``.

The operator forks a child that ignores SIGTERM (it outlives its parent's
death by SIGTERM) and starts a daemon the classic way (fork, ``setsid()``,
fork again: another session and group, reparented to init), then talks to the
apiserver. Every process of it carries the test's own mark in its environment
(``LEAK_MARK``), set by the test and independent of the harness's marker, so
the test's look does not trust the code under test. Each writes a file named
after what it is into ``READY_DIR`` once it runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

#: argv[1]: "once" (one request, then sleeps) or "talks" (a request every 0.1 s: the wait for it never ends by
#: quiet, only by its bound); argv[2]: "stubborn" ignores SIGTERM (the harness's grace runs out: SIGKILL)
OPERATOR = r'''
import base64, os, signal, ssl, sys, time, urllib.request, yaml

ready = os.environ["READY_DIR"]


def note(what):
    with open(os.path.join(ready, f"{what}-{os.getpid()}"), "w") as f:
        f.write(f"{os.getsid(0)} {os.getpgrp()}")


if sys.argv[2:] == ["stubborn"]:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:  # a child that ignores SIGTERM: it outlives its parent's death by SIGTERM
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    note("child")
    while True:
        time.sleep(3600)
middle = os.fork()
if middle == 0:  # a daemon: setsid, fork again, the middle one exits (the daemon is reparented to init)
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        note("daemon")
        while True:
            time.sleep(3600)
    os._exit(0)
os.waitpid(middle, 0)
cluster = yaml.safe_load(open(os.environ["KUBECONFIG"]))["clusters"][0]["cluster"]
server, ca = cluster["server"], cluster.get("certificate-authority-data")
context = ssl.create_default_context(cadata=base64.b64decode(ca).decode()) if ca else None  # the served CA
while True:
    try:
        urllib.request.urlopen(server + "/api/v1/namespaces/default/configmaps", context=context).read()
    except OSError:  # the run ended and the apiserver with it: an operator retries, as client-go's reflector does
        time.sleep(0.1)
        continue
    note("operator")
    if sys.argv[1] == "once":
        time.sleep(3600)
    time.sleep(0.1)
'''

#: a scenario file for ``python -m harness hunt FILE:leaky``: the operator above, waited for up to a minute at
#: each choice when it talks, so a signal lands while the scheduler waits for it
SCENARIO = '''
import sys

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import ExternalOperator

OPERATOR = {operator!r}


@h.scenario
async def leaky(world: h.World, *, stubborn: bool = False) -> None:
    api = APIServer(world)
    ExternalOperator(api, "leaky", [sys.executable, OPERATOR, "talks", "stubborn" if stubborn else "plain"],
                     quiet=0.3, bound=60.0, startup=60.0).start()
    await world.sleep(1.0, "user waits")
    await api.create(KubeObject("ConfigMap", "default", "x"))
    await world.sleep(1.0, "user waits")
'''


def marked(mark: str) -> list[int]:
    """The live (not zombie) processes whose environment holds ``LEAK_MARK=<mark>``."""
    wanted = f"LEAK_MARK={mark}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_bytes()
            env = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        if stat[stat.rfind(b")") + 2:][:1] != b"Z" and wanted in env.split(b"\0"):
            found.append(int(name))
    return found


def gone_within(mark: str, seconds: float) -> list[int]:
    """The marked processes still there after up to ``seconds`` (a SIGKILL takes effect at once, a zombie's parent
    reaps it soon after): [] once none is left."""
    end = time.monotonic() + seconds
    while True:
        left = marked(mark)
        if not left or time.monotonic() > end:
            return left
        time.sleep(0.02)


def wait_for(ready: Path, what: str, seconds: float = 30.0) -> list[Path]:
    end = time.monotonic() + seconds
    while not (found := sorted(ready.glob(f"{what}-*"))):
        assert time.monotonic() < end, f"no {what} of the operator ran within {seconds} s: {sorted(ready.iterdir())}"
        time.sleep(0.02)
    return found


@contextlib.contextmanager
def leak_check(tmp: Path) -> Iterator[tuple[str, Path, Path]]:
    """(mark, operator script, ready folder); whatever the test's outcome, every marked process is killed after."""
    mark = uuid.uuid4().hex
    ready = tmp / "ready"
    ready.mkdir()
    script = tmp / "leaky_operator.py"
    script.write_text(OPERATOR)
    try:
        yield mark, script, ready
    finally:
        for pid in marked(mark):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
