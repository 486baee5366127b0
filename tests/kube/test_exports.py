"""The public surface of harness.kube and its layering."""

from __future__ import annotations

import ast
import pathlib

import harness.kube

KUBE = pathlib.Path(harness.kube.__file__).parent


def test_all_names_are_exported_and_sorted_out_of_private_modules() -> None:
    for name in harness.kube.__all__:
        assert hasattr(harness.kube, name), name
    assert len(set(harness.kube.__all__)) == len(harness.kube.__all__)
    # ("@py_builtins"-style names come from pytest rewriting the package of our pytest11 plugin)
    public = {n for n in vars(harness.kube) if not n.startswith(("_", "@"))}
    assert public == set(harness.kube.__all__)


def test_kube_imports_only_the_sim_layer() -> None:
    for path in KUBE.glob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("harness"):
                assert node.module in ("harness.sim", "harness._errors"), f"{path.name} imports {node.module}"


def test_the_ways_operators_run_sit_above_kube() -> None:
    """``harness.operators`` (how an operator runs) builds on ``harness.kube`` (what Kubernetes does), never the
    other way: a Kubernetes semantic that knew how an operator is started would tie the two together again."""
    import harness.operators

    for path in KUBE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                name = node.module or ""
                assert "operators" not in name.split("."), f"{path.name} imports {name}"
    assert set(harness.operators.__all__) == {"ExternalOperator", "Operator", "TestProcess", "kopf_operator"}
    for name in harness.operators.__all__:
        assert not hasattr(harness.kube, name), f"harness.kube still exports {name}"
