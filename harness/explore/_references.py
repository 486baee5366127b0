"""How a trace file and the CLI name a scenario, and how that name is resolved to a marked one.

A scenario reference -- what a trace file's ``scenario`` field and the CLI's
``SCENARIO`` argument hold -- is one of::

    package.module:qualname     a module on the import path
    path/to/file.py:qualname    a Python file; in a trace file, relative to the trace's folder

never ``__main__``: a function defined in a script run as ``python file.py`` is
named by that file. A registered race is named by the module that defines it.

A trace file is untrusted input (it comes from a CI artifact, a bug report, a
colleague), so it may only name a *marked* scenario:

- a function decorated with :func:`scenario`,
- a :class:`~harness.RaceMachine` subclass (or its ``scenario``),
- the scenario of a :class:`Race` registered through the entry-point group
  :data:`ENTRY_POINT_GROUP` (how pytest finds plugins; ``races/`` registers its
  races the same way).

The mark is checked twice: first in the module's *source*, located and parsed
without executing anything, so a file naming ``os:system`` imports nothing and
calls nothing; the decorator counts only when it resolves through the module's
own imports to :func:`scenario` (a look-alike ``scenario = lambda f: f`` is no
mark, see :class:`~._source._Names`); then on the imported object. A name the source does
not define at all is reported as missing ("no function 'scenaro' in model.py
(did you mean 'scenario'?)") before any question of marking. Where a trace's
file may lie (under the trace's folder or the current one) is checked when the
trace is loaded (``_counterexample._check_scenario_file``). Modules that provide registered
races are imported without the source check (the entry point itself says they
hold scenarios), and the object check still applies. The CLI resolves what a
user types by the same rules, so whatever ``hunt`` accepts, ``replay`` accepts.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import re
import sys
import types
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from .._errors import HarnessError, TraceFileError, UsageError
from ._scenarios import _MARK, ENTRY_POINT_GROUP, _registered, is_marked, race_modules
from ._source import _read_source, marked_in_source, missing_in_source, module_source, syntax_error_in

Scenario = Callable[..., Awaitable[object]]

_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_QUALNAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


# --------------------------------------------------------------------------- files as modules
_FILE_MODULES: dict[Path, types.ModuleType] = {}
_MODULE_FILES: dict[str, Path] = {}


def file_of_module(module_name: str) -> Path | None:
    """The file a module was loaded from by :func:`load_file`, or a script's file for ``__main__``."""
    if module_name in _MODULE_FILES:
        return _MODULE_FILES[module_name]
    if module_name == "__main__":
        main_file = getattr(sys.modules.get("__main__"), "__file__", None)
        if isinstance(main_file, str) and main_file.endswith(".py") and Path(main_file).is_file():
            return Path(main_file).resolve()
    return None


def load_file(path: Path) -> types.ModuleType:
    """Load a Python file as a module once per process (the running script is its ``__main__``).

    The module gets a private name (never a name an ``import`` could mean) and its
    folder goes at the *end* of ``sys.path``, so it can import modules next to it
    without shadowing any installed module.
    """
    path = path.resolve()
    module = _FILE_MODULES.get(path)
    if module is not None:
        return module
    main = sys.modules.get("__main__")
    main_file = getattr(main, "__file__", None)
    if main is not None and isinstance(main_file, str) and Path(main_file).resolve() == path:
        return main
    stem = re.sub(r"\W", "_", path.stem)
    name = f"_race_harness_file_{stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:10]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise UsageError(f"{path} cannot be loaded as a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and typing look their module up here while it runs
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.append(folder)
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    _FILE_MODULES[path] = module
    _MODULE_FILES[name] = path
    return module


# --------------------------------------------------------------------------- references
def is_file_ref(where: str) -> bool:
    """``path/to/file.py`` (a file) rather than ``package.module``."""
    return where.endswith(".py") or "/" in where or "\\" in where or where.startswith(".")


def split_ref(ref: str, error: type[HarnessError] = TraceFileError) -> tuple[str, str]:
    """``"pkg.mod:fn"`` -> ``("pkg.mod", "fn")``; a malformed reference is ``error``."""
    where, colon, qualname = str(ref).rpartition(":")
    if not colon or not where or not _QUALNAME.fullmatch(qualname):
        raise error(
            f"the scenario {ref!r} is not of the form package.module:function or path/to/file.py:function"
        )
    if not is_file_ref(where) and not _MODULE_NAME.fullmatch(where):
        raise error(f"the scenario {ref!r} names no module: {where!r} is neither a module name nor a .py file")
    if where == "__main__":
        raise error(
            f"the scenario {ref!r} names __main__, which means a different program in every process; "
            "name the file that defines it instead (path/to/file.py:function)"
        )
    return where, qualname


