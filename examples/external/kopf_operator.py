"""An unmodified kopf operator, run as its own process (``kopf run --standalone -n default``): the same duplicate race.

For every ConfigMap labelled ``app.example/want=secret`` it keeps one Secret
(labelled ``app.example/owner=<name>``). kopf feeds an in-memory index of the
Secrets from its own watch of them (``@kopf.index``), and the ConfigMap's event
handler looks there before it creates one: when the ConfigMap changes again
while the Secret's ADDED event is still on its way on the other watch, the
index has no Secret and a second one is created. The fix (``RACE_FIXED=1`` in
the environment) asks the apiserver before it creates.
"""

from __future__ import annotations

import os

import kopf
from kubernetes import client, config

OWNER = "app.example/owner"
FIXED = os.environ.get("RACE_FIXED") == "1"


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: object) -> None:
    settings.posting.enabled = False  # no Event objects for its log lines: only the operator's own requests
    config.load_kube_config()


@kopf.index("secrets", labels={OWNER: kopf.PRESENT})
def by_owner(name: str, labels: dict[str, str], **_: object) -> dict[str, str]:
    return {labels[OWNER]: name}


@kopf.on.event("configmaps", labels={"app.example/want": "secret"})
def ensure(type: str, name: str, namespace: str, by_owner: kopf.Index[str, str], **_: object) -> None:
    if type not in ("ADDED", "MODIFIED", None):  # None: the initial listing
        return
    core = client.CoreV1Api()
    if FIXED:
        if core.list_namespaced_secret(namespace, label_selector=f"{OWNER}={name}").items:
            return
    elif name in by_owner:
        return
    body = client.V1Secret(metadata=client.V1ObjectMeta(generate_name=f"{name}-", labels={OWNER: name}))
    core.create_namespaced_secret(namespace, body)
