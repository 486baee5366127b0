"""JSON merge: RFC 7386 merge patch and the merge of an applied status (what a patch or an apply writes).

Pure functions of JSON values; the apiserver's patch and apply use them, and
the HTTP API serves ``application/merge-patch+json`` with :func:`merge_patch`.
"""

from __future__ import annotations

from typing import Any

from ._objects import copy_json


def merge_patch(target: dict[str, Any], patch: Any) -> Any:
    """RFC 7386 JSON merge patch; returns a new value and leaves ``target`` alone."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    out: dict[str, Any] = copy_json(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            out[k] = merge_patch(out.get(k, {}), v)
        else:
            out[k] = copy_json(v)
    return out


def _apply(target: dict[str, Any], applied: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = copy_json(target)
    for k, v in applied.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _apply(out[k], v)
        else:
            out[k] = copy_json(v)
    return out
