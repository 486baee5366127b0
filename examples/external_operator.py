"""An operator process searched at its API boundary: ``examples/external/secret_operator.py`` run as it ships.

The scenario creates a ConfigMap that asks for a Secret, waits until the
operator made it, then updates the ConfigMap (a user edits it). The oracle: one
Secret per ConfigMap, always. The operator runs as its own OS process
(:class:`~harness.operators.ExternalOperator`); its Secret watch's deliveries are
held in their windows by the search, which finds the duplicate; ``fixed=True``
runs the operator's fix (a live LIST before it creates), which stays clean.
"""

from __future__ import annotations

import sys
from pathlib import Path

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import ExternalOperator


def _operator() -> Path:
    """The operator's program: beside this file, or (a hunt's copy of this file in a report folder) in the package."""
    here = Path(__file__).resolve().parent / "external" / "secret_operator.py"
    if here.is_file():
        return here
    import examples.external

    return Path(examples.external.__file__).resolve().parent / "secret_operator.py"


OPERATOR = _operator()
KOPF_OPERATOR = OPERATOR.with_name("kopf_operator.py")
OWNER = "app.example/owner"


@h.scenario
async def scenario(world: h.World, *, fixed: bool = False, crash_faults: bool = False) -> None:
    api = APIServer(world)
    op = ExternalOperator(api, "secret-operator", [sys.executable, str(OPERATOR), "--fixed" if fixed else "--buggy"],
                          crash_faults=crash_faults)
    await _user(world, api, op)


def _kopf_quiet() -> float:
    """The quiet kopf needs. Its computing the wait sees (``harness.operators._busy``); what it does not see is a timer:
    kopf before 1.42 batches an object's events for 0.1 s before its handlers run (the process sleeps meanwhile),
    so the quiet outlasts that with a margin. kopf 1.42 removed the batching (``settings.batching.batch_window``
    "affects nothing"): it reacts to an event or a reply at once, and the quiet only covers the loopback's
    delivery: 0.1 s kept the canonical run's API order in 8 of 8 runs, 5 of them beside two CPU-bound processes
    (0.05 s in 7 of 7, 4 beside them)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        major, minor = (int(x) for x in version("kopf").split(".")[:2])
    except (PackageNotFoundError, ValueError):
        return 0.4
    return 0.4 if (major, minor) < (1, 42) else 0.1


@h.scenario
async def kopf_scenario(world: h.World, *, fixed: bool = False) -> None:
    """The same user and oracle, the operator an unmodified kopf one (``kopf run --standalone -n default``)."""
    api = APIServer(world)
    op = ExternalOperator(api, "kopf-operator", [sys.executable, "-m", "kopf", "run", "--standalone", "-n", "default",
                                                 str(KOPF_OPERATOR)], env={"RACE_FIXED": "1" if fixed else "0"},
                          quiet=_kopf_quiet())
    await _user(world, api, op)


async def _user(world: h.World, api: APIServer, op: ExternalOperator) -> None:
    world.state["operator"] = op

    def secrets_of(owner: str) -> list[str]:
        return [s.name for s in api.peek_all("Secret") if s.labels.get(OWNER) == owner]

    world.invariant(lambda: len(secrets_of("app")) <= 1 or f"duplicate Secrets for app: {secrets_of('app')}",
                    "one Secret per ConfigMap")
    op.start()
    await api.create(KubeObject("ConfigMap", "default", "app", labels={"app.example/want": "secret"}))
    for _ in range(40):  # the operator creates it (each wait lets the process run: it is quiescent after)
        if secrets_of("app"):
            break
        await world.sleep(0.5, "user waits for the Secret")
    cm = await api.get("ConfigMap", "default", "app")
    cm.annotations["edited"] = "yes"
    await api.update(cm)
    await world.sleep(3.0, "user waits")
