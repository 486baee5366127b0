"""The scenario mark read from a module's source, and where that source lies, without running anything.

A file naming ``os:system`` imports nothing and calls nothing: a module's
``.py`` file is located through the import system's finders (which locate, never
execute), parsed, and the decorator counts only when it resolves through the
module's own imports to :func:`~._scenarios.scenario` (a look-alike
``scenario = lambda f: f`` is no mark, see :class:`_Names`). A name the source
does not define at all is reported as missing, with the closest name, before
any question of marking; a file that does not parse is named as such.
"""

from __future__ import annotations

import ast
import difflib
import sys
from pathlib import Path
from typing import Any

from .._errors import HarnessError

#: source files larger than this are not parsed for the mark (no scenario module is this large)
_MAX_SOURCE_BYTES = 8 * 2**20


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
