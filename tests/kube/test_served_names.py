"""Object names on a create through the served API (``harness/kube/_http/_names.py``), as ``ValidateObjectMeta``
checks them with each kind's name validator."""

from __future__ import annotations

import json
from typing import Any

import harness as h
from harness.kube import APIServer
from harness.kube._http._handler import _handler_of
from tests.kube.kube_support import clean, run

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                 "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
                 r"is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
             "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")


def test_object_names_are_validated() -> None:
    """``apimachinery/pkg/api/validation/objectmeta.go`` ``ValidateObjectMeta`` calls the kind's name function:
    ``NameIsDNSSubdomain`` for a ConfigMap or a Deployment (``pkg/apis/core/validation`` ``ValidateConfigMapName``,
    ``pkg/apis/apps/validation`` ``ValidateDeploymentName``), ``NameIsDNSLabel`` for a Namespace
    (``ValidateNamespaceName``), ``NameIsDNS1035Label`` for a Service; each message is ``util/validation``'s
    ``RegexError``/``MaxLenError``. ``errors.NewInvalid`` answers 422 ``Kind.group "name" is invalid: <field
    error>``, ``details`` naming the kind and a ``FieldValueInvalid`` cause at ``metadata.name``. A dotted name is
    a valid subdomain (ConfigMap) but no label (Namespace); a generateName's trailing dash is allowed."""
    got: dict[str, Any] = {}

    async def scenario(world: h.World) -> None:
        handler = _handler_of(APIServer(world))

        async def create(path: str, meta: dict[str, Any]) -> tuple[int, Any]:
            reply = await handler.handle("POST", path, {}, json.dumps({"metadata": meta, "spec": {}}).encode(), "t")
            return reply.code, reply.doc

        cms = "/api/v1/namespaces/default/configmaps"
        got["bad cm"] = await create(cms, {"name": "Bad_Name!"})
        got["dotted cm"] = (await create(cms, {"name": "a.b"}))[0]
        got["dotted ns"] = await create("/api/v1/namespaces", {"name": "a.b"})
        got["long ns"] = await create("/api/v1/namespaces", {"name": "n" * 64})
        got["svc digit"] = (await create("/api/v1/namespaces/default/services", {"name": "1svc"}))[0]
        got["deploy"] = await create("/apis/apps/v1/namespaces/default/deployments", {"name": "Web"})
        got["generate"] = await create(cms, {"generateName": "web-"})
        got["stored"] = sorted(o.name for o in handler.api.peek_all("ConfigMap"))

    clean(run(scenario))
    code, doc = got["bad cm"]
    assert code == 422 and doc["reason"] == "Invalid"
    assert doc["message"] == f'ConfigMap "Bad_Name!" is invalid: metadata.name: Invalid value: "Bad_Name!": {SUBDOMAIN_MSG}'
    assert doc["details"] == {"name": "Bad_Name!", "kind": "ConfigMap", "causes": [
        {"reason": "FieldValueInvalid", "message": f'Invalid value: "Bad_Name!": {SUBDOMAIN_MSG}',
         "field": "metadata.name"}]}
    assert got["dotted cm"] == 201
    code, doc = got["dotted ns"]
    assert code == 422 and doc["details"]["causes"][0]["message"] == f'Invalid value: "a.b": {LABEL_MSG}'
    code, doc = got["long ns"]
    assert code == 422 and doc["message"].startswith(f'Namespace "{"n" * 64}" is invalid: metadata.name: Invalid '
                                                     f'value: "{"n" * 64}": must be no more than 63 characters')
    assert got["svc digit"] == 422  # a DNS-1035 label starts with a letter
    code, doc = got["deploy"]
    assert code == 422 and doc["message"].startswith('Deployment.apps "Web" is invalid: metadata.name:')
    assert doc["details"]["group"] == "apps" and doc["details"]["kind"] == "Deployment"
    assert got["generate"][0] == 201 and got["generate"][1]["metadata"]["name"].startswith("web-")
    assert len(got["stored"]) == 2 and "a.b" in got["stored"]
