"""Kubernetes objects as the models see them: metadata plus free-form spec and status.

One class, :class:`KubeObject`, stands for every kind (``metav1.ObjectMeta`` in
``apimachinery/pkg/apis/meta/v1/types.go`` flattened onto it, ``spec`` and
``status`` as plain JSON-like dicts). Nothing is shared by reference between the
apiserver, the informer caches and the actors:

* the apiserver never mutates an object it has committed; every write builds a
  new one, so a committed object can be handed to every watch stream and cache
  without a copy;
* whatever crosses into actor code (``get``, ``list``, a lister read, an event
  handler argument, the result of a write) is a :meth:`KubeObject.deepcopy`.

Copy cost: ``deepcopy`` uses :func:`copy_json`, a hand-written structural copy
of dicts and lists (about 10x faster than :func:`copy.deepcopy`, which memoises
and dispatches on type; ``pickle`` round trips were slower for small objects).
Rejected: frozen objects with copy-on-write views, because actors written in the
client-go style mutate the object they read (``obj.status["phase"] = ...``) and
then send it; a frozen object would force every model into a builder style.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: Kinds served by kube-apiserver itself. Every other kind is treated as a custom
#: resource, whose update strategy rejects an empty resourceVersion
#: (``AllowUnconditionalUpdate() == false`` in ``apiextensions-apiserver``
#: ``pkg/registry/customresource/strategy.go``).
BUILTIN_KINDS: frozenset[str] = frozenset(
    {
        "Pod", "Service", "ConfigMap", "Secret", "Node", "Namespace", "Event", "Endpoints",
        "PersistentVolume", "PersistentVolumeClaim", "ServiceAccount", "Deployment", "ReplicaSet",
        "StatefulSet", "DaemonSet", "Job", "CronJob", "Lease", "PriorityClass", "ResourceQuota",
    }
)


def copy_json(value: Any) -> Any:
    """Structural copy of JSON-like data (dict, list, tuple and immutable scalars)."""
    if isinstance(value, dict):
        return {k: (copy_json(v) if isinstance(v, (dict, list)) else v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_json(v) if isinstance(v, (dict, list)) else v for v in value]
    return value


@dataclass(frozen=True, slots=True)
class OwnerReference:
    """``metav1.OwnerReference``; ``controller_ref`` builds what ``metav1.NewControllerRef`` does."""

    uid: str
    kind: str
    name: str
    controller: bool = False
    block_owner_deletion: bool = False


def controller_ref(owner: KubeObject) -> OwnerReference:
    """A controller reference to ``owner`` with both flags set, like ``metav1.NewControllerRef``."""
    return OwnerReference(owner.uid, owner.kind, owner.name, controller=True, block_owner_deletion=True)


@dataclass(slots=True)
class KubeObject:
    """One API object. ``resource_version`` 0 means "empty" (not yet created, or not sent)."""

    kind: str
    namespace: str
    name: str
    uid: str = ""
    resource_version: int = 0
    generation: int = 0
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    owner_references: list[OwnerReference] = field(default_factory=list)
    finalizers: list[str] = field(default_factory=list)
    deletion_timestamp: float | None = None
    deletion_grace_period_seconds: int | None = None
    creation_timestamp: float = 0.0
    spec: dict[str, Any] = field(default_factory=dict)
    status: dict[str, Any] = field(default_factory=dict)
    #: every other top-level field of the object's JSON (``apiVersion``, a ConfigMap's ``data``, a Secret's
    #: ``type``, a Role's ``rules``), and under ``"metadata"`` the metadata fields not above (``generateName``):
    #: what the HTTP API (``_http/_codec.py``) keeps so that a whole body round-trips; models rarely need it
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``namespace/name``, the key ``cache.MetaNamespaceKeyFunc`` gives."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @property
    def ref(self) -> str:
        """``Kind namespace/name``: the key used in trace records."""
        return f"{self.kind} {self.key}"

    def deepcopy(self) -> KubeObject:
        """An independent copy (``DeepCopy()``); see the module docstring for the cost."""
        return KubeObject(
            self.kind,
            self.namespace,
            self.name,
            self.uid,
            self.resource_version,
            self.generation,
            dict(self.labels),
            dict(self.annotations),
            list(self.owner_references),
            list(self.finalizers),
            self.deletion_timestamp,
            self.deletion_grace_period_seconds,
            self.creation_timestamp,
            copy_json(self.spec),
            copy_json(self.status),
            copy_json(self.extra) if self.extra else {},
        )

    def controller_owner(self) -> OwnerReference | None:
        """The owner reference with ``controller=true``, as ``metav1.GetControllerOf``."""
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None

    def matches(self, selector: dict[str, str] | None) -> bool:
        """Equality-based label selector match (``labels.SelectorFromSet``)."""
        if not selector:
            return True
        labels = self.labels
        return all(labels.get(k) == v for k, v in selector.items())


def object_ref(kind: str, namespace: str, name: str) -> str:
    """The ``Kind namespace/name`` key of an object that may not exist."""
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


#: an Event's name as client-go makes it: the regarded object's name and the client's clock, ``%s.%x`` of
#: ``UnixNano`` (``tools/record/util/util.go``, ``GenerateEventName``, called by both ``tools/record`` and
#: ``tools/events``), or a random UUID when that is no valid name
_CLOCK_NAMED_EVENT = re.compile(r"^(Event (?:[^/ ]+/)?)(?:(.+)\.[0-9a-f]{16}|[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12})$")


def step_ref(ref: str) -> str:
    """``ref`` as a step's label and key name it: an Event a client named after its own clock becomes
    ``Event ns/app.<clock>`` (``<uuid>``), every other ref is itself.

    A step's label is part of the trace: a replay that meets another label has diverged. A process on the real
    clock (``harness.operators.ExternalOperator``) names each Event it records anew in every run, so with the name
    in its label no run of it would replay, and its story could not be told again. The object keeps its name; only
    what the trace calls the step loses the clock. Two such Events of one object in one run share a label and a
    key: they count as dependent, which costs the reduction an order, never a race.
    """
    if not ref.startswith("Event "):
        return ref
    m = _CLOCK_NAMED_EVENT.match(ref)
    if m is None:
        return ref
    return f"{m.group(1)}{m.group(2)}.<clock>" if m.group(2) is not None else f"{m.group(1)}<uuid>"
