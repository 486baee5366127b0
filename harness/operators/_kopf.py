"""A kopf operator, unmodified, as a process of the world: ``kopf_operator(api, name, "handlers.py").start()``.

kopf is how most Python operators are written: handlers registered by
decorators at import (``@kopf.on.create``), run by kopf's own ``operator()``
coroutine on asyncio, talking through aiohttp. This runs exactly that, as
``kopf run --standalone -n default handlers.py`` would, on an
:class:`Operator` with ``asyncio=True`` (``harness.sim._asyncio``): every kopf
task an actor, every wait (a watch event, a handler's ``delay``/``backoff``,
a timer, a daemon's sleep, the batching of events) a choice on the virtual
clock, every request a choice of the apiserver's, a sync handler a lockstep
thread.

Each incarnation of the operator (the run's first, a restart after a crash)
imports the handlers' module afresh, into a fresh registry, with the
environment the scenario gave (``env=``): kopf's registry and the module's
globals (a ``FIXED = os.environ.get("FIXED") == "1"``) are what they would be
in a new process. The module object is not kept in ``sys.modules`` past the
import, so runs never share it.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping
from types import ModuleType
from typing import Any

from .._errors import OperatorNotLoaded
from ..kube import APIServer
from ._modules import load_fresh
from ._operator import Operator


def kopf_operator(api: APIServer, name: str, handlers: str | os.PathLike[str], *,
                  namespaces: Collection[str] = ("default",), env: Mapping[str, str] | None = None,
                  **options: Any) -> Operator:
    """An :class:`Operator` running kopf with the handlers of ``handlers`` (a ``.py`` file or a module's name).

    ``namespaces``: what kopf serves (``kopf run -n``; ``()`` for
    ``--all-namespaces``). ``options`` are :class:`Operator`'s (``crash_faults``,
    ``restart_window``, ``max_lag``...). Start it with ``.start()``.
    """
    from .._tested import require_tested

    require_tested("kopf")  # its registry and timers are reached from the world's loop (harness/_tested.py)
    return Operator(api, name, _run_kopf, str(handlers), tuple(namespaces), env=env, asyncio=True, **options)


def _load(handlers: str) -> ModuleType:
    """Import the handlers' module afresh (its decorators register into kopf's current default registry)."""
    return load_fresh(handlers, "the kopf handlers")


async def _run_kopf(handlers: str, namespaces: tuple[str, ...]) -> None:
    """One incarnation: a fresh registry, the handlers imported into it, kopf's ``operator()`` standalone."""
    import kopf
    from kopf._core.intents.registries import SmartOperatorRegistry  # kopf's default: its login fallbacks

    registry = SmartOperatorRegistry()
    saved = kopf.get_default_registry()
    kopf.set_default_registry(registry)
    try:
        _load(handlers)
    finally:
        kopf.set_default_registry(saved)
    kinds = (registry._indexing, registry._watching, registry._spawning, registry._changing, registry._webhooks)
    if not any(r.get_all_handlers() for r in kinds):  # (activities alone, login and startup, watch nothing)
        raise OperatorNotLoaded(f"the kopf handlers {handlers!r} register no resource handler (@kopf.on.create, "
                                "@kopf.on.event, @kopf.daemon, @kopf.index, ...): kopf would start and watch nothing, "
                                "so no run could say anything of it. Give kopf_operator the file `kopf run` runs")
    await kopf.operator(registry=registry, standalone=True, clusterwide=not namespaces,
                        namespaces=list(namespaces))
