"""An informer's read side: the lister over its indexer, the handler signatures and the relist's tombstone.

What a controller reads (``Lister.Get``, ``Lister.List``: client-go's generated
listers over ``cache.Indexer``) and what its handlers are called with
(``ResourceEventHandlerFuncs``; ``DeletedFinalStateUnknown`` for a delete seen
only through a relist). The informer that fills the indexer is ``_informer.py``.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._errors import NotFound
from ._objects import KubeObject

if TYPE_CHECKING:
    from ._informer import Informer


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """A delete seen only through a relist: ``obj`` is the last state the cache had."""

    key: str
    obj: KubeObject


OnAdd = Callable[[KubeObject], None]
OnUpdate = Callable[[KubeObject, KubeObject], None]
OnDelete = Callable[["KubeObject | DeletedFinalStateUnknown"], None]


class Lister:
    """The read side of an informer's indexer; every read returns copies.

    Every read is a footprint entry of the step that makes it
    (:meth:`World.touch`): the cache entries it returned with their
    resourceVersions, "absent" for a key it did not find, and for a list the
    kind's whole cache. In a told run a read also says what the apiserver
    held that the cache did not show yet ("web-dg2zb absent (the apiserver
    has rv=4)"), and reads the commit it missed, so a story shows the write a
    decision did not see.
    """

    __slots__ = ("_informer", "_store", "kind")

    def __init__(self, kind: str, store: dict[str, KubeObject], informer: Informer | None = None) -> None:
        self.kind = kind
        self._store = store
        self._informer = informer

    def get(self, namespace: str, name: str) -> KubeObject:
        """``Lister.Get``: the cached object, or :class:`NotFound` (as the generated listers return)."""
        key = f"{namespace}/{name}" if namespace else name
        obj = self._store.get(key)
        inf = self._informer
        if inf is not None and inf._world._fp is not None:
            inf._touch_read(key, obj)
        if obj is None:
            raise NotFound.of(self.kind, name)
        return obj.deepcopy()

    def try_get(self, namespace: str, name: str) -> KubeObject | None:
        """A copy of the cached object, or None when the cache does not hold it (no error, no request)."""
        key = f"{namespace}/{name}" if namespace else name
        obj = self._store.get(key)
        inf = self._informer
        if inf is not None and inf._world._fp is not None:
            inf._touch_read(key, obj)
        return None if obj is None else obj.deepcopy()

    def list(self, namespace: str | None = None, selector: dict[str, str] | None = None) -> builtins.list[KubeObject]:
        """``Lister.List``: cached objects (cache insertion order), by namespace and labels."""
        found = [
            o
            for o in self._store.values()
            if (namespace is None or o.namespace == namespace) and o.matches(selector)
        ]
        inf = self._informer
        if inf is not None and inf._world._fp is not None:
            inf._touch_list(found, namespace, selector)
        return [o.deepcopy() for o in found]

    def resource_version(self, namespace: str, name: str) -> int | None:
        """The cached RV of a key without copying (for oracles)."""
        key = f"{namespace}/{name}" if namespace else name
        obj = self._store.get(key)
        inf = self._informer
        if inf is not None and inf._world._fp is not None:
            inf._touch_read(key, obj)
        return None if obj is None else obj.resource_version

    def list_keys(self) -> builtins.list[str]:
        """``ListKeys``: the cached ``namespace/name`` keys."""
        inf = self._informer
        if inf is not None and inf._world._fp is not None:
            inf._touch_list(list(self._store.values()), None, None)
        return list(self._store)

    def __len__(self) -> int:
        return len(self._store)
