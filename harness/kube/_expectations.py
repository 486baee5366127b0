"""Controller expectations: the read-your-writes barriers controllers keep in memory.

All of them are per-World objects (upstream they are process globals); build
them inside a :class:`ControllerProcess` so that a crash loses them, as a
restart does upstream. Times are virtual seconds from ``world.now``.

* :class:`ResourceVersionExpectation`, :class:`ScaleExpectations` and
  :class:`UpdateExpectations` follow openkruise ``pkg/util/expectations/``
  ``resource_version_expectation.go``, ``scale_expectations.go`` and
  ``update_expectations.go``.
* :class:`ControllerExpectations` follows kubernetes
  ``pkg/controller/controller_utils.go`` (``ControlleeExpectations``, 5-minute
  ``ExpectationsTimeout``).
"""

from __future__ import annotations

from collections.abc import Callable

from harness.sim import World

from ._objects import KubeObject

#: kruise ``--expectation-timeout`` default (``pkg/util/expectations/init.go``)
KRUISE_EXPECTATION_TIMEOUT = 300.0
#: ``apps.ControllerRevisionHashLabelKey``: the label kruise's default revision adapter compares
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"
#: kubernetes ``controller.ExpectationsTimeout``
EXPECTATIONS_TIMEOUT = 300.0


def _name(world: World, name: str | None, kind: str) -> str:
    """The footprint name of an expectations store: ``name``, else its kind, numbered after the first of a run."""
    if name is not None:
        return name
    counts: dict[str, int] = world.state.setdefault("_kube_expectations", {})
    n = counts[kind] = counts.get(kind, 0) + 1
    return kind if n == 1 else f"{kind}#{n}"


class _Footprints:
    """Every check and change of an expectation is a footprint entry (``"<store>: <key>"``), read or write.

    A check is a read that says what it found (satisfied, the counts or names
    still pending, expired); expecting and observing are writes. The story of a
    counterexample follows a sync's check back to the expectation it read and
    the write that set it; the reduction sees two actions that touch different
    keys as independent.

    A store that waits for named objects (:class:`UpdateExpectations`,
    :class:`ScaleExpectations`) keeps one entry per object beside the
    controller key's record (``"<store>: <key>: <object>"``): a check that
    finds ``web-0`` pending reads the write that expected ``web-0``, not the
    last observation of another Pod. An expectation recorded from an object a
    write returned (``expect_updated``, ``expect``) also reads that object at
    its revision, in a told run only: the story follows the record back to
    the update it records (the write the oracle judges through the store),
    while the referee's reduction, which never reads notes, sees no apiserver
    read where the controller touched only its memory.
    """

    _world: World
    name: str

    def _read(self, key: str, said: str) -> None:
        self._world.touch(f"{self.name}: {key}", said=f"{self.name} {key}: {said}")

    def _write(self, key: str, said: str) -> None:
        self._world.touch(f"{self.name}: {key}", write=True, said=f"{self.name} {key}: {said}")

    def _read_entry(self, key: str, item: str, said: str) -> None:
        self._world.touch(f"{self.name}: {key}: {item}", said=f"{self.name} {key}: {said}")

    def _write_entry(self, key: str, item: str, said: str) -> None:
        self._world.touch(f"{self.name}: {key}: {item}", write=True, said=f"{self.name} {key}: {said}")

    def _records(self, obj: KubeObject) -> None:
        """A told run: the expectation about to be recorded reads ``obj`` as the write that returned it left it."""
        if self._world.noting:
            self._world.touch(obj.ref, said=f"{obj.ref} rv={obj.resource_version} (recorded in {self.name})",
                              version=obj.resource_version or None)


