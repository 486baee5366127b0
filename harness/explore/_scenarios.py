"""Which scenarios the harness may run, and how a trace file names one.

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
mark, see :class:`_Names`); then on the imported object. A name the source does
not define at all is reported as missing ("no function 'scenaro' in model.py
(did you mean 'scenario'?)") before any question of marking. Where a trace's
file may lie (under the trace's folder or the current one) is checked when the
trace is loaded (``_counterexample._check_scenario_file``). Modules that provide registered
races are imported without the source check (the entry point itself says they
hold scenarios), and the object check still applies. The CLI resolves what a
user types by the same rules, so whatever ``hunt`` accepts, ``replay`` accepts.
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import types
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

from .._errors import HarnessError, TraceFileError, UsageError

#: the entry-point group third-party packages (and ``races/``) register races in
ENTRY_POINT_GROUP = "race_harness.races"

#: the attribute :func:`scenario` sets
_MARK = "__race_scenario__"
_KNOWN_OPEN = "__race_known_open__"


#: source files larger than this are not parsed for the mark (no scenario module is this large)
_MAX_SOURCE_BYTES = 8 * 2**20

Scenario = Callable[..., Awaitable[object]]
F = TypeVar("F")

_MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_QUALNAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


@overload
def scenario(fn: F, /) -> F: ...


@overload
def scenario(*, known_open: str) -> Callable[[F], F]: ...


def scenario(fn: F | None = None, /, *, known_open: str | None = None) -> F | Callable[[F], F]:
    """Mark an ``async def fn(world, **params)`` (or a RaceMachine class) as a scenario.

    Only marked scenarios may be named by a trace file, so a replay never runs a
    callable that was not written to be one::

        @harness.scenario
        async def lost_update(world: harness.World, *, fixed: bool = False) -> None: ...

    ``known_open`` says the fixed variant still fails, and why (a residual the
    upstream fix left, with its reference): the fixed variant is then *expected*
    to fail, as a registered race's ``Race.known_open``, and every output says
    "known open" with this text instead of hiding or failing it::

        @harness.scenario(known_open="kruise#2253: the update expectation is recorded after the write")
        async def sidecarset(world: harness.World, *, fixed: bool = False) -> None: ...
    """
    if fn is None:
        if not isinstance(known_open, str) or not known_open.strip():
            raise TypeError("@harness.scenario(known_open=...) takes the reason the fix leaves open, as text "
                            "(e.g. 'kruise#2253: the update expectation is recorded after the write')")

        def mark(f: F) -> F:
            scenario(f)
            setattr(f, _KNOWN_OPEN, known_open.strip())
            return f

        return mark
    target: Any = fn
    if not (inspect.iscoroutinefunction(target) or (isinstance(target, type) and getattr(target, _MARK, False) is True)):
        raise TypeError(
            f"@harness.scenario marks an 'async def' scenario function or a RaceMachine subclass, not {fn!r}"
        )
    setattr(fn, _MARK, True)
    return fn


def known_open_of(fn: Any) -> str | None:
    """The ``known_open`` text a scenario was marked with (``@harness.scenario(known_open=...)``), else None."""
    text = getattr(fn, _KNOWN_OPEN, None)
    return text if isinstance(text, str) else None


# --------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class Race:
    """A documented race: where it comes from, how to run it, what to expect.

    ``scenario(world, *, fixed: bool, **params)`` builds the cluster, spawns the
    actors and registers the oracles. ``known_open`` marks a case the upstream
    fix did not close: its fixed variant is *expected* to fail, and the output
    says so instead of hiding it. A package registers races with an entry point
    in the ``race_harness.races`` group naming a ``Race`` or a list of them::

        [project.entry-points."race_harness.races"]
        my_races = "my_package.races:RACES"
    """

    name: str
    title: str
    upstream: str  # "openkruise/kruise#1528 (fix PR #1526, fd7e86e8)"
    scenario: Callable[..., Awaitable[object]]
    params: dict[str, Any] = field(default_factory=dict)
    budget: int = 2000  # runs the default hunt may spend per variant
    strategy: str = "random"
    known_open: bool = False
    #: the fault kinds its hunt places (``--faults`` form): "all" once its fixed variant was checked
    #: clean under them; "default" leaves each component's own flags
    faults: str = "default"
    #: words a maintainer would expect in the minimal counterexample, in order
    key_events: tuple[str, ...] = ()


_REGISTRY: dict[str, Race] | None = None
_EXTRA: dict[str, Race] = {}


def _entry_points() -> list[Any]:
    from importlib.metadata import entry_points

    seen: set[tuple[str, str]] = set()
    out = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if (ep.name, ep.value) not in seen:  # an editable install can list a distribution twice
            seen.add((ep.name, ep.value))
            out.append(ep)
    # this project's own races first, in its declared order; then other packages' by name
    own = [ep for ep in out if _dist_name(ep) == "race-harness"]
    return own + sorted((ep for ep in out if _dist_name(ep) != "race-harness"), key=lambda e: (_dist_name(e), e.name))


def _dist_name(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    return str(getattr(dist, "name", "") or "")


def race_modules() -> frozenset[str]:
    """The modules the ``race_harness.races`` entry points name, read from metadata (nothing imported)."""
    return frozenset(str(ep.value).partition(":")[0].strip() for ep in _entry_points()) | {
        r.scenario.__module__ for r in _EXTRA.values()
    }


def _races_in(value: Any) -> list[Race]:
    if isinstance(value, Race):
        return [value]
    if isinstance(value, types.ModuleType):
        value = getattr(value, "RACES", [])
    if isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping)):
        items = list(value)
        if all(isinstance(r, Race) for r in items):
            return items
    raise TypeError(f"expected a Race, a list of Race or a module with RACES, got {type(value).__name__}")


def registered_races() -> dict[str, Race]:
    """Every race registered through :data:`ENTRY_POINT_GROUP` (loaded once), plus :func:`add_races`.

    A package whose entry point cannot be loaded is skipped with a warning that
    names it, so one broken package does not stop a hunt of the others.
    """
    global _REGISTRY
    races = _REGISTRY
    if races is None:
        races = {}
        complete = True
        for ep in _entry_points():
            try:
                found = _races_in(ep.load())
            except Exception as exc:
                complete = False  # not cached: a module imported half-way now may load next time
                warnings.warn(
                    f"race-harness: skipped the races of entry point {ep.name} = {ep.value!r} "
                    f"({_dist_name(ep) or 'unknown package'}): {type(exc).__name__}: {exc}. "
                    "Fix that module or uninstall its package.",
                    RuntimeWarning,
                    stacklevel=2,
                )
                continue
            for race in found:
                races.setdefault(race.name, race)
        if complete:
            _REGISTRY = races
    return {**races, **{k: v for k, v in _EXTRA.items() if k not in races}}


def add_races(races: Iterable[Race]) -> None:
    """Register races in this process only (``races/`` does this when its package metadata is missing)."""
    for race in races:
        _EXTRA.setdefault(race.name, race)


# --------------------------------------------------------------------------- the mark
def name_of(fn: Any) -> tuple[str, str]:
    """``(module, qualname)`` of a scenario; a classmethod bound to a subclass is named after the subclass."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, type):
        return owner.__module__, f"{owner.__qualname__}.{fn.__name__}"
    return str(getattr(fn, "__module__", "")), str(getattr(fn, "__qualname__", getattr(fn, "__name__", "")))


