"""``dryRun=All``: a write's answer computed over the stored object, never committed.

Upstream runs the whole write with a ``DryRunnableStorage``
(``apiserver/pkg/registry/generic/registry/dryrun.go``) that does every check
and returns the object it would have stored, without a revision. Here the
apiserver's write verbs are the models' (their yield points and their faults
are what runs explore), so a dry run does not call them: it reads the stored
object, runs the same checks the registry's helpers run, and builds the object
the write would commit. Nothing is stored, no revision is taken, no watch
event is sent, and no request step is taken (a dry run is invisible to runs).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .._errors import AlreadyExists, Conflict, NotFound
from .._lifecycle import lifecycle_refusal, prepare_namespace
from .._objects import KubeObject
from .._registry import _namespace_finalizers, deletion_finalizers, rewritten

if TYPE_CHECKING:
    from .._apiserver import APIServer

DRY_RUN_ALL = "All"


class DryRun:
    """The would-be results of :class:`~harness.kube.APIServer`'s writes, mirroring ``_registry.py``'s verbs."""

    def __init__(self, api: APIServer) -> None:
        self.api = api

    def _admit(self, operation: str, kind: str, namespace: str, name: str) -> None:
        """The NamespaceLifecycle admission runs for a dry run too (admission comes before the storage)."""
        err = lifecycle_refusal(self.api._store.get("Namespace", {}), operation, kind, namespace, name)
        if err is not None:
            raise err

    def _current(self, kind: str, namespace: str, name: str) -> KubeObject:
        cur = self.api._store.get(kind, {}).get(f"{namespace}/{name}" if namespace else name)
        if cur is None:
            raise NotFound.of(kind, name)
        return cur

    def create(self, obj: KubeObject, generate_name: str) -> KubeObject:
        """``Registry._create``: the name taken is AlreadyExists; the uid is the one a create would assign next."""
        api = self.api
        new = obj.deepcopy()
        self._admit("create", new.kind, new.namespace, new.name)
        if generate_name and not new.name:
            sequence = api._generated  # a dry run names the object without using up a name of the sequence
            try:
                new.name = api._generate_name(new.kind, new.namespace, generate_name)
            finally:
                api._generated = sequence
        if new.key in api._store.get(new.kind, {}):
            raise AlreadyExists.of(new.kind, new.name)
        new.uid = f"uid-{api._uids + 1:04d}"
        new.generation = 1
        new.creation_timestamp = api._world.now
        new.deletion_timestamp = None
        new.deletion_grace_period_seconds = None
        new.resource_version = 0
        if new.kind == "Namespace":
            prepare_namespace(new)
        return new

    def rewrite(self, verb: str, kind: str, namespace: str, name: str, build: Callable[[KubeObject], KubeObject],
                *, status_only: bool = False, keep_status: bool = True, no_new_finalizers: bool = False) -> KubeObject:
        """``Registry._update``/``_update_status``/``_rewrite``: the object as the commit would write it.

        Its resourceVersion stays the stored one, as ``DryRunnableStorage.GuaranteedUpdate`` answers.
        """
        cur = self._current(kind, namespace, name)
        self._admit("update", kind, namespace, name)
        obj = build(cur.deepcopy())
        self.api._check_update(verb, obj, cur)
        new = rewritten(cur, obj, status_only=status_only, keep_status=keep_status)
        if no_new_finalizers:
            self.api._check_no_new_finalizers(verb, cur, new)
        return new

    def delete(self, kind: str, namespace: str, name: str, *, uid: str | None, resource_version: int | None,
               propagation: str | None, grace_period_seconds: int | None) -> tuple[KubeObject, bool]:
        """``Registry._delete``: the object as deleted or as marked, and whether it would still be stored."""
        api = self.api
        self._admit("delete", kind, namespace, name)
        cur = self._current(kind, namespace, name)
        if uid is not None and uid != cur.uid:
            raise Conflict.precondition(kind, name, "UID", uid, cur.uid)
        if resource_version is not None and resource_version != cur.resource_version:
            raise Conflict.precondition(kind, name, "ResourceVersion", resource_version, cur.resource_version)
        awaiting = bool(api._awaiting_kubelet.get(cur.uid))
        new = cur.deepcopy()
        if cur.deletion_timestamp is not None and awaiting:
            if kind == "Pod" and grace_period_seconds == 0:
                new.deletion_grace_period_seconds = 0
                return new, bool(new.finalizers)
            return new, True
        new.finalizers = deletion_finalizers(cur.finalizers, propagation)
        if cur.deletion_timestamp is not None:
            return new, bool(new.finalizers) or _namespace_finalizers(new)
        grace = 0
        if kind == "Pod" and cur.spec.get("nodeName"):
            default = int(cur.spec.get("terminationGracePeriodSeconds", api._default_grace))
            grace = default if grace_period_seconds is None else grace_period_seconds
        new.deletion_timestamp = api._world.now + grace
        new.deletion_grace_period_seconds = grace
        if _namespace_finalizers(new):
            new.status = {**new.status, "phase": "Terminating"}
        elif not new.finalizers and grace == 0:
            return new, False
        if new.generation > 0:
            new.generation += 1
        return new, True
