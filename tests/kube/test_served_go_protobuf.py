"""A real Go client's protobuf bodies (``tests/kube/goclient``) read back as what the same Go objects marshal to.

client-go 0.37's typed clients send a built-in kind as
``application/vnd.kubernetes.protobuf`` when their config names no ContentType
(``gentype/type.go`` ``PrefersProtobuf``; controller-runtime's client does the
same for client-go's scheme, ``pkg/client/apiutil/apimachinery.go``) and retry
in JSON after a 415 only for CBOR (``rest/client.go``): a served API that
refuses one fails the controller. The Go program creates a populated Pod (ports,
env, resources in quantities, probes with IntOrString ports, volumes,
tolerations, affinity), a Deployment, ReplicaSet, StatefulSet, Job, Service,
ConfigMap, Secret (binary data), PodDisruptionBudget and ControllerRevision
against ``python -m harness serve``, and prints for each the Content-Type it
sent, ``json.Marshal`` of the object it sent, and the server's JSON GET of it.
Encoder and oracle are upstream's (gogo's generated ``Marshal``, Go's
``encoding/json``): the decoder is never its own oracle.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.test_serve import serving
from tests.kube.go_support import go_client

PROTOBUF = "application/vnd.kubernetes.protobuf"
#: what the server sets on a create (``rest.BeforeCreate``, ``FillObjectMetaSystemFields``, field managers)
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields", "namespace")


def _without_nulls(doc: Any) -> Any:
    """Go writes ``null`` for a nil list with no ``omitempty`` and for the zero time; the protobuf message carries
    neither, so the server leaves them out (``_protobuf.py``)."""
    if isinstance(doc, dict):
        return {k: _without_nulls(v) for k, v in doc.items() if v is not None}
    if isinstance(doc, list):
        return [_without_nulls(v) for v in doc]
    return doc


def test_go_client_protobuf_bodies_store_what_go_marshals(tmp_path: Path) -> None:
    """Each create goes as protobuf and is stored as the JSON ``encoding/json`` writes for the object sent, field for
    field (quantities as their canonical strings, IntOrString as a string or an int, ``[]byte`` as base64, the
    embedded ProbeHandler and VolumeSource flattened, pointers to zero values kept, omitempty zeros dropped), once
    what the server sets is set aside: metadata's system fields, apiVersion and kind (the envelope's), and an
    empty status the create resets (``PrepareForCreate``). A typed Delete's DeleteOptions go as protobuf too, and
    a precondition on another uid is a Conflict (``rest.BeforeDelete``) that leaves the object."""
    binary = go_client()
    with serving(tmp_path) as (kubeconfig, kubectl):
        done = subprocess.run([str(binary), "--kubeconfig", str(kubeconfig)], capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        still_there = json.loads(kubectl("get", "configmap", "settings", "-o", "json"))
    *created, deleted = [json.loads(line) for line in done.stdout.splitlines()]
    assert [c["kind"] for c in created] == ["Pod", "Deployment", "ReplicaSet", "StatefulSet", "Job", "Service",
                                            "ConfigMap", "Secret", "PodDisruptionBudget", "ControllerRevision"]
    for c in created:
        assert c["contentType"] == PROTOBUF, c
        sent, stored = _without_nulls(c["sent"]), c["stored"]
        assert (stored.pop("apiVersion"), stored.pop("kind")) == (
            {"ReplicaSet": "apps/v1", "Deployment": "apps/v1", "StatefulSet": "apps/v1", "Job": "batch/v1",
             "ControllerRevision": "apps/v1", "PodDisruptionBudget": "policy/v1"}.get(c["kind"], "v1"), c["kind"])
        for key in SERVER_SET:
            stored["metadata"].pop(key, None)
        if sent.get("status") == {}:
            del sent["status"]
        assert stored == sent, c["kind"]
    pod = created[0]["stored"]["spec"]
    container = pod["containers"][0]
    assert container["resources"] == {"limits": {"cpu": "1500m", "memory": "128Mi"},
                                      "requests": {"cpu": "250m", "memory": "64M"}}
    assert container["livenessProbe"]["httpGet"]["port"] == "http"
    assert container["readinessProbe"] == {"tcpSocket": {"port": 8080}, "terminationGracePeriodSeconds": 0}
    assert pod["volumes"][0] == {"name": "cache", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}
    assert pod["priority"] == -5 and pod["securityContext"]["supplementalGroups"] == [3000, 4000]
    assert created[7]["stored"]["data"] == {"key": "AAH+/2s=", "empty": ""}
    assert [p["targetPort"] for p in created[5]["stored"]["spec"]["ports"]] == ["http", 9091]
    assert deleted["contentType"] == PROTOBUF and "Precondition failed: UID in precondition: not-its-uid" in (
        deleted["delete"])
    assert still_there["data"] == {"mode": "fast", "empty": ""}
