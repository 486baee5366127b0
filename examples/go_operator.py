"""A Go controller-runtime operator searched at its API boundary: ``examples/go`` run as it ships.

The operator (``examples/go/main.go``, its reconcilers in ``internal/controller``) is a controller-runtime
0.25 manager on client-go 0.37 with two controllers: ``secret`` gives every ConfigMap
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


def _sources_digest(*, tests: bool) -> str:
    """The digest of what a build reads: go.mod, go.sum and the package sources (``_test.go`` files with ``tests``)."""
    digest = hashlib.sha256()
    sources = [p for p in GO_EXAMPLE.rglob("*.go") if "bin" not in p.relative_to(GO_EXAMPLE).parts
               and (tests or not p.name.endswith("_test.go"))]
    for path in [GO_EXAMPLE / "go.mod", GO_EXAMPLE / "go.sum", *sorted(sources)]:
        digest.update(path.relative_to(GO_EXAMPLE).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _build(name: str, what: str, args: list[str], *, tests: bool) -> Path:
    """``examples/go/bin/NAME``, built by ``go ARGS -o bin/NAME.partial`` now if its sources changed since it was
    built (the digest of those sources is kept beside it as ``NAME.sources``; ``bin/`` is gitignored)."""
    go = shutil.which("go")
    if go is None:
        raise RuntimeError(f"the Go example operator's {what} needs the Go toolchain (1.26+): `go` is not on PATH; "
                           "install Go, or run the Python operators of examples/external_operator.py")
    binary, stamp = GO_EXAMPLE / "bin" / name, GO_EXAMPLE / "bin" / f"{name}.sources"
    want = _sources_digest(tests=tests)
    if binary.is_file() and stamp.is_file() and stamp.read_text() == want:
        return binary
    binary.parent.mkdir(exist_ok=True)
    partial = binary.with_name(f"{name}.{os.getpid()}.partial")  # (two builds at once each rename their own)
    command = [go, *args[:1], "-o", str(partial), *args[1:]]
    done = subprocess.run(command, cwd=GO_EXAMPLE, capture_output=True, text=True, timeout=1200, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"`go {' '.join(args)}` in examples/go failed (exit {done.returncode}); run it there by "
                           f"hand to see why:\n{(done.stdout + done.stderr)[-3000:]}")
    os.replace(partial, binary)
    stamp.write_text(want)
    return binary


def build_manager() -> Path:
    """The manager binary, ``examples/go/bin/manager``, built now if its sources changed since it was built.

    ``go build`` of a controller-runtime manager downloads its modules (a cold
    module cache) and compiles for a minute or two on a busy two-core machine;
    after that it is a link, or nothing: the digest of the sources it was built
    from is kept beside it (``bin/`` is gitignored). Raises ``RuntimeError``
    saying what to do when Go is missing or the build fails.
    """
    return _build("manager", "manager", ["build", "."], tests=False)


def build_envtest_suite() -> Path:
    """The envtest suite of ``examples/go/internal/controller`` compiled once, ``examples/go/bin/controller.test``
    (``go test -c``), rebuilt only when a source changed, as :func:`build_manager`.

    Run it as the test command (``bin/controller.test -ginkgo.no-color`` in ``internal/controller``, where ``go
    test`` runs a package's tests): ``go test`` itself would compile (or at least link and check its cache) before
    every run of a hunt. The variant is chosen by ``SECRET_OPERATOR_FIXED=1`` in its environment."""
    return _build("controller.test", "envtest suite", ["test", "-c", "./internal/controller"], tests=True)


def build_webhook_suite() -> Path:
    """The envtest suite of ``examples/go/internal/webhook/v1`` (the GeneratedSecret webhooks) compiled once,
    ``examples/go/bin/webhook.test``, rebuilt only when a source changed, as :func:`build_manager`.

    Run it in ``internal/webhook/v1`` (its CRD and webhook manifests are read from ``../../../config``) with
    ``USE_EXISTING_CLUSTER=true`` and ``KUBECONFIG`` naming the served API."""
    return _build("webhook.test", "webhook envtest suite", ["test", "-c", "./internal/webhook/v1"], tests=True)


#: The quiet the manager needs (real seconds without traffic or computing before it counts as waiting for the world).
#: Its computing the wait sees; what it does not see are its timers, and the longest chain of them between something
#: the world sends and the manager's reaction is at its start: after the bookmark that completes an informer's list,
#: each controller's source polls every 100 ms (client-go's ``WaitForCacheSync``, ``tools/cache/shared_informer.go``,
#: ``syncedPollPeriod``) first for the informer (controller-runtime's ``Informers.Get``, ``pkg/cache/internal/
#: informers.go``), then, with a new poll, for its own handler's initial events (``Kind.Start``, ``pkg/internal/
#: source/kind.go``), and only then do the workers start: the Secret's POST came 0.175 to 0.211 s after that bookmark
#: was written (10 runs). A poll is waited for while it falls within ``quiet`` of the last activity
#: (``harness.operators._waits``), so ``quiet`` must cover two polls and the computing between them unseen: 0.25 s.
#: The other timers of a manager stay out of a run: leader election's renew ticker (off: ``--leader-elect=false``),
#: the work queue's (controller-runtime's priority queue, its default: an event's ``Add`` is handed to a worker at
#: once, ``pkg/controller/priorityqueue/priorityqueue.go``; only a failed or requeued reconcile waits on its rate
#: limiter, and this one's succeed), the reflector's re-watch (minutes: past the horizon). The canonical run's API
#: order over 10 runs, each a fresh process, on two cores at a load average of 3 to 5 (other work beside it): 0.25 s
#: and 0.2 s each gave 1 order in 10 (0.2 s has no margin over the two polls), 0.15 s gave 7 orders in 10 (the
#: Secret's POST after the user's next step instead of before). (An Event the manager records is named after its
#: clock; its step says ``app.<clock>``, so that name is no difference between two runs:
#: ``harness.kube._objects.step_ref``.)
GO_QUIET = 0.25


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
