"""Protobuf request bodies (``harness/kube/_http/_protobuf.py``): the kinds kubectl sends as protobuf, read into JSON.

The bytes are built here by hand from the wire format (a varint key
``number << 3 | wire type``, then a varint or a length and its bytes) and the
field numbers of upstream's ``generated.proto`` files, each cited where used:
the decoder is never its own oracle.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

import harness as h
from harness.kube import APIServer
from harness.kube._http._protobuf import decode_protobuf
from harness.kube._http._status import BadRequest, UnsupportedMediaType
from tests.kube.kube_support import clean, run

PROTO = {"Content-Type": "application/vnd.kubernetes.protobuf"}


# ------------------------------------------------------------------------------------------- an encoder
def varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # a negative int64 goes as its two's complement, ten bytes
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def num(number: int, value: int) -> bytes:
    """A varint field (wire type 0)."""
    return varint(number << 3) + varint(value)


def ld(number: int, payload: bytes | str) -> bytes:
    """A length-delimited field (wire type 2): a string, bytes or an embedded message."""
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | 2) + varint(len(data)) + data


def entry(number: int, key: str, value: bytes | str) -> bytes:
    """One entry of a map field: an embedded message {key=1, value=2}."""
    return ld(number, ld(1, key) + ld(2, value))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    """apimachinery ``pkg/runtime/serializer/protobuf/protobuf.go``: ``k8s\\x00`` then a ``runtime.Unknown``
    (``pkg/runtime/generated.proto``: typeMeta{apiVersion=1, kind=2}=1, raw=2, contentEncoding=3, contentType=4),
    with the empty contentEncoding and contentType gogo writes."""
    return b"k8s\x00" + ld(1, ld(1, api_version) + ld(2, kind)) + ld(2, raw) + ld(3, "") + ld(4, "")


def meta(*fields: bytes) -> bytes:
    """ObjectMeta as field 1 of an object, after the zero values gogo writes for an object kubectl builds
    (apimachinery ``pkg/apis/meta/v1/generated.proto``: generateName=2, selfLink=4, uid=5, resourceVersion=6,
    generation=7, creationTimestamp=8); a field sent twice reads as its last value."""
    zeros = ld(2, "") + ld(4, "") + ld(5, "") + ld(6, "") + num(7, 0) + ld(8, b"")
    return ld(1, zeros + b"".join(fields))


# ------------------------------------------------------------------------------------------- the decoder
def test_protobuf_core_kinds_decode_to_their_json() -> None:
    """Namespace, ConfigMap and Secret as kubectl 1.32's ``create`` sends them, read into the JSON document Go's
    encoder writes for the same object: zero values of ``omitempty`` fields dropped, pointers kept even when
    false (``immutable``), ``[]byte`` values base64 (Secret ``data``, ConfigMap ``binaryData``), ``metav1.Time``
    in whole seconds (``time_proto.go`` drops nanos). Field numbers: k8s.io/api ``core/v1/generated.proto``
    (Namespace spec=2 {finalizers=1}, status=3 {phase=1}; ConfigMap data=2, binaryData=3, immutable=4; Secret
    data=2, type=3, stringData=4, immutable=5) and ObjectMeta's (name=1, namespace=3, creationTimestamp=8 as
    Time{seconds=1, nanos=2}, deletionGracePeriodSeconds=10, labels=11, annotations=12, ownerReferences=13 as
    OwnerReference{kind=1, name=3, uid=4, apiVersion=5, controller=6}, finalizers=14)."""
    ns = envelope("v1", "Namespace", meta(ld(1, "team-a"), ld(3, ""), entry(11, "env", "dev"))
                  + ld(2, ld(1, "kubernetes")) + ld(3, ld(1, "")))
    assert decode_protobuf(ns, "v1", "Namespace") == {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", "labels": {"env": "dev"}},
        "spec": {"finalizers": ["kubernetes"]}, "status": {}}

    owner = ld(1, "Deployment") + ld(3, "web") + ld(4, "u-1") + ld(5, "apps/v1") + num(6, 1)
    cm = envelope("v1", "ConfigMap",
                  meta(ld(1, "cfg"), ld(3, "default"), entry(12, "note", "x"), ld(13, owner), ld(14, "a/b"),
                       ld(14, "c/d"), num(10, 0), ld(8, num(1, 1_700_000_000) + num(2, 5)))
                  + entry(2, "a", "b") + entry(2, "c", "") + entry(3, "bin", b"\xff\x00") + num(4, 0))
    assert decode_protobuf(cm, "v1", "ConfigMap") == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cfg", "namespace": "default", "annotations": {"note": "x"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                          "uid": "u-1", "controller": True}],
                     "finalizers": ["a/b", "c/d"], "deletionGracePeriodSeconds": 0,
                     "creationTimestamp": "2023-11-14T22:13:20Z"},
        "data": {"a": "b", "c": ""}, "binaryData": {"bin": "/wA="}, "immutable": False}

    secret = envelope("v1", "Secret", meta(ld(1, "s")) + entry(2, "password", b"s3cr\xc3t") + ld(3, "")
                      + entry(4, "plain", "text") + num(5, 1))
    assert decode_protobuf(secret, "v1", "Secret") == {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "czNjcsN0"},
        "stringData": {"plain": "text"}, "immutable": True}


def test_protobuf_reviews_decode_to_their_json() -> None:
    """``kubectl auth can-i`` sends a SelfSubjectAccessReview, ``--list`` a SelfSubjectRulesReview; k8s.io/api
    ``authorization/v1/generated.proto``: spec=2 {resourceAttributes=1 {namespace=1, verb=2, group=3,
    version=4, resource=5, subresource=6, name=7, fieldSelector=8 {rawSelector=1, requirements=2 {key=1,
    operator=2, values=3}}}, nonResourceAttributes=2 {path=1, verb=2}}, status=3 {allowed=1, reason=2,
    evaluationError=3, denied=4}; ``allowed`` has no ``omitempty`` (types.go), so false stays."""
    status = ld(3, num(1, 0) + ld(2, "") + ld(3, "") + num(4, 0))
    attrs = (ld(1, "default") + ld(2, "get") + ld(3, "") + ld(4, "") + ld(5, "pods") + ld(6, "") + ld(7, "")
             + ld(8, ld(2, ld(1, "spec.nodeName") + ld(2, "In") + ld(3, "n1") + ld(3, "n2"))))
    review = envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", meta() + ld(2, ld(1, attrs)) + status)
    assert decode_protobuf(review, "authorization.k8s.io/v1", "SelfSubjectAccessReview") == {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {},
        "spec": {"resourceAttributes": {
            "namespace": "default", "verb": "get", "resource": "pods",
            "fieldSelector": {"requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["n1", "n2"]}]}}},
        "status": {"allowed": False}}

    non_resource = envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview",
                            ld(2, ld(2, ld(1, "/logs") + ld(2, "get"))))
    assert decode_protobuf(non_resource, "", "")["spec"] == {"nonResourceAttributes": {"path": "/logs", "verb": "get"}}

    rules = envelope("authorization.k8s.io/v1", "SelfSubjectRulesReview",
                     meta() + ld(2, ld(1, "default")) + ld(3, num(3, 0) + ld(4, "")))
    assert decode_protobuf(rules, "", "") == {
        "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "metadata": {},
        "spec": {"namespace": "default"}, "status": {"incomplete": False}}


def test_protobuf_service_account_and_rbac_decode_to_their_json() -> None:
    """``kubectl create serviceaccount|role|clusterrole|rolebinding|clusterrolebinding`` send protobuf too.
    k8s.io/api ``core/v1/generated.proto``: ServiceAccount secrets=2 (ObjectReference kind=1, namespace=2, name=3),
    imagePullSecrets=3 (name=1), automountServiceAccountToken=4 (a pointer: false stays); ``rbac/v1/generated.proto``:
    Role/ClusterRole rules=2 (PolicyRule verbs=1, apiGroups=2, resources=3, resourceNames=4, nonResourceURLs=5),
    ClusterRole aggregationRule=3 {clusterRoleSelectors=1 (LabelSelector matchLabels=1)}, RoleBinding subjects=2
    (Subject kind=1, apiGroup=2, name=3, namespace=4), roleRef=3 (apiGroup=1, kind=2, name=3). Subject's kind and
    name and every RoleRef field have no ``omitempty`` (rbac/v1/types.go), so the core group's ``""`` stays."""
    sa = envelope("v1", "ServiceAccount", meta(ld(1, "bob")) + ld(2, ld(1, "Secret") + ld(3, "tok"))
                  + ld(3, ld(1, "regcred")) + num(4, 0))
    assert decode_protobuf(sa, "v1", "ServiceAccount") == {
        "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bob"},
        "secrets": [{"kind": "Secret", "name": "tok"}], "imagePullSecrets": [{"name": "regcred"}],
        "automountServiceAccountToken": False}

    rbac = "rbac.authorization.k8s.io/v1"
    role = envelope(rbac, "Role", meta(ld(1, "r")) + ld(2, ld(1, "get") + ld(1, "list") + ld(2, "") + ld(3, "pods")
                                                        + ld(4, "x")))
    assert decode_protobuf(role, rbac, "Role")["rules"] == [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["x"]}]
    cluster_role = envelope(rbac, "ClusterRole", meta(ld(1, "agg")) + ld(2, ld(1, "get") + ld(5, "/logs"))
                            + ld(3, ld(1, entry(1, "example.com/aggregate", "true"))))
    assert decode_protobuf(cluster_role, rbac, "ClusterRole") == {
        "apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": "agg"},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/logs"]}],
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate": "true"}}]}}
    binding = (meta(ld(1, "rb")) + ld(2, ld(1, "ServiceAccount") + ld(2, "") + ld(3, "bob") + ld(4, "default"))
               + ld(2, ld(1, "User") + ld(2, "rbac.authorization.k8s.io") + ld(3, "alice") + ld(4, ""))
               + ld(3, ld(1, "") + ld(2, "ClusterRole") + ld(3, "view")))
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        assert decode_protobuf(envelope(rbac, kind, binding), rbac, kind) == {
            "apiVersion": rbac, "kind": kind, "metadata": {"name": "rb"},
            "subjects": [{"kind": "ServiceAccount", "name": "bob", "namespace": "default"},
                         {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}],
            "roleRef": {"apiGroup": "", "kind": "ClusterRole", "name": "view"}}