class ResourceVersionExpectation(_Footprints):
    """uid -> (expected resourceVersion, first time found unsatisfied); RVs compared as numbers."""

    def __init__(self, world: World, *, name: str | None = None) -> None:
        self._world = world
        self.name = _name(world, name, "ResourceVersionExpectation")
        self._entries: dict[str, list[float | int | None]] = {}  # uid -> [version, first_unsatisfied]

    def expect(self, obj: KubeObject) -> None:
        """Record the RV my own write produced; only ever raises the expected version."""
        entry = self._entries.get(obj.uid)
        if self._world._fp is not None:
            self._records(obj)
            self._write(obj.uid, f"expects {obj.ref} at rv>={obj.resource_version}")
        if self._world.noting:
            self._world.note(f"expect {obj.ref} (uid {obj.uid}) at rv>={obj.resource_version} in the cache",
                             kind="expectation", key=obj.ref, op="expect", rv=obj.resource_version)
        if entry is None:
            self._entries[obj.uid] = [obj.resource_version, None]
        elif obj.resource_version >= int(entry[0] or 0):
            entry[0] = obj.resource_version

    def observe(self, obj: KubeObject) -> None:
        """The cache has shown ``obj``: drop the entry if it has caught up."""
        entry = self._entries.get(obj.uid)
        if entry is not None and obj.resource_version >= int(entry[0] or 0):
            if self._world._fp is not None:
                self._write(obj.uid, f"observed {obj.ref} rv={obj.resource_version}: satisfied")
            if self._world.noting:
                self._world.note(f"observed {obj.ref} rv={obj.resource_version}: its expectation is satisfied",
                                 kind="expectation", key=obj.ref, op="observe", rv=obj.resource_version)
            del self._entries[obj.uid]

    def is_satisfied(self, obj: KubeObject) -> tuple[bool, float]:
        """(satisfied, seconds since first found unsatisfied); satisfied drops the entry."""
        entry = self._entries.get(obj.uid)
        fp = self._world._fp is not None
        if entry is None:
            if fp:
                self._read(obj.uid, f"{obj.ref} satisfied (nothing expected)")
            return True, 0.0
        if obj.resource_version >= int(entry[0] or 0):
            if fp:
                self._read(obj.uid, f"{obj.ref} satisfied (expects rv>={entry[0]}, the cache shows "
                                    f"rv={obj.resource_version})")
                self._write(obj.uid, "dropped")
            del self._entries[obj.uid]
            return True, 0.0
        if fp:
            waited = 0.0 if entry[1] is None else self._world.now - float(entry[1])
            self._read(obj.uid, f"{obj.ref} unsatisfied (expects rv>={entry[0]}, the cache shows "
                                f"rv={obj.resource_version}) for {waited:g} s")
        if entry[1] is None:
            entry[1] = self._world.now
            if self._world.noting:
                self._world.note(
                    f"expectation for {obj.ref} unsatisfied (expects rv>={entry[0]}, the cache shows "
                    f"rv={obj.resource_version}): its clock starts", kind="expectation", key=obj.ref, op="unsatisfied",
                    expected=entry[0], seen=obj.resource_version,
                )
        first = entry[1]
        return False, self._world.now - (first or 0.0)

    def get_expectations(self, uid: str) -> int | None:
        """The resourceVersion still expected for ``uid`` (None: nothing pending), without side effects.

        ``is_satisfied`` records "first found unsatisfied" and drops satisfied
        entries; an oracle or an exposed view reads through this instead, so
        looking never changes what the controller will see.
        """
        entry = self._entries.get(uid)
        if self._world._fp is not None:
            self._read(uid, "nothing expected" if entry is None else f"expects rv>={entry[0]}")
        return None if entry is None else int(entry[0] or 0)

    def delete(self, obj: KubeObject) -> None:
        """Drop whatever is expected for ``obj``'s UID (the object is gone)."""
        if self._world._fp is not None and obj.uid in self._entries:
            self._write(obj.uid, f"deleted ({obj.ref} is gone)")
        self._entries.pop(obj.uid, None)

    def __len__(self) -> int:
        return len(self._entries)


