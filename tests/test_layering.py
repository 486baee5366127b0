"""The intended layering, held against the code: imports that would close a circle between layers fail here.

Read from the source (``ast``), not by importing, so a lazy import inside a function counts as much as one at
the top of a module.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "harness"


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports, resolved to a dotted name (``from .. import x`` -> ``harness`` + ``x``)."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    if path.name == "__init__.py":
        package = module.removesuffix(".__init__")
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            # `from harness import X` names the facade itself, whatever X is
            out.append(target)
    return out


def _violations(layer: str, forbidden: tuple[str, ...], exact: tuple[str, ...] = ()) -> list[str]:
    found: list[str] = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for name in _imports(path):
            if name.startswith(forbidden) or name in exact:
                found.append(f"{path.relative_to(PACKAGE.parent)} imports {name}")
    return found


@pytest.mark.parametrize(
    ("layer", "forbidden", "exact"),
    [
        # the engine knows nothing of what is built on it
        ("sim", ("harness.explore", "harness.stateful", "harness.report", "harness.cli", "harness.pytest_plugin",
                 "harness.kube"), ("harness",)),
        # the search takes scenarios; a RaceMachine is one by the mark it carries, not by its class
        ("explore", ("harness.stateful", "harness.report", "harness.cli", "harness.pytest_plugin"), ("harness",)),
        # the report reads results; the version comes from a leaf module, not the facade
        ("report", ("harness.cli", "harness.pytest_plugin", "harness.stateful"), ("harness",)),
        ("kube", ("harness.explore", "harness.stateful", "harness.report", "harness.cli", "harness.pytest_plugin"),
         ("harness",)),
    ],
)
def test_a_layer_imports_nothing_above_it(layer: str, forbidden: tuple[str, ...], exact: tuple[str, ...]) -> None:
    assert _violations(layer, forbidden, exact) == []


def test_the_check_sees_relative_imports() -> None:
    """The resolver itself: ``from .. import x`` in a subpackage names the facade."""
    names = _imports(PACKAGE / "stateful" / "_machine.py")
    assert "harness.sim" in names
