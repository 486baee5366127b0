"""The API reference of ``harness`` and ``harness.kube`` builds from the docstrings, warnings as errors.

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
        pdoc.pdoc("harness", "harness.kube", output_directory=tmp_path)
    top = (tmp_path / "harness.html").read_text()
    kube = (tmp_path / "harness" / "kube.html").read_text()
    for name in ("World", "explore", "Counterexample", "scenario", "RaceMachine"):
        assert f'id="{name}"' in top, f"harness.{name} is missing from the reference"
    for name in ("APIServer", "Informer", "Controller", "ControllerExpectations", "WorkQueue", "GarbageCollector"):
        assert f'id="{name}"' in kube, f"harness.kube.{name} is missing from the reference"