class ScaleExpectations(_Footprints):
    """controller key -> pending names per action (``"create"``/``"delete"``)."""

    def __init__(self, world: World, *, name: str | None = None) -> None:
        self._world = world
        self.name = _name(world, name, "ScaleExpectations")
        self._entries: dict[str, dict[str, dict[str, None]]] = {}
        self._first: dict[str, float] = {}

    def expect_scale(self, controller_key: str, action: str, name: str) -> None:
        """Record that ``controller_key`` expects to see ``action`` (create or delete) of pod ``name``."""
        if self._world._fp is not None:
            if not self._entries.get(controller_key):
                self._write(controller_key, f"expects {action} {name}")
            self._write_entry(controller_key, f"{action} {name}", f"expects {action} {name}")
        if self._world.noting:
            self._world.note(f"{controller_key} expects {action} {name}", kind="expectation",
                             keys=(controller_key, name), op="expect", action=action)
        self._entries.setdefault(controller_key, {}).setdefault(action, {})[name] = None

    def observe_scale(self, controller_key: str, action: str, name: str) -> None:
        """An informer saw ``action`` of ``name``: it is no longer expected by ``controller_key``."""
        entry = self._entries.get(controller_key)
        if entry is not None and action in entry:
            if self._world._fp is not None and name in entry[action]:
                self._write_entry(controller_key, f"{action} {name}", f"observed {action} {name}")
            if self._world.noting and name in entry[action]:
                self._world.note(f"{controller_key} observed {action} {name}", kind="expectation",
                                 keys=(controller_key, name), op="observe", action=action)
            entry[action].pop(name, None)

    def satisfied_expectations(self, controller_key: str) -> tuple[bool, float, dict[str, list[str]]]:
        """(satisfied, seconds unsatisfied, pending names per action)."""
        entry = self._entries.get(controller_key)
        pending = {a: list(names) for a, names in (entry or {}).items() if names}
        if self._world._fp is not None:
            first = self._first.get(controller_key)
            waited = 0.0 if first is None else self._world.now - first
            said = "satisfied" if not pending else f"unsatisfied for {waited:g} s, pending " + "; ".join(
                f"{a} {', '.join(names)}" for a, names in pending.items())
            self._read(controller_key, said)
            for a, names in pending.items():
                for n in names:
                    self._read_entry(controller_key, f"{a} {n}", said)
        if not pending:
            self._first.pop(controller_key, None)
            return True, 0.0, {}
        if controller_key not in self._first and self._world.noting:
            self._world.note(f"{controller_key} expectations unsatisfied ({pending}): the clock starts",
                             kind="expectation", key=controller_key, op="unsatisfied")
        first = self._first.setdefault(controller_key, self._world.now)
        return False, self._world.now - first, pending

    def get_expectations(self, controller_key: str) -> dict[str, list[str]]:
        """Pending names per action, as kruise's ``GetExpectations``: a read with no side effects.

        ``satisfied_expectations`` starts the unsatisfied clock; oracles and
        exposed views read through this so that observing changes nothing.
        """
        entry = self._entries.get(controller_key) or {}
        out = {a: list(names) for a, names in entry.items() if names}
        if self._world._fp is not None:
            said = f"pending {out}" if out else "nothing pending"
            self._read(controller_key, said)
            for a, names in out.items():
                for n in names:
                    self._read_entry(controller_key, f"{a} {n}", said)
        return out

    def delete_expectations(self, controller_key: str) -> None:
        """Forget every expectation of ``controller_key`` and its unsatisfied clock."""
        if self._world._fp is not None and controller_key in self._entries:
            self._write(controller_key, "deleted")
            for a, names in self._entries[controller_key].items():
                for n in names:
                    self._write_entry(controller_key, f"{a} {n}", "deleted")
        self._entries.pop(controller_key, None)
        self._first.pop(controller_key, None)


class _Updates:
    __slots__ = ("first_unsatisfied", "objects", "revision")

    def __init__(self, revision: str) -> None:
        self.revision = revision
        self.objects: dict[str, str] = {}  # "namespace/name" -> "Kind namespace/name", insertion ordered
        self.first_unsatisfied: float | None = None


def _revision_label_equals(_controller_key: str, obj: KubeObject, revision: str) -> bool:
    """kruise ``revisionadapter`` ``defaultImpl.EqualToRevisionHash``: the revision-hash label equals it."""
    return obj.labels.get(CONTROLLER_REVISION_HASH_LABEL) == revision