def test_protobuf_webhook_configurations_decode_to_their_json() -> None:
    """envtest creates its webhook configurations with controller-runtime's client, as protobuf (client-go's scheme
    has them). k8s.io/api ``admissionregistration/v1/generated.proto``: MutatingWebhookConfiguration and
    ValidatingWebhookConfiguration metadata=1, webhooks=2; MutatingWebhook name=1, clientConfig=2 (WebhookClientConfig
    service=1, caBundle=2 bytes, url=3), rules=3 (RuleWithOperations operations=1, rule=2: Rule apiGroups=1,
    apiVersions=2, resources=3, scope=4, which JSON inlines), failurePolicy=4, namespaceSelector=5, sideEffects=6,
    timeoutSeconds=7, admissionReviewVersions=8, matchPolicy=9; ``caBundle`` is ``[]byte``, base64 in JSON."""
    group = "admissionregistration.k8s.io/v1"
    rule = ld(1, "CREATE") + ld(1, "UPDATE") + ld(2, ld(1, "secrets.example.com") + ld(2, "v1") + ld(3, "widgets"))
    webhook = (ld(1, "mwidget-v1.kb.io") + ld(2, ld(2, b"\x00PEM\xff") + ld(3, "https://127.0.0.1:9443/mutate-widget"))
               + ld(3, rule) + ld(4, "Fail") + ld(5, b"") + ld(6, "None") + num(7, 5) + ld(8, "v1"))
    want = {"name": "mwidget-v1.kb.io",
            "clientConfig": {"caBundle": "AFBFTf8=", "url": "https://127.0.0.1:9443/mutate-widget"},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["secrets.example.com"], "apiVersions": ["v1"],
                       "resources": ["widgets"]}],
            "failurePolicy": "Fail", "namespaceSelector": {}, "sideEffects": "None", "timeoutSeconds": 5,
            "admissionReviewVersions": ["v1"]}
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
        body = envelope(group, kind, meta(ld(1, "hooks")) + ld(2, webhook))
        assert decode_protobuf(body, group, kind) == {"apiVersion": group, "kind": kind, "metadata": {"name": "hooks"},
                                                      "webhooks": [want]}


