"""A Go controller-runtime operator searched at its API boundary: ``examples/go`` run as it ships.

The operator (``examples/go/main.go``) is a controller-runtime 0.25 manager
on client-go 0.37 with two controllers: ``secret`` gives every ConfigMap
labelled ``app.example/want=secret`` one Secret it owns, ``orphan`` deletes a
Secret whose ConfigMap is gone. Its bug (``--buggy``): the secret controller
reads the Secrets from the manager's cache and, finding none, creates one with
a generated name; the cache lags its own write, so a reconcile triggered by
an edit of the ConfigMap before the Secret's ADDED arrives creates a second.
The fix (``--fixed``) is the pattern upstream uses for a child that is one per
owner: a deterministic name, AlreadyExists read as done.

The user and the oracle are ``examples/external_operator.py``'s: a ConfigMap
that asks for a Secret, then an edit of it; one Secret per ConfigMap, always.
The manager runs with ``--leader-elect=false`` (a single process has nothing
to elect), as :class:`~harness.operators.ExternalOperator` asks.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import harness as h
from examples.external_operator import _user
from harness.kube import APIServer
from harness.operators import ExternalOperator

GO_EXAMPLE = Path(__file__).resolve().parent / "go"


def _sources_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted([GO_EXAMPLE / "go.mod", GO_EXAMPLE / "go.sum", *GO_EXAMPLE.glob("*.go")]):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def build_manager() -> Path:
    """The manager binary, ``examples/go/bin/manager``, built now if its sources changed since it was built.

    ``go build`` of a controller-runtime manager downloads its modules (a cold
    module cache) and compiles for a minute or two on a busy two-core machine;
    after that it is a link, or nothing: the digest of the sources it was built
    from is kept beside it (``bin/`` is gitignored). Raises ``RuntimeError``
    saying what to do when Go is missing or the build fails.
    """
    go = shutil.which("go")
    if go is None:
        raise RuntimeError("the Go example operator needs the Go toolchain (1.26+): `go` is not on PATH; install "
                           "Go, or run the Python operators of examples/external_operator.py")
    binary, stamp = GO_EXAMPLE / "bin" / "manager", GO_EXAMPLE / "bin" / "manager.sources"
    want = _sources_digest()
    if binary.is_file() and stamp.is_file() and stamp.read_text() == want:
        return binary
    binary.parent.mkdir(exist_ok=True)
    partial = binary.with_name(f"manager.{os.getpid()}.partial")  # (two builds at once each rename their own)
    done = subprocess.run([go, "build", "-o", str(partial), "."], cwd=GO_EXAMPLE, capture_output=True, text=True,
                          timeout=1200, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"go build in examples/go failed (exit {done.returncode}); run it there by hand to see "
                           f"why:\n{done.stderr[-3000:]}")
    os.replace(partial, binary)
    stamp.write_text(want)
    return binary


#: The quiet the manager needs (real seconds without traffic or computing before it counts as waiting for the world).
#: Its computing the wait sees; what it does not see are its timers: client-go's ``WaitForCacheSync`` polls every
#: 100 ms (``tools/cache/shared_informer.go``, ``syncedPollPeriod``) before a controller's workers start, so its
#: first reconcile comes up to 100 ms (plus a busy machine's wake-up) after the cache it waits for is full. The other
#: timers of a manager stay out of a run: leader election's renew ticker (off: ``--leader-elect=false``), the work
#: queue's (controller-runtime's priority queue, its default: an event's ``Add`` is handed to a worker at once,
#: ``pkg/controller/priorityqueue/priorityqueue.go``; only a failed or requeued reconcile waits on its rate
#: limiter, and this one's succeed), the reflector's re-watch (minutes: past the horizon). The canonical run's API order over 10 runs, each a
#: fresh process: 0.3 s gave 1 order in 10 of 10 runs idle and 10 of 10 beside two CPU-bound processes; 0.15 s
#: beside them gave 5 different orders in 10 runs (the Secret's POST after the user's next step instead of before).
#: (An Event the manager records is named after its clock; its step says ``app.<clock>``, so that name is no
#: difference between two runs: ``harness.kube._objects.step_ref``.)
GO_QUIET = 0.3


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False, crash_faults: bool = False,
                   quiet: float = GO_QUIET) -> None:
    # client-go's reflector ends each watch after 5 to 10 minutes (timeoutSeconds, ``minWatchTimeout``) and watches
    # again, for ever: the run ends at a horizon well past the user's last step instead
    world.horizon = 30.0
    api = APIServer(world)
    op = ExternalOperator(api, "go-operator", [str(build_manager()), "--leader-elect=false",
                                               "--fixed" if fixed else "--buggy"],
                          crash_faults=crash_faults, quiet=quiet)
    await _user(world, api, op)