class UpdateExpectations(_Footprints):
    """Kruise ``UpdateExpectations``: the objects a controller updated to a revision and has not yet seen so.

    Per controller key one record: the revision being rolled out and the
    objects (``namespace/name``) whose update to it the cache has not shown.
    A workload controller (CloneSet, Advanced StatefulSet, ...) calls
    :meth:`expect_updated` after each in-place update it sends,
    :meth:`observe_updated` from its Pod event handlers, and holds its sync
    while :meth:`satisfied_expectations` is False, for at most the
    ``--expectation-timeout`` (:data:`KRUISE_EXPECTATION_TIMEOUT`) it compares
    the returned duration with.

    Semantics as ``update_expectations.go``: expecting a new revision drops
    what was expected for the old one; an observation counts only if its
    revision is the expected one and ``equal_to_revision_hash(controller_key,
    obj, revision)`` holds (default: the ``controller-revision-hash`` label, as
    ``revisionadapter.NewDefaultImpl``); the record goes once empty or once an
    observation names another revision; asking about another revision is
    "satisfied" and resets the clock. :meth:`delete_object` forgets one object
    (it was deleted) but keeps the record, even empty.

    Every expectation, observation and the start of an unsatisfied wait is a
    note (kind ``expectation``, keyed by the controller and the objects), so
    a leaked update expectation (one never observed, a controller waiting on
    it until the timeout) shows in a story with the objects it waits for.
    """

    def __init__(
        self, world: World, equal_to_revision_hash: Callable[[str, KubeObject, str], bool] | None = None, *,
        name: str | None = None,
    ) -> None:
        self._world = world
        self.name = _name(world, name, "UpdateExpectations")
        self._equal = equal_to_revision_hash or _revision_label_equals
        self._entries: dict[str, _Updates] = {}

    def expect_updated(self, controller_key: str, revision: str, obj: KubeObject) -> None:
        """``ExpectUpdated``: ``controller_key`` updated ``obj`` to ``revision`` and waits to see it so."""
        entry = self._entries.get(controller_key)
        said = f"expects {obj.ref} updated to revision {revision}"
        if entry is None or entry.revision != revision:
            if self._world._fp is not None:  # a new record: the revision, and the old one's objects dropped
                self._write(controller_key, said)
                for item in entry.objects if entry is not None else ():
                    self._write_entry(controller_key, item, f"no longer expects {item} (revision {revision})")
            entry = self._entries[controller_key] = _Updates(revision)
        entry.objects[f"{obj.namespace}/{obj.name}"] = obj.ref
        if self._world._fp is not None:
            self._records(obj)
            self._write_entry(controller_key, f"{obj.namespace}/{obj.name}", said)
        if self._world.noting:
            self._world.note(f"{controller_key} expects {obj.ref} updated to revision {revision}", kind="expectation",
                             keys=(controller_key, obj.ref), op="expect", revision=revision)

    def observe_updated(self, controller_key: str, revision: str, obj: KubeObject) -> None:
        """``ObserveUpdated``: the cache shows ``obj``; it counts if it is at the expected ``revision``."""
        entry = self._entries.get(controller_key)
        if entry is None:
            if self._world._fp is not None:  # an update seen before it was expected is seen for nothing
                self._read(controller_key, f"nothing expected: {obj.ref} seen at revision {revision} for nothing")
            return
        key = f"{obj.namespace}/{obj.name}"
        if self._world._fp is not None:
            self._read(controller_key, f"waits for {', '.join(entry.objects) or 'nothing'} at revision "
                                       f"{entry.revision}; sees {obj.ref} at revision "
                                       f"{obj.labels.get(CONTROLLER_REVISION_HASH_LABEL, '(none)')}")
        if entry.revision == revision and key in entry.objects and self._equal(controller_key, obj, revision):
            if self._world._fp is not None:
                self._write_entry(controller_key, key, f"observed {obj.ref} at revision {revision}")
            del entry.objects[key]
            if self._world.noting:
                self._world.note(f"{controller_key} observed {obj.ref} at revision {revision}", kind="expectation",
                                 keys=(controller_key, obj.ref), op="observe", revision=revision)
        if entry.revision != revision or not entry.objects:
            if self._world._fp is not None:
                self._write(controller_key, "dropped" if not entry.objects else f"dropped (observed revision {revision})")
                for item in entry.objects:
                    self._write_entry(controller_key, item, f"no longer expects {item} (revision {revision})")
            del self._entries[controller_key]

    def delete_object(self, controller_key: str, obj: KubeObject) -> None:
        """``DeleteObject``: ``obj`` is gone, so its update will never be seen; the record itself stays."""
        entry = self._entries.get(controller_key)
        if entry is None:
            return
        if f"{obj.namespace}/{obj.name}" in entry.objects and self._world._fp is not None:
            self._write_entry(controller_key, f"{obj.namespace}/{obj.name}", f"no longer expects {obj.ref} (deleted)")
        if entry.objects.pop(f"{obj.namespace}/{obj.name}", None) is not None and self._world.noting:
            self._world.note(f"{controller_key} no longer expects {obj.ref} updated (deleted)", kind="expectation",
                             keys=(controller_key, obj.ref), op="delete", revision=entry.revision)

    def satisfied_expectations(self, controller_key: str, revision: str) -> tuple[bool, float, list[str]]:
        """``SatisfiedExpectations``: (satisfied, seconds unsatisfied, objects still expected, sorted)."""
        entry = self._entries.get(controller_key)
        if self._world._fp is not None:
            if entry is None or entry.revision != revision or not entry.objects:
                self._read(controller_key, f"update expectations for revision {revision} satisfied" + (
                    "" if entry is None or entry.revision == revision else f" (it expects revision {entry.revision})"))
            else:
                waited = 0.0 if entry.first_unsatisfied is None else self._world.now - entry.first_unsatisfied
                said = (f"update expectations for revision {revision} unsatisfied for {waited:g} s: waits for "
                        f"{', '.join(sorted(entry.objects))}")
                self._read(controller_key, said)
                for item in sorted(entry.objects):
                    self._read_entry(controller_key, item, said)
        if entry is None:
            return True, 0.0, []
        if entry.revision != revision:
            entry.first_unsatisfied = None
            return True, 0.0, []
        pending = sorted(entry.objects)
        if pending:
            if entry.first_unsatisfied is None:
                entry.first_unsatisfied = self._world.now
                if self._world.noting:
                    self._world.note(f"{controller_key} update expectations for revision {revision} unsatisfied "
                                     f"(waits for {', '.join(pending)}): the clock starts", kind="expectation",
                                     keys=(controller_key, *entry.objects.values()), op="unsatisfied",
                                     revision=revision)
            return False, self._world.now - entry.first_unsatisfied, pending
        entry.first_unsatisfied = None
        return True, 0.0, pending

    def get_expectations(self, controller_key: str) -> tuple[str, list[str]] | None:
        """``(revision, objects still expected)`` for ``controller_key``, or None: a read with no side effects."""
        entry = self._entries.get(controller_key)
        if self._world._fp is not None:
            said = "nothing expected" if entry is None else \
                f"revision {entry.revision}, waits for {', '.join(sorted(entry.objects)) or 'nothing'}"
            self._read(controller_key, said)
            for item in sorted(entry.objects) if entry is not None else ():
                self._read_entry(controller_key, item, said)
        return None if entry is None else (entry.revision, sorted(entry.objects))

    def delete_expectations(self, controller_key: str) -> None:
        """``DeleteExpectations``: forget the record of ``controller_key`` (the workload is gone)."""
        entry = self._entries.pop(controller_key, None)
        if self._world._fp is not None and entry is not None:
            self._write(controller_key, "deleted")
            for item in entry.objects:
                self._write_entry(controller_key, item, "deleted")


