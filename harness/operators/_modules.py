"""An operator's module imported afresh for each incarnation, as a new process imports it.

A process that restarts imports its code again: module-level state (a cache, a counter, a client built at import)
starts empty, and configuration read at import (``FIXED = os.environ.get("FIXED") == "1"``) reads the environment
the process was started with. Running an operator in the harness's own process keeps a module imported once for
every run and every restart, unless the operator is named by its file or module and imported here per incarnation.

The module object never stays in ``sys.modules`` past its import (a module that imports itself by name meanwhile
finds this incarnation's), so runs never share it. Its own imports (``from .helpers import x``, libraries) are
imported as Python imports them, once per process: only the named module is fresh.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from .._errors import FILE_NOT_FOUND_EVENT, OperatorNotLoaded


def load_fresh(source: str, what: str) -> ModuleType:
    """Import ``source`` (a ``.py`` file's path or a module's importable name) afresh; ``what`` names it in errors
    ("the kopf handlers", "the operator")."""
    if source.endswith(".py") or os.sep in source or "/" in source:
        path = Path(source)
        if not path.is_file():
            sys.audit(FILE_NOT_FOUND_EVENT, str(path.absolute()))  # a replay of a copy names what its folder lacks
            raise OperatorNotLoaded(f"{what} file {source!r} does not exist: give the path of the file the process "
                                    "would run (relative to where the hunt runs, or beside the scenario: "
                                    "Path(__file__).parent / 'operator.py'), or a module's importable name")
        spec = importlib.util.spec_from_file_location(path.stem, path)
    else:
        try:
            spec = importlib.util.find_spec(source)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            raise OperatorNotLoaded(f"no module named {source!r} for {what}: give the path of the file the process "
                                    "would run, or a module's importable name")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get(spec.name)
    sys.modules[spec.name] = module  # (a module that imports itself by name finds this incarnation)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # (its own bug: a syntax error, an import it lacks)
        raise OperatorNotLoaded(f"{what} {source!r} could not be imported: {type(exc).__name__}: {exc}; run "
                                f"`python -c 'import runpy; runpy.run_path(\"{source}\")'` to see why") from exc
    finally:
        if saved is None:
            sys.modules.pop(spec.name, None)
        else:
            sys.modules[spec.name] = saved
    return module