def quantity(number: int, value: str) -> bytes:
    """``resource.Quantity`` as field ``number``: apimachinery ``pkg/api/resource/generated.proto``
    ``message Quantity { optional string string = 1; }``."""
    return ld(number, ld(1, value))


def int_or_string(number: int, value: int | str) -> bytes:
    """``intstr.IntOrString`` as field ``number``: apimachinery ``pkg/util/intstr/generated.proto`` (type=1, intVal=2,
    strVal=3), written whole as gogo writes it (type 1 is String)."""
    if isinstance(value, str):
        return ld(number, num(1, 1) + num(2, 0) + ld(3, value))
    return ld(number, num(1, 0) + num(2, value) + ld(3, ""))


def test_protobuf_pod_decodes_nested_types_to_their_json() -> None:
    """A Pod reaches the types with a message and a JSON form of their own, and the embedded structs JSON
    flattens. k8s.io/api ``core/v1/generated.proto``: Pod spec=2; PodSpec volumes=1, containers=2,
    securityContext=14 {supplementalGroups=4, repeated int64}, tolerations=22, overhead=32 (map of Quantity);
    Container name=1, image=2, ports=6 {name=1, hostPort=2, containerPort=3, protocol=4}, resources=8 {limits=1,
    requests=2}, livenessProbe=10, readinessProbe=11; Probe handler=1 (``ProbeHandler``, embedded with no JSON
    name, so its fields are the Probe's), initialDelaySeconds=2; ProbeHandler httpGet=2 {path=1, port=2},
    tcpSocket=3 {port=1}; Volume name=1, volumeSource=2 (embedded likewise) {emptyDir=2 {medium=1, sizeLimit=2}};
    Toleration key=1, operator=2, effect=4, tolerationSeconds=5 (``*int64``: 0 stays). IntOrString reads as the
    string or the int by its type; Quantity as its string, kept where Go keeps a struct; a repeated int64 reads
    both unpacked and packed (gogo's ``Unmarshal`` takes either); zero values of ``omitempty`` fields
    (ContainerPort name and hostPort, EmptyDir medium) are dropped as Go's encoder drops them."""
    port = ld(6, ld(1, "") + num(2, 0) + num(3, 8080) + ld(4, "TCP"))
    resources = ld(8, entry(1, "cpu", ld(1, "500m")) + entry(1, "memory", ld(1, "64Mi"))
                   + entry(2, "cpu", ld(1, "250m")))
    liveness = ld(10, ld(1, ld(2, ld(1, "/healthz") + int_or_string(2, "http"))) + num(2, 3))
    readiness = ld(11, ld(1, ld(3, int_or_string(1, 8080))))
    container = ld(2, ld(1, "web") + ld(2, "nginx") + port + resources + liveness + readiness)
    volume = ld(1, ld(1, "cache") + ld(2, ld(2, ld(1, "") + quantity(2, "1Gi"))))
    groups = num(4, 1000) + ld(4, varint(2000) + varint(3000))
    toleration = ld(22, ld(1, "node.kubernetes.io/not-ready") + ld(2, "Exists") + ld(4, "NoExecute") + num(5, 0))
    spec = volume + container + ld(14, groups) + toleration + ld(32, ld(1, "cpu") + ld(2, ld(1, "100m")))
    pod = envelope("v1", "Pod", meta(ld(1, "web-0"), ld(3, "default")) + ld(2, spec) + ld(3, b""))
    assert decode_protobuf(pod, "v1", "Pod") == {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default"},
        "spec": {
            "volumes": [{"name": "cache", "emptyDir": {"sizeLimit": "1Gi"}}],
            "containers": [{
                "name": "web", "image": "nginx", "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "500m", "memory": "64Mi"}, "requests": {"cpu": "250m"}},
                "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 3},
                "readinessProbe": {"tcpSocket": {"port": 8080}}}],
            "securityContext": {"supplementalGroups": [1000, 2000, 3000]},
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 0}],
            "overhead": {"cpu": "100m"}},
        "status": {}}

    # ServicePort targetPort=4: an IntOrString value with omitempty, which Go's encoder never drops (a struct)
    svc = envelope("v1", "Service", meta(ld(1, "web")) + ld(2, ld(1, ld(1, "") + ld(2, "TCP") + num(3, 80)
                                                                     + int_or_string(4, 0) + num(5, 0))))
    assert decode_protobuf(svc, "v1", "Service")["spec"] == {"ports": [{"protocol": "TCP", "port": 80, "targetPort": 0}]}