class _Controllee:
    __slots__ = ("add", "delete", "timestamp")

    def __init__(self, add: int, delete: int, timestamp: float) -> None:
        self.add = add
        self.delete = delete
        self.timestamp = timestamp


class ControllerExpectations(_Footprints):
    """Kubernetes ``ControllerExpectations``: counts of creates/deletes still to be observed."""

    def __init__(self, world: World, timeout: float = EXPECTATIONS_TIMEOUT, *, name: str | None = None) -> None:
        self._world = world
        self.name = _name(world, name, "ControllerExpectations")
        self.timeout = timeout
        self._entries: dict[str, _Controllee] = {}

    def set_expectations(self, key: str, add: int, delete: int) -> None:
        """Replace the record (and its timestamp) for ``key``."""
        if self._world._fp is not None:
            self._write(key, f"expects {add} creation(s) and {delete} deletion(s), stamped t={self._world.now:.3f}")
        if self._world.noting:
            self._world.note(f"{key} expects {add} creation(s) and {delete} deletion(s)", kind="expectation", key=key,
                             op="expect", add=add, delete=delete)
        self._entries[key] = _Controllee(add, delete, self._world.now)

    def expect_creations(self, key: str, adds: int) -> None:
        """Expect ``adds`` creations for ``key`` (replacing what was expected), stamped now."""
        self.set_expectations(key, adds, 0)

    def expect_deletions(self, key: str, dels: int) -> None:
        """Expect ``dels`` deletions for ``key`` (replacing what was expected), stamped now."""
        self.set_expectations(key, 0, dels)

    def raise_expectations(self, key: str, add: int, delete: int) -> None:
        """Expect ``add`` more creations and ``delete`` more deletions for ``key``, if it has an entry."""
        entry = self._entries.get(key)
        if entry is not None:
            entry.add += add
            entry.delete += delete
            if self._world._fp is not None:
                self._write(key, f"raised to (add, del) = ({entry.add}, {entry.delete})")

    def lower_expectations(self, key: str, add: int, delete: int) -> None:
        """``add`` creations and ``delete`` deletions of ``key`` were observed (the counts may go below zero)."""
        entry = self._entries.get(key)
        if entry is not None:
            entry.add -= add
            entry.delete -= delete
            if self._world._fp is not None:
                self._write(key, f"observed {add} creation(s) and {delete} deletion(s): (add, del) = "
                                 f"({entry.add}, {entry.delete})")
            if self._world.noting:
                self._world.note(f"{key} observed {add} creation(s) and {delete} deletion(s); still expects "
                                 f"(add, del) = ({entry.add}, {entry.delete})", kind="expectation", key=key,
                                 op="observe", add=entry.add, delete=entry.delete)

    def creation_observed(self, key: str) -> None:
        """An informer saw one of ``key``'s creations."""
        self.lower_expectations(key, 1, 0)

    def deletion_observed(self, key: str) -> None:
        """An informer saw one of ``key``'s deletions."""
        self.lower_expectations(key, 0, 1)

    def satisfied_expectations(self, key: str) -> bool:
        """True when fulfilled, expired (older than ``timeout``) or absent: then the controller syncs."""
        entry = self._entries.get(key)
        fp = self._world._fp is not None
        if entry is None:
            if fp:
                self._read(key, "satisfied (nothing expected)")
            return True
        if entry.add <= 0 and entry.delete <= 0:
            if fp:
                self._read(key, f"satisfied: (add, del) = ({entry.add}, {entry.delete})")
            return True
        expired = self._world.now - entry.timestamp > self.timeout
        if fp:
            age = self._world.now - entry.timestamp
            self._read(key, f"{'expired' if expired else 'unsatisfied'}: (add, del) = ({entry.add}, {entry.delete}) "
                            f"set {age:g} s ago" + (f", past the {self.timeout:g} s TTL" if expired else ""))
        if not expired and self._world.noting:
            self._world.note(f"{key} expectations unsatisfied (add, del) = ({entry.add}, {entry.delete}): the sync "
                             "waits for them", kind="expectation", key=key, op="unsatisfied")
        if expired and self._world.noting:
            self._world.note(f"{key} expectations expired after {self.timeout:g} s (still {entry.add} add, "
                             f"{entry.delete} delete): the controller syncs anyway", kind="expectation", key=key,
                             op="expired")
        return expired

    def get_expectations(self, key: str) -> tuple[int, int] | None:
        """``(add, delete)`` still expected for ``key``, or None; a read with no side effects."""
        entry = self._entries.get(key)
        if self._world._fp is not None:
            self._read(key, "nothing expected" if entry is None else f"(add, del) = ({entry.add}, {entry.delete})")
        return None if entry is None else (entry.add, entry.delete)

    def delete_expectations(self, key: str) -> None:
        """Drop ``key``'s entry: the next ``satisfied_expectations`` is True."""
        if self._world._fp is not None and key in self._entries:
            self._write(key, "deleted")
        if self._world.noting and key in self._entries:
            self._world.note(f"{key} expectations deleted", kind="expectation", key=key, op="delete")
        self._entries.pop(key, None)
