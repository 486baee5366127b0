"""An operator as written whose watch loop does not survive its connection breaking (a real bug: on a cluster, the
apiserver's restart ends every watch). It is imported by the test as user code, not as the harness's."""

from __future__ import annotations

import anyio
from lightkube import AsyncClient
from lightkube.resources.core_v1 import ConfigMap


async def watch_configmaps(client: AsyncClient, seen: list[str]) -> None:
    async for _kind, obj in client.watch(ConfigMap, namespace="default"):
        seen.append(obj.metadata.name)
        if obj.metadata.name == "poison":
            raise ValueError(f"cannot parse {obj.metadata.name}")  # the operator's own bug


async def main(fixed: bool = False) -> None:
    client = AsyncClient()
    seen: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_configmaps, client, seen)
