"""The API reference of ``harness``, ``harness.kube`` and ``harness.operators`` builds from the docstrings, warnings as errors.

Built into a temporary folder (never into the repository) so a docstring or an annotation
that pdoc cannot read fails here instead of rotting the published reference.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pdoc  # in the test extra: a missing pdoc is a failure here, not a skip, so the reference cannot rot


def test_reference_builds_without_warnings(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pdoc.pdoc("harness", "harness.kube", "harness.operators", output_directory=tmp_path)
    top = (tmp_path / "harness.html").read_text()
    kube = (tmp_path / "harness" / "kube.html").read_text()
    operators = (tmp_path / "harness" / "operators.html").read_text()
    for name in ("World", "explore", "Counterexample", "scenario", "RaceMachine"):
        assert f'id="{name}"' in top, f"harness.{name} is missing from the reference"
    for name in ("APIServer", "Informer", "Controller", "ControllerExpectations", "WorkQueue", "GarbageCollector"):
        assert f'id="{name}"' in kube, f"harness.kube.{name} is missing from the reference"
    for name in ("Operator", "ExternalOperator", "kopf_operator"):
        assert f'id="{name}"' in operators, f"harness.operators.{name} is missing from the reference"


def _public_functions() -> list[tuple[str, str]]:
    """``(qualname, docstring)`` of every public function and method pdoc documents in ``harness.kube``."""
    from pdoc import doc

    import harness.kube

    module = doc.Module(harness.kube)
    out: list[tuple[str, str]] = []
    for name in harness.kube.__all__:
        member = module.get(name)
        assert member is not None, f"harness.kube.{name} is exported but pdoc cannot document it"
        if isinstance(member, doc.Function):
            out.append((member.qualname, member.docstring))
        if isinstance(member, doc.Class):
            out.append((member.qualname, member.docstring))
            out += [(m.qualname, m.docstring) for m in member.members.values()
                    if isinstance(m, doc.Function) and not m.name.startswith("_")]
    return out


def test_every_public_kube_method_has_a_docstring() -> None:
    functions = _public_functions()
    assert len(functions) > 200  # the walk reached the classes' methods
    missing = [name for name, text in functions if not text.strip()]
    assert missing == [], f"give these a docstring that says what and why: {missing}"


def test_no_docstring_cites_a_file_the_package_does_not_ship() -> None:
    """A design file that is not in the repository is no reference for a reader of the package."""
    import re

    root = Path(__file__).resolve().parents[2]
    cited: list[str] = []
    for path in sorted([*(root / "harness").rglob("*.py"), *(root / "races").rglob("*.py")]):
        for name in re.findall(r"[\w./-]+\.md\b", path.read_text()):
            if not (root / name).exists() and not (root / "docs" / name).exists():
                cited.append(f"{path.relative_to(root)} cites {name}")
    assert cited == []
