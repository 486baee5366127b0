"""The secret operator's integration test, as its author wrote it: one Secret per labelled ConfigMap, through an
update of the ConfigMap. Against a test cluster it passes nearly every time: the Secret's event reaches the
operator before the ConfigMap's update does, except now and then in CI."""

from __future__ import annotations

import time
from collections.abc import Callable

from kubernetes import client

NS = "default"


def eventually(check: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def consistently(check: Callable[[], bool], duration: float = 0.5) -> None:
    end = time.monotonic() + duration
    while time.monotonic() < end:
        assert check()
        time.sleep(0.01)


def owned_secrets(core: client.CoreV1Api, owner: str) -> list[str]:
    return [s.metadata.name for s in
            core.list_namespaced_secret(NS, label_selector=f"app.example/owner={owner}").items]


def test_one_secret_per_configmap(core: client.CoreV1Api, operator: object) -> None:
    core.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="app", labels={"app.example/want": "secret"}), data={"v": "1"}))
    eventually(lambda: len(owned_secrets(core, "app")) == 1)
    core.patch_namespaced_config_map("app", NS, {"data": {"v": "2"}})
    consistently(lambda: len(owned_secrets(core, "app")) == 1)
    assert len(owned_secrets(core, "app")) == 1, owned_secrets(core, "app")
