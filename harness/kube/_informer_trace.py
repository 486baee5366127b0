"""What an informer tells the run: the footprints of its cache's reads and writes, and the notes of a told run.

Every lister read and every cache write is a footprint entry of the step that
makes it (:meth:`World.touch`), so the reduction sees which step read from
which; in a told run the notes say what a LIST returned and which handler got
which object. :class:`InformerTrace` is the part of :class:`Informer` that
does only this: it changes nothing the informer delivers.
"""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING

from ._lister import DeletedFinalStateUnknown
from ._objects import KubeObject

if TYPE_CHECKING:
    from harness.sim import World

    from ._apiserver import APIServer
    from ._informer import _Replacement
    from ._listeners import _Handler


class InformerTrace:
    """The footprints and notes of an :class:`Informer` (its base class: the informer's own state, read only)."""

    _world: World
    _api: APIServer
    kind: str
    name: str
    _cache: str
    _cache_all: str
    relists: int

    # ------------------------------------------------------------- footprints
    def _touch_write(self, key: str, obj: KubeObject | None, membership: bool) -> None:
        """A cache entry written (``obj``) or removed (None); ``membership``: the set of cached keys changed."""
        world = self._world
        said = f"{self.name} cache: {key} " + ("deleted" if obj is None else f"rv={obj.resource_version}")
        world.touch(self._cache + key, write=True, said=said, version=None if obj is None else obj.resource_version)
        world.touch(self._cache_all, write=True, decides=membership)

    def _touch_memory(self, what: str, new: KubeObject | DeletedFinalStateUnknown,
                      handlers: builtins.list[_Handler]) -> None:
        """A model's handler ran: it wrote its process's memory, which the harness cannot see (told runs only).

        The memory is :meth:`World.memory_of` the informer's actor: one resource
        per declared process (every undeclared actor's is one and the same),
        read by every step of that process's actors, so a decision reads from
        the last handler call before it. A process that records its memory by
        key (``share_memory(..., recorded=True)``) is told key by key instead.
        """
        mem = self._world.memory_of(self.name)
        if mem is None or not any(fn is not None and not str(getattr(fn, "__module__", "")).startswith("harness.")
                                  for h in handlers for fn in h):
            return
        obj = new.obj if isinstance(new, DeletedFinalStateUnknown) else new
        call = {"add": "OnAdd", "synthetic add": "OnAdd", "update": "OnUpdate"}.get(what, "OnDelete")
        self._world.touch(mem, write=True, said=f"{call} {obj.ref} rv={obj.resource_version}")

    def _touch_read(self, key: str, obj: KubeObject | None) -> None:
        """A lister read of one key: the entry and its resourceVersion, or absent (and, told, what it missed)."""
        world = self._world
        said = f"lister {self.kind} {key}: " + ("absent" if obj is None else f"rv={obj.resource_version}")
        missed = self._missed(key, obj) if world.noting else None
        if world.noting and obj is not None and obj.deletion_timestamp is not None:
            said += " (deleting)"  # what a reconcile branches on first; the story shows it where it was read
        if missed is not None:
            # a cached object of the same name that is another object (deleted and re-created meanwhile)
            other = f", another object: {obj.uid} cached, {missed.uid} live" if obj is not None and \
                missed.uid != obj.uid else ""
            said += f" (the apiserver has rv={missed.resource_version}{other})"
        world.touch(self._cache + key, said=said)
        if missed is not None:  # the commit the cache does not show yet: a story names the write it did not see
            world.touch(missed.ref, said=f"{missed.key} rv={missed.resource_version} not yet in the cache",
                        version=missed.resource_version)

    def _touch_list(self, found: builtins.list[KubeObject], namespace: str | None,
                    selector: dict[str, str] | None) -> None:
        """A lister LIST: each entry returned, the whole cache, and (told) the objects it did not show yet."""
        world = self._world
        for o in found:
            world.touch(self._cache + o.key, said=f"rv={o.resource_version}")
        where = f" of {namespace}" if namespace else ""
        sel = "" if not selector else " " + ",".join(f"{k}={v}" for k, v in selector.items())
        names = ", ".join(o.name for o in found[:6]) + (", ..." if len(found) > 6 else "")
        said = f"lister: {len(found)} {self.kind}{'s' if len(found) != 1 else ''}{where}{sel}" + (
            f" ({names})" if found else "")
        missing: builtins.list[KubeObject] = []
        if world.noting:
            shown = {o.key for o in found}
            missing = [o for o in self._api._select(self.kind, namespace, selector) if o.key not in shown]
            if missing:
                said += "; " + ", ".join(f"{o.name} absent" for o in missing[:4]) + (
                    f" and {len(missing) - 4} more" if len(missing) > 4 else "") + " (on the apiserver, not yet cached)"
            stale = [o for o in found if (cur := self._api._store.get(self.kind, {}).get(o.key)) is not None
                     and cur.resource_version != o.resource_version]
            if stale:
                said += "; stale: " + ", ".join(f"{o.name} rv={o.resource_version}" for o in stale[:4])
        world.touch(self._cache_all, said=said)
        for o in missing:
            world.touch(o.ref, said=f"{o.key} rv={o.resource_version} not yet in the cache", version=o.resource_version)

    def _missed(self, key: str, obj: KubeObject | None) -> KubeObject | None:
        """What the apiserver holds under ``key`` that this cache does not show (newer, or not cached at all)."""
        cur = self._api._store.get(self.kind, {}).get(key)
        if cur is None or (obj is not None and obj.resource_version >= cur.resource_version):
            return None
        return cur

    # ------------------------------------------------------------------ notes
    def _note_handler(
        self, what: str, old: KubeObject | DeletedFinalStateUnknown | None, new: KubeObject | DeletedFinalStateUnknown,
        by: str,
    ) -> None:
        """The note of one handler call: which callback got which object (``OnAdd``, ``OnUpdate``, ``OnDelete``)."""
        obj = new.obj if isinstance(new, DeletedFinalStateUnknown) else new
        call = {"add": "OnAdd", "synthetic add": "OnAdd (late handler)", "update": "OnUpdate"}.get(what, "OnDelete")
        was = f" (was rv={old.resource_version})" if isinstance(old, KubeObject) and what == "update" else ""
        tomb = " (DeletedFinalStateUnknown)" if isinstance(new, DeletedFinalStateUnknown) else ""
        self._world.note(f"{call} {obj.ref} rv={obj.resource_version}{was}{tomb}", kind="handler", key=obj.ref,
                         handler=call, rv=obj.resource_version, listener=by)

    def _note_list(self, objects: builtins.list[KubeObject], rv: int, stale: tuple[int, str, float] | None,
                   deltas: builtins.list[_Replacement]) -> None:
        """The note of a LIST: its revision, what it returned, and (for a relist) what it will replace."""
        names = ", ".join(o.key for o in objects[:6]) + (", ..." if len(objects) > 6 else "")
        n = len(objects)
        where = "the apiserver" if stale is None else (
            f"a lagging watch cache (the revision of {stale[1]}; the apiserver is at rv={self._api.resource_version}); "
            f"the view stays there until t={stale[2]:.3f}")
        first = "" if self.relists <= 1 else "re"
        tombs = [d for d in deltas if d[0] == "tombstone"]
        keys = [o.ref for o in objects] + [t.obj.ref for _, t in tombs if isinstance(t, DeletedFinalStateUnknown)]
        self._world.note(
            f"{first}LIST {self.kind} at rv={rv} from {where}: {n} object{'s' if n != 1 else ''}"
            + (f" ({names})" if objects else "") + (f"; {len(tombs)} known key(s) missing" if tombs else ""),
            kind="list", keys=keys, rv=rv, objects=n, stale=stale is not None, relist=self.relists > 1,
            listed=self.kind,
        )