def _registered(module: str, qualname: str) -> bool:
    """Whether a registered race's scenario is ``module:qualname`` (loads the installed entry points)."""
    return any(name_of(r.scenario) == (module, qualname) for r in registered_races().values())


def is_marked(obj: Any) -> bool:
    """Whether ``obj`` is a scenario a trace file may name (see the module docstring)."""
    # a RaceMachine subclass inherits the mark from its base class (harness.stateful sets it)
    if (inspect.isfunction(obj) or inspect.ismethod(obj) or isinstance(obj, type)) and getattr(obj, _MARK, False) is True:
        return True
    owner = getattr(obj, "__self__", None) if inspect.ismethod(obj) else None
    if isinstance(owner, type) and getattr(owner, _MARK, False) is True and obj.__name__ == "scenario":
        return True
    if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
        return False
    return any(r.scenario is obj or (inspect.ismethod(obj) and r.scenario == obj) for r in registered_races().values())


#: where ``scenario`` and ``RaceMachine`` may come from: a decorator counts only if it resolves to one of these
_MARK_TARGETS = frozenset({"harness.scenario", "harness.explore.scenario", "harness.explore._scenarios.scenario"})
_MACHINE_TARGETS = frozenset(
    {"harness.RaceMachine", "harness.stateful.RaceMachine", "harness.stateful._machine.RaceMachine"}
)


