"""controller-runtime's event path: events, predicates (event filters) and enqueuers.

A controller-runtime controller does not see informer callbacks: its
``source.Kind`` turns each ``OnAdd``/``OnUpdate``/``OnDelete`` into a
``CreateEvent``/``UpdateEvent``/``DeleteEvent``, drops it unless **every**
predicate passes (``WithEventFilter``, ``builder.WithPredicates``), and hands the
rest to an event handler that maps it to work-queue keys
(``pkg/internal/source/event_handler.go``). A filter is often exactly where a
bug lives, so a model says it the way upstream does instead of by hand:

- :class:`Funcs` (``predicate.Funcs``): a missing function passes the event.
- :class:`GenerationChangedPredicate`: an update passes only when
  ``metadata.generation`` changed, so status-only and metadata-only updates are
  dropped (``pkg/predicate/predicate.go``); creates and deletes pass.
- :class:`ResourceVersionChangedPredicate`: drops updates with an unchanged
  resourceVersion: resyncs, and the syncs that reach only handlers with a
  resync period (a duplicate delivery, an object a relist found unchanged).
- :class:`EnqueueRequestForObject`, :class:`EnqueueRequestForOwner`
  (``handler.EnqueueRequestForOwner``, optionally ``OnlyControllerOwner()``) and
  :class:`EnqueueRequestsFromMapFunc` (``pkg/handler``).

A relist (after 410 Gone, a failed re-watch, or the ``watch_drop`` shorthand)
delivers objects the cache did not have as ``OnAdd``, so they reach a
controller-runtime model as create events: a create predicate sees them, as
upstream; an object whose resourceVersion changed meanwhile comes as an update
(with its generation unchanged if only its status did: a
``GenerationChangedPredicate`` drops it). A delete seen only
through a relist arrives as a :class:`~harness.kube.DeletedFinalStateUnknown`;
the source unwraps it and sets ``delete_state_unknown``, as controller-runtime's
``EventHandler.OnDelete`` does.

Requests are ``"namespace/name"`` keys (``name`` for a cluster-scoped object),
the string a :class:`~harness.kube.Lister` takes, standing for
``reconcile.Request{NamespacedName}``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from ._informer import Informer
from ._lister import DeletedFinalStateUnknown
from ._objects import KubeObject


@dataclass(frozen=True, slots=True)
class CreateEvent:
    """``event.CreateEvent``: an object the cache did not have (a watch ADDED, or a relist's new key)."""

    object: KubeObject


@dataclass(frozen=True, slots=True)
class UpdateEvent:
    """``event.UpdateEvent``: the cached object and its successor (equal on a resync)."""

    object_old: KubeObject
    object_new: KubeObject


@dataclass(frozen=True, slots=True)
class DeleteEvent:
    """``event.DeleteEvent``; ``delete_state_unknown`` when the delete was seen only through a relist."""

    object: KubeObject
    delete_state_unknown: bool = False


@dataclass(frozen=True, slots=True)
class GenericEvent:
    """``event.GenericEvent``: from a channel source, never from an informer."""

    object: KubeObject


class Predicate(Protocol):
    """``predicate.Predicate``: whether an event reaches the handler (all of a watch's predicates must pass)."""

    def create(self, e: CreateEvent) -> bool:
        """Whether an ADDED (or a relist's new key) reaches the handler."""
        ...

    def update(self, e: UpdateEvent) -> bool:
        """Whether a MODIFIED (or a resync's update) reaches the handler."""
        ...

    def delete(self, e: DeleteEvent) -> bool:
        """Whether a DELETED (or a relist's missing key, ``delete_state_unknown``) reaches the handler."""
        ...

    def generic(self, e: GenericEvent) -> bool:
        """Whether a generic event from a channel source reaches the handler."""
        ...


@dataclass(frozen=True)
class Funcs:
    """``predicate.Funcs``: one optional function per event type; a missing one passes the event."""

    create_func: Callable[[CreateEvent], bool] | None = None
    update_func: Callable[[UpdateEvent], bool] | None = None
    delete_func: Callable[[DeleteEvent], bool] | None = None
    generic_func: Callable[[GenericEvent], bool] | None = None

    def create(self, e: CreateEvent) -> bool:
        """``create_func(e)``, or True when it is not set."""
        return self.create_func is None or self.create_func(e)

    def update(self, e: UpdateEvent) -> bool:
        """``update_func(e)``, or True when it is not set."""
        return self.update_func is None or self.update_func(e)

    def delete(self, e: DeleteEvent) -> bool:
        """``delete_func(e)``, or True when it is not set."""
        return self.delete_func is None or self.delete_func(e)

    def generic(self, e: GenericEvent) -> bool:
        """``generic_func(e)``, or True when it is not set."""
        return self.generic_func is None or self.generic_func(e)


class GenerationChangedPredicate(Funcs):
    """Pass an update only when ``metadata.generation`` changed (the apiserver bumps it on spec writes).

    Upstream's warning applies: a status-only update (what a controller waiting
    for another's status needs) and a label or finalizer change are dropped.
    """

    def update(self, e: UpdateEvent) -> bool:
        """True only when ``metadata.generation`` differs between the old and the new object."""
        return e.object_new.generation != e.object_old.generation


class ResourceVersionChangedPredicate(Funcs):
    """Pass an update only when the resourceVersion changed: drops resyncs and duplicate deliveries."""

    def update(self, e: UpdateEvent) -> bool:
        """True only when the resourceVersion differs between the old and the new object."""
        return e.object_new.resource_version != e.object_old.resource_version


# ------------------------------------------------------------------ enqueuers
class Queue(Protocol):
    """What an enqueuer adds to: a :class:`~harness.kube.WorkQueue` (``Controller.queue``)."""

    def add(self, item: str) -> None: ...


def request_of(obj: KubeObject) -> str:
    """``reconcile.Request`` for ``obj``: its ``namespace/name`` key."""
    return obj.key


class EventHandler(Protocol):
    """``handler.EventHandler``: maps each event to requests on the queue."""

    def create(self, e: CreateEvent, q: Queue) -> None:
        """Add the requests of a create event to ``q``."""
        ...

    def update(self, e: UpdateEvent, q: Queue) -> None:
        """Add the requests of an update event to ``q``."""
        ...

    def delete(self, e: DeleteEvent, q: Queue) -> None:
        """Add the requests of a delete event to ``q``."""
        ...

    def generic(self, e: GenericEvent, q: Queue) -> None:
        """Add the requests of a generic event to ``q``."""
        ...


class _MapHandler:
    """An enqueuer defined by ``requests(obj)``; an update maps old and new and adds each request once."""

    def requests(self, obj: KubeObject) -> Iterable[str]:  # pragma: no cover - overridden
        """The ``namespace/name`` requests one object maps to."""
        raise NotImplementedError

    def _add(self, q: Queue, objs: Sequence[KubeObject]) -> None:
        seen: dict[str, None] = {}  # insertion-ordered: the queue order never depends on a hash
        for obj in objs:
            for req in self.requests(obj):
                seen.setdefault(req, None)
        for req in seen:
            q.add(req)

    def create(self, e: CreateEvent, q: Queue) -> None:
        """Add the created object's requests."""
        self._add(q, [e.object])

    def update(self, e: UpdateEvent, q: Queue) -> None:
        """Add the requests of the old and of the new object, each once, old first."""
        self._add(q, [e.object_old, e.object_new])

    def delete(self, e: DeleteEvent, q: Queue) -> None:
        """Add the deleted object's requests (its last state, or a tombstone's)."""
        self._add(q, [e.object])

    def generic(self, e: GenericEvent, q: Queue) -> None:
        """Add the object's requests."""
        self._add(q, [e.object])


class EnqueueRequestForObject(_MapHandler):
    """``handler.EnqueueRequestForObject``: the object's own key (for an update, the new object's)."""

    def requests(self, obj: KubeObject) -> Iterable[str]:
        """The object's own ``namespace/name``."""
        return [request_of(obj)]

    def update(self, e: UpdateEvent, q: Queue) -> None:
        """Add the new object's key only (upstream: ``evt.ObjectNew``)."""
        q.add(request_of(e.object_new))


@dataclass(frozen=True)
class EnqueueRequestForOwner(_MapHandler):
    """``handler.EnqueueRequestForOwner``: the owners of kind ``owner_kind`` named in ``ownerReferences``.

    ``only_controller`` is ``handler.OnlyControllerOwner()``. An owner is looked
    up in the object's namespace (owners of namespaced objects are namespaced,
    or cluster-scoped with ``cluster_scoped=True``). On an update both the old
    and the new owners are enqueued, so an object that changed owners wakes both.
    """

    owner_kind: str
    only_controller: bool = False
    cluster_scoped: bool = False

    def requests(self, obj: KubeObject) -> Iterable[str]:
        """The keys of the object's owners of ``owner_kind`` (controller owners only with ``only_controller``)."""
        out = []
        for ref in obj.owner_references:
            if ref.kind != self.owner_kind or (self.only_controller and not ref.controller):
                continue
            out.append(ref.name if self.cluster_scoped or not obj.namespace else f"{obj.namespace}/{ref.name}")
        return out


@dataclass(frozen=True)
class EnqueueRequestsFromMapFunc(_MapHandler):
    """``handler.EnqueueRequestsFromMapFunc``: ``fn(obj)`` gives the requests; an update maps old and new."""

    fn: Callable[[KubeObject], Iterable[str]]

    def requests(self, obj: KubeObject) -> Iterable[str]:
        """``fn(obj)``, as a list."""
        return list(self.fn(obj))


def watch(
    informer: Informer,
    queue: Queue,
    handler: EventHandler | None = None,
    *predicates: Predicate,
) -> None:
    """``Controller.Watch(source.Kind(informer), handler, predicates...)`` on an informer's callbacks.

    Every predicate must pass (in order; the first that fails drops the event,
    as controller-runtime's source does); the handler (default
    :class:`EnqueueRequestForObject`) then adds requests to ``queue``. A
    relist's new keys arrive as creates, its missing keys as deletes with
    ``delete_state_unknown`` (the tombstone unwrapped).
    """
    h: EventHandler = handler if handler is not None else EnqueueRequestForObject()
    world = informer._world

    def passes(event: str, obj: KubeObject, check: Callable[[Predicate], bool]) -> bool:
        """Every predicate in order; the first that fails drops the event. Each verdict is a note in the trace."""
        for p in predicates:
            ok = check(p)
            if world.noting:
                name = predicate_name(p)
                world.note(
                    f"predicate {name}: {event} {obj.ref} rv={obj.resource_version} -> {'passed' if ok else 'dropped'}",
                    kind="predicate", key=obj.ref, predicate=name, event=event, verdict="passed" if ok else "dropped",
                )
            if not ok:
                return False
        return True

    def on_add(obj: KubeObject) -> None:
        e = CreateEvent(obj)
        if passes("Create", obj, lambda p: p.create(e)):
            h.create(e, queue)

    def on_update(old: KubeObject, new: KubeObject) -> None:
        e = UpdateEvent(old, new)
        if passes("Update", new, lambda p: p.update(e)):
            h.update(e, queue)

    def on_delete(obj: KubeObject | DeletedFinalStateUnknown) -> None:
        e = DeleteEvent(obj.obj, True) if isinstance(obj, DeletedFinalStateUnknown) else DeleteEvent(obj)
        if passes("Delete", e.object, lambda p: p.delete(e)):
            h.delete(e, queue)

    informer.add_event_handler(on_add, on_update, on_delete)


def predicate_name(p: Predicate) -> str:
    """How a note names a predicate: its ``name`` if it has one, else its class (a ``Funcs`` by its functions)."""
    name = getattr(p, "name", None)
    if isinstance(name, str) and name:
        return name
    if type(p) is Funcs:
        fns = [getattr(f, "__name__", "fn") for f in (p.create_func, p.update_func, p.delete_func, p.generic_func)
               if f is not None]
        return f"Funcs({', '.join(fns)})" if fns else "Funcs"
    return type(p).__name__
