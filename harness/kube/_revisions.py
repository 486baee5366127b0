"""A revision and the watch event that made it: the event types, :class:`WatchEvent`, and how a revision is named.

Every write commits one revision and fans out one :class:`WatchEvent`; notes
and plans name a revision by the event that made it (:func:`revision_name`),
fingerprint its desired state (:func:`spec_digest`) and say what an update
changed (:func:`changed_fields`). Shared by the apiserver, its informers and
the HTTP API's watch streams.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._objects import KubeObject

#: the footprint resource of the revision counter (and the history it indexes), shared by every kind
_REVISION = "revision"

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event. ``object`` is the committed object: never mutate it, copy it."""

    type: str
    object: KubeObject

    @property
    def resource_version(self) -> int:
        return self.object.resource_version


Sink = Callable[[WatchEvent], None]


def revision_name(event_type: str, obj: KubeObject, n: int) -> str:
    """A revision named by the event that made it, as a plan names it ("MODIFIED default/rmq #2 (deleting)"):
    the ``n``-th event of that type for the object, never its number (numbers shift when a plan entry goes)."""
    return f"{event_type} {obj.key}" + (f" #{n}" if n > 1 else "") + (
        " (deleting)" if event_type != DELETED and obj.deletion_timestamp is not None else "")


def spec_digest(obj: KubeObject) -> str:
    """A short fingerprint of the object's ``spec`` (the write notes carry it): two revisions of one object whose
    desired state differs (a StatefulSet's replicas, a volume's requested size) have different fingerprints."""
    text = json.dumps(obj.spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def changed_fields(old: KubeObject | None, new: KubeObject, limit: int = 4) -> str:
    """What an update changed, as a story says it: ``": status.phase Pending -> Running; spec.replicas 2 -> 3"``.

    Leaf paths of labels, annotations, finalizers, ownerReferences, the
    deletion mark, spec and status that differ; at most ``limit``, then how
    many more. Built only for a told run (a story), never in a search.
    """
    if old is None:
        return ""
    out: list[str] = []

    def walk(path: str, a: Any, b: Any) -> None:
        if a == b:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for k in dict.fromkeys([*a, *b]):
                walk(f"{path}.{k}" if path else str(k), a.get(k), b.get(k))
            return
        out.append(f"{path} {_short(a)} -> {_short(b)}")

    walk("metadata.labels", old.labels, new.labels)
    walk("metadata.annotations", old.annotations, new.annotations)
    walk("metadata.finalizers", old.finalizers, new.finalizers)
    walk("metadata.ownerReferences", [r.name for r in old.owner_references], [r.name for r in new.owner_references])
    walk("metadata.deletionTimestamp", old.deletion_timestamp, new.deletion_timestamp)
    walk("spec", old.spec, new.spec)
    walk("status", old.status, new.status)
    if not out:
        return ""
    more = f"; {len(out) - limit} more" if len(out) > limit else ""
    return ": " + "; ".join(out[:limit]) + more


def _short(value: Any) -> str:
    if value is None:
        return "(none)"
    text = json.dumps(value, sort_keys=True, default=str) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."