def test_protobuf_envelope_without_type_takes_the_urls() -> None:
    """``Serializer.Decode`` fills an envelope's missing apiVersion and kind from what the handler decodes into
    (``copyKindDefaults``); a negative int64 arrives as ten bytes and reads back negative."""
    body = b"k8s\x00" + ld(2, meta(ld(1, "x"), num(10, -5)))
    assert decode_protobuf(body, "v1", "ConfigMap") == {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "deletionGracePeriodSeconds": -5}}


def test_protobuf_message_sent_twice_merges() -> None:
    """The protobuf encoding's rule for an embedded message that occurs twice, which gogo's generated ``Unmarshal``
    follows (it unmarshals into the field it already holds): the two merge, a scalar's last value wins, repeated
    fields and maps gather both."""
    body = envelope("v1", "ConfigMap", ld(1, ld(1, "old") + entry(11, "a", "1") + ld(14, "f/1"))
                    + ld(1, ld(1, "new") + entry(11, "b", "2") + ld(14, "f/2")))
    assert decode_protobuf(body, "v1", "ConfigMap")["metadata"] == {
        "name": "new", "labels": {"a": "1", "b": "2"}, "finalizers": ["f/1", "f/2"]}


@pytest.mark.parametrize(("body", "names"), [
    (envelope("v1", "ConfigMap", meta(ld(1, "x")) + ld(9, "?")), "field 9 of ConfigMap"),
    (envelope("v1", "ConfigMap", meta(ld(1, "x"), ld(15, "old-cluster"))), "field 15 of ObjectMeta (ConfigMap.metadata)"),
    (envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", ld(2, ld(1, ld(10, "?")))),
     "field 10 of ResourceAttributes (SelfSubjectAccessReview.spec.resourceAttributes)"),
    (envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", meta(ld(1, "w.example"))),
     "protobuf of CustomResourceDefinition (apiextensions.k8s.io/v1)"),
    (envelope("networking.k8s.io/v1", "Ingress", meta(ld(1, "web"))), "protobuf of Ingress (networking.k8s.io/v1)"),
])
def test_protobuf_field_or_kind_not_read_is_415(body: bytes, names: str) -> None:
    """A field number no table names, or a kind with none, is refused with a 415 that names it, never read into a
    wrong object (upstream's gogo ``Unmarshal`` would skip an unknown field; field 15 was ObjectMeta's
    clusterName, removed from generated.proto)."""
    with pytest.raises(UnsupportedMediaType) as err:
        decode_protobuf(body, "v1", "ConfigMap")
    assert names in err.value.message, err.value.message
    assert "application/json" in err.value.message