class _Names:
    """What each module-level name is bound to, read from the source: imports, definitions, anything else.

    A decorator counts as the mark only when *every* binding of its name in the
    module is an import that resolves to :func:`scenario` (``from harness import
    scenario``, ``import harness as h`` + ``@h.scenario``). A look-alike
    (``scenario = lambda f: f``), a name rebound anywhere at module level or
    through ``global``, or any ``from x import *`` (which could rebind anything)
    makes it unresolvable, and the file is refused before it runs.
    """

    def __init__(self, tree: ast.Module) -> None:
        self.binds: dict[str, list[str | None]] = {}
        self.star = False
        self.defined: dict[str, ast.stmt] = {}
        for stmt in tree.body:
            self._visit(stmt)

    def _add(self, name: str, target: str | None) -> None:
        self.binds.setdefault(name, []).append(target)

    def _visit(self, node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._add(node.name, None)
            self.defined[node.name] = node
            for sub in ast.walk(node):  # a function may rebind a module name with `global`
                if isinstance(sub, ast.Global):
                    for g in sub.names:
                        self._add(g, None)
            return
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.partition(".")[0]
                self._add(a.asname or top, a.name if a.asname else top)
            return
        if isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for a in node.names:
                if a.name == "*":
                    self.star = True
                else:
                    self._add(a.asname or a.name, f"{base}.{a.name}" if node.level == 0 else None)
            return
        if isinstance(node, ast.comprehension):  # its target is local to the comprehension
            for sub in (node.iter, *node.ifs):
                self._visit(sub)
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            self._add(node.id, None)
            return
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    self.defined[t.id] = node
        for child in ast.iter_child_nodes(node):
            self._visit(child)

    def dotted(self, node: ast.expr) -> str | None:
        """The imported dotted name ``node`` means (``h.scenario`` -> ``harness.scenario``), or None."""
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return None if base is None else f"{base}.{node.attr}"
        if not isinstance(node, ast.Name) or self.star:
            return None
        targets = set(self.binds.get(node.id, [None]))
        if len(targets) != 1:
            return None
        return targets.pop()

    def is_mark(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Call):
            node = node.func
        return self.dotted(node) in _MARK_TARGETS

    def is_machine_base(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Subscript):  # Generic[...] and the like
            node = node.value
        return self.dotted(node) in _MACHINE_TARGETS


def _is_machine(node: ast.ClassDef, names: _Names, seen: set[str]) -> bool:
    if any(names.is_mark(d) for d in node.decorator_list):
        return True
    for base in node.bases:
        if names.is_machine_base(base):
            return True
        local = names.defined.get(base.id) if isinstance(base, ast.Name) else None
        if isinstance(local, ast.ClassDef) and local.name not in seen and names.binds.get(local.name) == [None]:
            seen.add(local.name)
            if _is_machine(local, names, seen):
                return True
    return False


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _class_body(node: ast.ClassDef) -> dict[str, ast.stmt]:
    """The last definition of each name in a class body (what the attribute is once the class is built)."""
    out: dict[str, ast.stmt] = {}
    for sub in node.body:
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[sub.name] = sub
        elif isinstance(sub, ast.Assign):
            for target in sub.targets:
                if isinstance(target, ast.Name):
                    out[target.id] = sub
        elif isinstance(sub, ast.AnnAssign) and isinstance(sub.target, ast.Name):
            out[sub.target.id] = sub
    return out


def syntax_error_in(source: str, where: str) -> str | None:
    """"model.py, line 12: invalid syntax (...)" when ``source`` does not parse; None when it does.

    Named before the marking check, so a file with a typo is refused as such
    and not as "not marked as a scenario" (which would send its author to look
    for a missing decorator).
    """
    try:
        ast.parse(source)
    except SyntaxError as exc:
        line = (exc.text or "").strip()
        shown = f": {line[:80]}" if line else ""
        return f"{where}, line {exc.lineno}: {exc.msg}{shown}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"{where} cannot be parsed ({type(exc).__name__}: {exc})"
    return None


def missing_in_source(source: str, qualname: str, where: str) -> str | None:
    """None when the source binds ``qualname``; else what is missing from ``where``, with the closest name."""
    tree = _parse(source)
    if tree is None:
        return None  # the marking check refuses it, with its own words
    names = _Names(tree)
    scope: dict[str, Any] = {n: names.defined.get(n) for n in names.binds}
    parts = qualname.split(".")
    for i, part in enumerate(parts):
        if part not in scope:
            kind = "function" if i == len(parts) - 1 else "class"
            close = difflib.get_close_matches(part, [n for n in scope if not n.startswith("__")], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            owner = f" in class {'.'.join(parts[:i])}" if i else ""
            return f"no {kind} {part!r}{owner} in {where}{hint}"
        node = scope[part]
        if i < len(parts) - 1:
            if not isinstance(node, ast.ClassDef) or node.bases or node.keywords:
                return None  # inherited or computed attributes: the marking check decides
            scope = dict(_class_body(node))
    return None


def marked_in_source(source: str, qualname: str) -> bool:
    """Whether ``source`` marks ``qualname`` as a scenario, read without running anything.

    Marked: a definition decorated with ``@scenario`` (``@harness.scenario``,
    ``@h.scenario``, ...) or bound to ``scenario(...)``, where the decorator
    resolves through the module's own imports to :func:`harness.scenario`
    (see :class:`_Names`); a class deriving from ``harness.RaceMachine``
    (directly or through classes of the same file), and its ``scenario``.
    """
    tree = _parse(source)
    if tree is None:
        return False
    names = _Names(tree)
    parts = qualname.split(".")
    if names.binds.get(parts[0]) != [None]:
        return False  # bound by an import, or more than once: not a definition this file makes
    node = names.defined.get(parts[0])
    if node is None:
        return False
    is_machine = isinstance(node, ast.ClassDef) and _is_machine(node, names, {node.name})
    if is_machine and (len(parts) == 1 or (len(parts) == 2 and parts[1] == "scenario")):
        return True
    for part in parts[1:]:
        if not isinstance(node, ast.ClassDef):
            return False
        node = _class_body(node).get(part)
        if node is None:
            return False
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return any(names.is_mark(d) for d in node.decorator_list)
    if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        return isinstance(node.value, ast.Call) and names.is_mark(node.value)
    return False


# --------------------------------------------------------------------------- locating code without running it
def _find_spec(fullname: str, path: list[str] | None) -> Any:
    """Ask the import system's finders where a module is; finders locate, they never execute it."""
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        try:
            spec = find(fullname, path)
        except (ImportError, OSError, ValueError, TypeError, AttributeError):
            continue
        if spec is not None:
            return spec
    return None


def module_source(name: str) -> Path | None:
    """The ``.py`` file of module ``name``, found without importing it or its parent packages."""
    parts = name.split(".")
    path: list[str] | None = None
    spec: Any = None
    for i in range(len(parts)):
        full = ".".join(parts[: i + 1])
        loaded = sys.modules.get(full)
        spec = getattr(loaded, "__spec__", None) if loaded is not None else None
        if spec is None:
            spec = _find_spec(full, path)
        if spec is None:
            return None
        if i < len(parts) - 1:
            locations = spec.submodule_search_locations
            if locations is None:
                return None
            path = list(locations)
    origin = getattr(spec, "origin", None)
    if getattr(spec, "has_location", False) and isinstance(origin, str) and origin.endswith(".py"):
        return Path(origin)
    return None


def _read_source(path: Path, ref: str, error: type[HarnessError]) -> str:
    try:
        if path.stat().st_size > _MAX_SOURCE_BYTES:
            raise error(f"{path} is too large to be a scenario file ({path.stat().st_size:,} bytes); check {ref!r}")
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"the scenario file {path} cannot be read ({type(exc).__name__}: {exc}); check {ref!r}") from None


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


# --------------------------------------------------------------------------- command-line parameters
def parse_params(items: Iterable[str]) -> dict[str, Any]:
    """``["replicas=3", "name=web"]`` -> ``{"replicas": 3, "name": "web"}``: JSON when it parses, else a string."""
    out: dict[str, Any] = {}
    for item in items:
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise UsageError(
                f"--param {item!r} is not NAME=VALUE; use e.g. --param replicas=3 or --param name=web "
                "(VALUE is read as JSON when it parses, else as a string)"
            )
        try:
            out[name] = json.loads(text)
        except ValueError:
            out[name] = text
    return out


def check_params(fn: Any, params: Mapping[str, Any], ref: str, raw: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``params`` checked against the scenario's signature and annotations, before anything runs.

    Unknown names are refused with the list of known ones; a value must fit the
    parameter's annotation (or, without one, its default's type): ``bool`` takes
    true or false only, ``int`` a whole number, ``float`` a number, ``str`` any
    text (``raw``, the text typed on the command line, so ``--param name=3`` is
    ``"3"``). A broken parameter never reaches a run, where it would fail as if it
    were the race. Returns the values to run with.
    """
    try:
        sig = inspect.signature(fn, eval_str=True)
    except (NameError, SyntaxError, TypeError, AttributeError):
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return dict(params)
    except ValueError:
        return dict(params)
    ps = list(sig.parameters.values())
    by_name = {p.name: p for p in ps[1:] if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ps):
        unknown = [k for k in params if k not in by_name]
        if unknown:
            takes = ", ".join(by_name) if by_name else "no parameters"
            raise UsageError(f"{ref} takes no parameter {unknown[0]!r}; it takes: {takes}")
    out = dict(params)
    for name, value in params.items():
        p = by_name.get(name)
        if p is None:
            continue
        kind: Any = p.annotation
        if kind is p.empty:
            kind = type(p.default) if p.default is not p.empty and p.default is not None else None
        text = None if raw is None else raw.get(name)
        ok, coerced, form = _fit(kind, value, text)
        if not ok:
            typed = text if text is not None else json.dumps(value, default=repr)
            raise UsageError(
                f"--param {name}={typed} does not fit {ref}: {name} takes {form}"
                + (f" (default {p.default!r})" if p.default is not p.empty else "")
                + f", e.g. --param {name}={_example(form, p.default)}"
            )
        out[name] = coerced
    return out


_FORMS = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}


def _fit(kind: Any, value: Any, text: str | None) -> tuple[bool, Any, str]:
    """Whether ``value`` (typed as ``text``) fits the annotation ``kind``: (fits, value to use, accepted form)."""
    import typing

    if isinstance(kind, str):  # an annotation left as text (a name only TYPE_CHECKING imports)
        kind = {"bool": bool, "int": int, "float": float, "str": str}.get(kind.strip())
    if kind is None or kind is Any:
        return True, value, "any value"
    if kind is type(None):
        return value is None, None, "null"
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        forms = []
        for member in typing.get_args(kind):
            ok, coerced, form = _fit(member, value, text)
            if ok:
                return True, coerced, form
            forms.append(form)
        return False, value, " or ".join(dict.fromkeys(forms))
    if kind is bool:
        if isinstance(value, bool):
            return True, value, _FORMS[bool]
        if text is not None and text.strip().lower() in ("true", "false"):
            return True, text.strip().lower() == "true", _FORMS[bool]
        return False, value, _FORMS[bool]
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool), value, _FORMS[int]
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return ok, float(value) if ok else value, _FORMS[float]
    if kind is str:
        if text is not None:
            return True, text, _FORMS[str]
        return isinstance(value, str), value, _FORMS[str]
    if origin in (list, tuple, set, frozenset) or kind in (list, tuple, set, frozenset):
        return isinstance(value, list), (tuple(value) if (origin or kind) is tuple and isinstance(value, list)
                                         else value), "a JSON list such as [1, 2]"
    if origin is dict or kind is dict:
        return isinstance(value, dict), value, 'a JSON object such as {"a": 1}'
    return True, value, "any value"


def _example(form: str, default: Any) -> str:
    if default is not inspect.Parameter.empty and default is not None:
        return json.dumps(default) if not isinstance(default, str) else default
    return {"true or false": "true", "a whole number": "3", "a number": "1.5"}.get(form, "VALUE")


def raw_params(items: Iterable[str]) -> dict[str, str]:
    """``["name=3"]`` -> ``{"name": "3"}``: the text as typed (a ``str`` parameter takes it as it is)."""
    return {name.strip(): text for name, eq, text in (item.partition("=") for item in items) if eq}