def portable_ref(ref: str, folder: Path) -> str:
    """A reference as a trace file in ``folder`` stores it: a file path relative to that folder.

    A scenario of ``__main__`` without a file (an interactive session or
    ``python -c``) cannot be stored: the message says what to do.
    """
    where, _, qualname = ref.rpartition(":")
    if where == "__main__":
        raise UsageError(
            f"the scenario {qualname!r} is defined in an interactive session or `python -c`, so no trace file "
            "can name it; define it in a file (run as `python file.py`, or `python -m harness hunt "
            "file.py:function`) or a module, and mark it with @harness.scenario"
        )
    if not is_file_ref(where):
        return ref
    try:
        rel = os.path.relpath(Path(where).resolve(), folder.resolve())
    except ValueError:  # another drive (Windows): no relative path exists
        return ref
    return f"{Path(rel).as_posix()}:{qualname}"


def resolve(
    ref: str, *, base: Path | None = None, error: type[HarnessError] = TraceFileError, source: str = "a trace file"
) -> Scenario:
    """The marked scenario ``ref`` names; a relative file path is taken from ``base`` (default: the cwd).

    Refuses, with ``error`` and without importing it, a module or file whose
    source does not mark the name as a scenario.
    """
    where, qualname = split_ref(ref, error)

    def refusal(imported: bool) -> HarnessError:
        return error(
            f"the scenario {ref!r} is not marked as a scenario, so {source} may not run it"
            + ("" if imported else " (nothing was imported)")
            + ". Only a function decorated with @harness.scenario, a RaceMachine subclass, or the scenario of a race "
            f"registered in the {ENTRY_POINT_GROUP!r} entry-point group may be run; if you wrote {qualname}, "
            "decorate it with @harness.scenario (a RaceMachine subclass whose base class is in another module "
            "needs the decorator too)"
        )

    if is_file_ref(where):
        path = Path(where)
        if not path.is_absolute():
            path = (base or Path.cwd()) / path
        if not path.is_file():
            what = "is a folder" if path.is_dir() else "does not exist"
            raise error(f"the scenario file {where!r} {what} (looked for {path}); check {ref!r}")
        if path.suffix != ".py":
            raise error(f"the scenario file {path} is not a .py file; check {ref!r}")
        text = _read_source(path, ref, error)
        broken = syntax_error_in(text, str(where))
        if broken is not None:
            raise error(f"the scenario file has a syntax error: {broken}. Fix it and run the command again "
                        "(nothing was run)")
        missing = missing_in_source(text, qualname, path.name)
        if missing is not None:  # a typo is named as one, before any question of marking
            raise error(f"{missing}; check {ref!r}")
        if not marked_in_source(text, qualname):
            raise refusal(False)
        try:
            module: Any = load_file(path)
        except HarnessError:
            raise
        except (Exception, SystemExit) as exc:
            raise error(f"the scenario file {path} raised {type(exc).__name__} while loading: {exc}") from None
    else:
        module = sys.modules.get(where)
        if module is None and where not in race_modules() and _registered(where, qualname):
            module = sys.modules.get(where)  # imported by the entry point that registers it
        if module is None:
            if where not in race_modules():
                src = module_source(where)
                if src is None:
                    if importlib.util.find_spec(where.partition(".")[0]) is None:
                        raise error(
                            f"the scenario module {where!r} cannot be found; run from the folder where it is "
                            f"importable (or install its package), or name its file: path/to/file.py:{qualname}"
                        )
                    raise refusal(False)
                text = _read_source(src, ref, error)
                broken = syntax_error_in(text, str(src.name))
                if broken is not None:
                    raise error(f"the scenario module {where!r} has a syntax error: {broken}. Fix it and run the "
                                "command again (nothing was run)")
                missing = missing_in_source(text, qualname, f"module {where!r}")
                if missing is not None:
                    raise error(f"{missing}; check {ref!r}")
                if not marked_in_source(text, qualname):
                    raise refusal(False)
            try:
                module = importlib.import_module(where)
            except (Exception, SystemExit) as exc:
                raise error(
                    f"the scenario module {where!r} cannot be imported ({type(exc).__name__}: {exc}); run from the "
                    "folder where it is importable, or install its package"
                ) from None
    obj: Any = module
    for part in qualname.split("."):
        try:
            obj = inspect.getattr_static(obj, part) if isinstance(obj, types.ModuleType) else getattr(obj, part)
        except AttributeError:
            raise error(
                f"{where!r} has no {qualname!r}: it was renamed or removed; check {ref!r}, or re-run the hunt"
            ) from None
    if isinstance(obj, type) and getattr(obj, _MARK, False) is True and callable(getattr(obj, "scenario", None)):
        machine: Any = obj  # a RaceMachine subclass: its scenario classmethod
        obj = machine.scenario
    if not is_marked(obj):
        raise refusal(True)
    return obj  # type: ignore[no-any-return]
