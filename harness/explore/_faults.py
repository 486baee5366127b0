"""The fault kinds a search places: read from what a user typed, and said in words.

``None`` is each component's own fault flags, ``"*"`` among the kinds every kind
(``"all"``), an empty set none; the kinds themselves are checked once, in
``harness/_options.py``, shared with the CLI and the plugin.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._options import parse_fault_spec


def parse_faults(spec: str | Sequence[str] | frozenset[str] | None) -> frozenset[str] | None:
    """``"default"``/None (each component's own flags), ``"all"``, ``"none"``, or ``"crash,watch_drop"``.

    A frozenset is taken as it is (a model may place kinds of its own); text and
    lists are checked against the kinds this project places.
    """
    if spec is None:
        return None
    if isinstance(spec, frozenset):
        return spec
    return parse_fault_spec(spec if isinstance(spec, str) else list(spec))


def describe_faults(kinds: frozenset[str] | None) -> str:
    if kinds is None:
        return "the model's own fault flags"
    if "*" in kinds:
        return "every fault kind"
    return "no faults" if not kinds else "faults " + ", ".join(sorted(kinds))
