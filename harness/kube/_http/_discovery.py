"""Aggregated discovery: ``/api`` and ``/apis`` as one ``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList`` each.

client-go's discovery client (``discovery/discovery_client.go``, ``downloadLegacy``
and ``downloadAPIs``) asks ``/api`` and ``/apis`` with
``Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json``
(kubectl and a controller-runtime manager's REST mapper alike) and reads the
answer as aggregated only when the response's Content-Type names that type
(``ContentTypeIsGVK``); a plain ``APIGroupList`` makes it fall back to one more
request per group-version (``/apis/<group>/<version>``). kube-apiserver answers
the aggregated type (``k8s.io/apiserver/pkg/endpoints/discovery/aggregated/handler.go``,
``ServeHTTP`` negotiating it against the Accept header): every served
group-version with its resources, each with its scope, singular name, verbs,
short names and subresources, in one document. The shapes are those of
``k8s.io/api/apidiscovery/v2/types.go``; the entries are the legacy
``APIResourceList``'s, so the two kinds of discovery never disagree.
"""

from __future__ import annotations

from typing import Any

#: the media type client-go asks first and reads as aggregated discovery (``discovery.AcceptV2``)
AGGREGATED_V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def wants_aggregated(accept: str) -> bool:
    """Whether the Accept header takes ``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList`` (kube-apiserver
    serves it when any accepted type names it; the ``profile=nopeer`` variant is the same document here: this
    apiserver has no peers)."""
    for part in accept.split(","):
        base, *params = (p.strip() for p in part.split(";"))
        got = dict(p.split("=", 1) for p in params if "=" in p)
        if (base == "application/json" and got.get("g") == "apidiscovery.k8s.io" and got.get("v") == "v2"
                and got.get("as") == "APIGroupDiscoveryList"):
            return True
    return False


def aggregated(legacy: list[tuple[str, str, list[dict[str, Any]]]]) -> dict[str, Any]:
    """The ``APIGroupDiscoveryList`` of ``(group, version, APIResourceList entries)``, groups and versions in the
    order given (the first version of a group is its preferred one, as the legacy ``APIGroup`` says)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for group, version, entries in legacy:
        resources: dict[str, dict[str, Any]] = {}
        for e in entries:
            name, _, sub = e["name"].partition("/")
            kind = {"group": e.get("group", group), "version": e.get("version", version), "kind": e["kind"]}
            if not sub:
                r: dict[str, Any] = {"resource": name, "responseKind": kind,
                                     "scope": "Namespaced" if e["namespaced"] else "Cluster",
                                     "singularResource": e.get("singularName", ""), "verbs": list(e["verbs"])}
                if e.get("shortNames"):
                    r["shortNames"] = list(e["shortNames"])
                resources[name] = r
            elif name in resources:
                resources[name].setdefault("subresources", []).append(
                    {"subresource": sub, "responseKind": kind, "verbs": list(e["verbs"])})
        groups.setdefault(group, []).append({"version": version, "resources": list(resources.values()),
                                             "freshness": "Current"})
    items = [{"metadata": {"name": g, "creationTimestamp": None} if g else {"creationTimestamp": None},
              "versions": versions} for g, versions in groups.items()]
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}
