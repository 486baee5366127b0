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

import importlib
import importlib.util
import os
import sys
from collections.abc import Collection, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from .._errors import FILE_NOT_FOUND_EVENT, OperatorNotLoaded
from ._apiserver import APIServer
from ._operator import Operator


def kopf_operator(api: APIServer, name: str, handlers: str | os.PathLike[str], *,
                  namespaces: Collection[str] = ("default",), env: Mapping[str, str] | None = None,
                  **options: Any) -> Operator:
    """An :class:`Operator` running kopf with the handlers of ``handlers`` (a ``.py`` file or a module's name).

    ``namespaces``: what kopf serves (``kopf run -n``; ``()`` for
    ``--all-namespaces``). ``options`` are :class:`Operator`'s (``crash_faults``,
    ``restart_window``, ``max_lag``...). Start it with ``.start()``.
    """
    return Operator(api, name, _run_kopf, str(handlers), tuple(namespaces), env=env, asyncio=True, **options)


def _load(handlers: str) -> ModuleType:
    """Import the handlers' module afresh (its decorators register into kopf's current default registry)."""
    if handlers.endswith(".py") or os.sep in handlers or "/" in handlers:
        path = Path(handlers)
        if not path.is_file():
            sys.audit(FILE_NOT_FOUND_EVENT, str(path.absolute()))  # a replay of a copy names what its folder lacks
            raise OperatorNotLoaded(f"the kopf handlers file {handlers!r} does not exist: give kopf_operator the "
                                    "path of the file `kopf run` would run, or a module's importable name")
        spec = importlib.util.spec_from_file_location(path.stem, path)
    else:
        try:
            spec = importlib.util.find_spec(handlers)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            raise OperatorNotLoaded(f"no module named {handlers!r}: give kopf_operator the path of the file "
                                    "`kopf run` would run, or a module's importable name")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get(spec.name)
    sys.modules[spec.name] = module  # (a module that imports itself by name finds this incarnation)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # (its own bug: a syntax error, an import it lacks)
        raise OperatorNotLoaded(f"the kopf handlers {handlers!r} could not be imported: {type(exc).__name__}: "
                                f"{exc}; run `python -c 'import runpy; runpy.run_path(\"{handlers}\")'` to see why") from exc
    finally:
        if saved is None:
            sys.modules.pop(spec.name, None)
        else:
            sys.modules[spec.name] = saved
    return module


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
    await kopf.operator(registry=registry, standalone=True, clusterwide=not namespaces,
                        namespaces=list(namespaces))