GOOD = envelope("v1", "ConfigMap", meta(ld(1, "cfg")) + entry(2, "a", "b"))


@pytest.mark.parametrize(("body", "says"), [
    (GOOD[:-7], "is truncated: a field declares"),
    (GOOD[:-1], "truncated"),
    (b"k8s\x00" + b"\x0a", "runtime.Unknown is truncated: it ends inside a varint"),
    (b"k8s\x00" + ld(2, b"\x08" + b"\xff" * 11), "varint longer than 10 bytes"),
    (b"\x0a\x02v1", "does not appear to be a protobuf message"),
    (b"k8s\x00", "empty body"),
    (envelope("v1", "ConfigMap", num(2, 1)), "ConfigMap.data (field 2 of ConfigMap) has wire type 0, expected 2"),
    (envelope("v1", "ConfigMap", ld(1, ld(1, b"\xff"))), "ConfigMap.metadata.name is not valid UTF-8"),
    (envelope("v1", "ConfigMap", b"\x0b"), "wire type 3"),
])
def test_protobuf_malformed_body_is_400(body: bytes, says: str) -> None:
    """A body that is not the envelope or not well-formed protobuf fails its decoder, which ``handlers/create.go``
    answers as a 400 BadRequest (``transformDecodeError``), with a message that says where."""
    with pytest.raises(BadRequest) as err:
        decode_protobuf(body, "v1", "ConfigMap")
    assert says in err.value.message, err.value.message
    assert err.value.message.startswith("the protobuf body could not be decoded: ")


