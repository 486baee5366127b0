"""A small operator on the official synchronous ``kubernetes`` client, run as its own process: a duplicate-creation race.

For every ConfigMap labelled ``app.example/want=secret`` it keeps one Secret
(labelled ``app.example/owner=<name>``, named by ``generateName``). It watches
ConfigMaps and Secrets on two watch connections (two threads, as client-go's
informers are two watches) and keeps what the Secret watch told it in memory.

The race (``--buggy``): a reconcile checks that memory, not the apiserver, before
it creates. When the ConfigMap is updated after the Secret was created, and the
Secret's ADDED event is still on its way on the other connection, the reconcile
sees no Secret and creates a second one. Live, the Secret's event nearly always
arrives first: the race needs a held delivery. The fix (``--fixed``) asks the
apiserver (a LIST with the label selector) before it creates, as a controller
with expectations would wait for its own create.
"""

from __future__ import annotations

import sys
import threading

from kubernetes import client, config, watch

NS = "default"
WANT = "app.example/want=secret"
OWNER = "app.example/owner"

fixed = "--fixed" in sys.argv
lock = threading.Lock()
secrets: dict[str, str] = {}  # secret name -> owner, as the Secret watch told it


def reconcile(core: client.CoreV1Api, owner: str) -> None:
    if fixed:
        live = core.list_namespaced_secret(NS, label_selector=f"{OWNER}={owner}").items
        if live:
            return
    else:
        with lock:
            if owner in secrets.values():
                return
    body = client.V1Secret(metadata=client.V1ObjectMeta(generate_name=f"{owner}-", labels={OWNER: owner}))
    core.create_namespaced_secret(NS, body)


def watch_secrets(core: client.CoreV1Api) -> None:
    for event in watch.Watch().stream(core.list_namespaced_secret, NS, label_selector=OWNER):
        meta = event["object"].metadata
        with lock:
            if event["type"] == "DELETED":
                secrets.pop(meta.name, None)
            else:
                secrets[meta.name] = meta.labels[OWNER]


def main() -> None:
    config.load_kube_config()
    core = client.CoreV1Api()
    threading.Thread(target=watch_secrets, args=(core,), daemon=True).start()
    for event in watch.Watch().stream(core.list_namespaced_config_map, NS, label_selector=WANT):
        if event["type"] in ("ADDED", "MODIFIED"):
            reconcile(core, event["object"].metadata.name)


if __name__ == "__main__":
    main()