# ------------------------------------------------------------------------------------------- through the handler
def test_protobuf_bodies_through_the_handler() -> None:
    """Over the REST handler (the path kubectl's requests take in ``serve``): protobuf creates and updates write
    the objects they carry, answered in JSON (client-go reads a JSON answer whatever it sent, ``rest/request.go``
    ``transformResponse`` decodes by the response's Content-Type); a SelfSubjectAccessReview is answered allowed as
    its JSON twin is; a body not read is a 415 ``Status`` and a malformed one a 400, with nothing written."""
    got: dict[str, httpx.Response] = {}
    stored: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with httpx.AsyncClient(transport=api.transport(client="pb"), base_url="http://kube") as c:
            cms = "/api/v1/namespaces/default/configmaps"
            got["ns"] = await c.post("/api/v1/namespaces", headers=PROTO,
                                     content=envelope("v1", "Namespace", meta(ld(1, "team-a")) + ld(2, b"")))
            got["cm"] = await c.post(cms, headers=PROTO, content=GOOD)
            rv = got["cm"].json()["metadata"]["resourceVersion"]
            update = envelope("v1", "ConfigMap", meta(ld(1, "cfg"), ld(6, rv)) + entry(2, "a", "changed"))
            got["put"] = await c.put(f"{cms}/cfg", headers=PROTO, content=update)
            got["secret"] = await c.post("/api/v1/namespaces/default/secrets", headers=PROTO, content=envelope(
                "v1", "Secret", meta(ld(1, "s")) + entry(2, "k", b"v")))
            got["review"] = await c.post("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", headers=PROTO,
                                         content=envelope("authorization.k8s.io/v1", "SelfSubjectAccessReview", ld(
                                             2, ld(1, ld(1, "default") + ld(2, "get") + ld(5, "pods")))))
            got["crd"] = await c.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", headers=PROTO,
                                      content=envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition",
                                                       meta(ld(1, "w.example"))))
            got["truncated"] = await c.post(cms, headers=PROTO, content=GOOD[:-3])
            got["wrong kind"] = await c.post(cms, headers=PROTO,
                                             content=envelope("v1", "Secret", meta(ld(1, "s2"))))
        for kind, ns, name in (("Namespace", "", "team-a"), ("ConfigMap", "default", "cfg"),
                               ("Secret", "default", "s"), ("CustomResourceDefinition", "", "w.example"),
                               ("ConfigMap", "default", "s2")):
            obj = api.peek(kind, ns, name)
            stored[name] = None if obj is None else obj.extra.get("data")

    clean(run(scenario))
    assert [got[k].status_code for k in ("ns", "cm", "put", "secret", "review")] == [201, 201, 200, 201, 201]
    for k in ("ns", "cm", "put", "secret", "review"):
        assert got[k].headers["content-type"].startswith("application/json"), got[k].headers
    assert got["put"].json()["data"] == {"a": "changed"}
    assert stored == {"team-a": None, "cfg": {"a": "changed"}, "s": {"k": "dg=="}, "w.example": None,
                      "s2": None}
    review = got["review"].json()
    assert review["status"]["allowed"] is True
    assert review["spec"] == {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods"}}
    crd = got["crd"].json()
    assert (got["crd"].status_code, crd["reason"]) == (415, "UnsupportedMediaType")
    assert "protobuf of CustomResourceDefinition (apiextensions.k8s.io/v1)" in crd["message"]
    bad = got["truncated"].json()
    assert (got["truncated"].status_code, bad["reason"]) == (400, "BadRequest")
    assert "truncated" in bad["message"]
    assert got["wrong kind"].status_code == 400, got["wrong kind"].json()
    assert "does not match" in got["wrong kind"].json()["message"]


def test_protobuf_delete_options_of_any_group_version() -> None:
    """controller-runtime's client deletes a built-in kind with a protobuf ``DeleteOptions`` body, enveloped as the
    group version of the object (``meta/v1/register.go``: ``AddToGroupVersion`` registers DeleteOptions in every
    group version); fields from ``meta/v1/generated.proto`` (gracePeriodSeconds=1, preconditions{uid=1,
    resourceVersion=2}=2, orphanDependents=3, propagationPolicy=4, dryRun=5). Over the handler its UID
    precondition holds: a wrong UID is a 409 Conflict and the object stays, the right one deletes it."""
    body = envelope("v1", "DeleteOptions", num(1, 0) + ld(2, ld(1, "u-1")) + ld(4, "Background") + ld(5, "All"))
    assert decode_protobuf(body, "v1", "DeleteOptions") == {
        "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0, "preconditions": {"uid": "u-1"},
        "propagationPolicy": "Background", "dryRun": ["All"]}
    apps = decode_protobuf(envelope("apps/v1", "DeleteOptions", num(3, 1)), "apps/v1", "DeleteOptions")
    assert apps == {"apiVersion": "apps/v1", "kind": "DeleteOptions", "orphanDependents": True}
    got: dict[str, httpx.Response] = {}
    left: list[Any] = []

    async def scenario(world: h.World) -> None:
        api = APIServer(world)
        async with httpx.AsyncClient(transport=api.transport(client="pb"), base_url="http://kube") as c:
            cms = "/api/v1/namespaces/default/configmaps"
            uid = (await c.post(cms, headers=PROTO, content=GOOD)).json()["metadata"]["uid"]
            got["wrong"] = await c.request("DELETE", f"{cms}/cfg", headers=PROTO, content=envelope(
                "v1", "DeleteOptions", ld(2, ld(1, "not-" + uid))))
            left.append(api.peek("ConfigMap", "default", "cfg"))
            got["right"] = await c.request("DELETE", f"{cms}/cfg", headers=PROTO, content=envelope(
                "v1", "DeleteOptions", ld(2, ld(1, uid))))
            left.append(api.peek("ConfigMap", "default", "cfg"))

    clean(run(scenario))
    assert got["wrong"].status_code == 409, got["wrong"].json()
    assert got["right"].status_code == 200, got["right"].json()
    assert left[0] is not None and left[1] is None
