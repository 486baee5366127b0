"""Admission webhooks as kube-apiserver calls them: the configurations served, the matching, the calls, the verdicts.

A ``MutatingWebhookConfiguration`` or ``ValidatingWebhookConfiguration``
(``admissionregistration.k8s.io/v1``) stored in the apiserver is called for every create, update (a PUT, a patch,
an apply, a status write) and delete the served API admits, after the apiserver's own NamespaceLifecycle admission
and before the write is stored, as ``k8s.io/apiserver/pkg/admission/plugin/webhook`` does:

* which webhooks: every webhook of every configuration, configurations in name order and webhooks in their order
  (``configuration/mutating_webhook_manager.go`` sorts by name); one is called when a rule matches
  (``predicates/rules/rules.go`` ``Matcher.Matches``: operations, apiGroups, apiVersions, resources with ``*`` and
  ``pods/status``-style subresources, scope), its ``namespaceSelector`` matches the namespace's labels
  (``predicates/namespace/matcher.go``: a cluster-scoped object always matches; a Namespace's own create or update
  reads the object's labels) and its ``objectSelector`` the object's or the old object's labels
  (``predicates/object/matcher.go``). The configurations themselves are never sent to webhooks
  (``rules.IsExemptAdmissionConfigurationResource``). ``matchPolicy: Equivalent`` has nothing to add here: each
  kind is served by one group and version (Event's two groups are the one exception), so the exact match is the
  equivalent one;
* mutating webhooks first, one after another, each ``JSONPatch`` applied to the object the next one sees
  (``mutating/dispatcher.go``); then the validating ones, which upstream calls in parallel and which are called
  here one after another in the same order, the first refusal being the answer (``validating/dispatcher.go``);
* the request (``request/admissionreview.go`` ``CreateV1AdmissionReview``): an ``AdmissionReview`` v1 with uid,
  kind, resource, subResource, requestKind, requestResource, requestSubResource, name, namespace, operation,
  userInfo, object, oldObject, dryRun and options, POSTed to ``clientConfig.url`` (its path cleaned, as client-go
  joins it) with ``?timeout=Ns`` over HTTPS trusting ``clientConfig.caBundle``, each certificate of it a trust
  anchor as in Go's ``crypto/x509`` (the system's roots without one): :func:`_post`;
* the verdicts (``errors/statuserror.go`` ``ToStatusErr``): ``allowed: false`` is the webhook's own ``status``
  with its message prefixed ``admission webhook "NAME" denied the request: `` and a code below 400 raised to
  400; a call that fails (refused, timed out, TLS, a malformed answer) is ``failed calling webhook "NAME": ...``,
  a 500 InternalError under ``failurePolicy: Fail`` (the default) and ignored under ``Ignore``
  (``util/webhook/error.go``, ``apierrors.NewInternalError``); a dry run reaches only webhooks whose
  ``sideEffects`` is None or NoneOnDryRun, any other is a 400 ``admission webhook "NAME" does not support dry
  run`` (``NewDryRunUnsupportedErr``), whatever the failure policy.

Each call is a step of the world: ``admission webhook NAME CREATE Pod default/x`` before it, and its answer a
wait of its own (``... answers ...``). The call itself is real I/O on a thread; under the scheduler it is a
program outside the world (``harness.sim._outside``): the scheduler waits, on the real clock and up to the
webhook's ``timeoutSeconds``, until the answer is in before it makes its next choice, so a run is the same for
the same answers of its webhooks. A run that tells a story notes each verdict ("admission webhook mpod.kb.io
allowed CREATE Pod default/x (patched 2 ops)").

Not done: reinvocation (``reinvocationPolicy: IfNeeded`` is stored, never acted on), ``matchConditions`` (CEL;
a webhook that has them is called as if they held), ``clientConfig.service`` (no Services run here: a call
failure that says so), AdmissionReview v1beta1 (a webhook must accept v1), the scale subresource, and conversion
webhooks of CRDs (``_resources.py``). A webhook that calls back this apiserver while it answers waits until the
call's timeout: the scheduler holds new requests until the answer is in.
"""

from __future__ import annotations

import base64
import binascii
import http.client
import json
import math
import ssl
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._errors import ApiError, Invalid
from .._objects import object_ref
from ._patches import json_patch
from ._selectors import Requirement, selects

if TYPE_CHECKING:
    from harness.sim import Event, World

    from .._apiserver import APIServer
    from ._resources import Resource

GROUP = "admissionregistration.k8s.io"
MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"
#: ``admissionregistration/v1/defaults.go``: a webhook's timeout when it sets none
DEFAULT_TIMEOUT = 10
#: the user every request is admitted as: the served API authenticates no one and lets everyone do everything
USER_INFO = {"username": "race-harness", "groups": ["system:masters", "system:authenticated"]}


# ------------------------------------------------------------------------------------ the configurations
def default_configuration(kind: str, doc: Any) -> None:
    """``SetDefaults_ValidatingWebhook``/``SetDefaults_MutatingWebhook`` and ``SetDefaults_Rule`` (v1), in place."""
    if not isinstance(doc, dict) or not isinstance(doc.get("webhooks"), list):
        return
    for hook in doc["webhooks"]:
        if not isinstance(hook, dict):
            continue
        hook.setdefault("failurePolicy", "Fail")
        hook.setdefault("matchPolicy", "Equivalent")
        hook.setdefault("namespaceSelector", {})
        hook.setdefault("objectSelector", {})
        hook.setdefault("timeoutSeconds", DEFAULT_TIMEOUT)
        if kind == MUTATING:
            hook.setdefault("reinvocationPolicy", "Never")
        for rule in hook.get("rules") or []:
            if isinstance(rule, dict):
                rule.setdefault("scope", "*")


def validate_configuration(kind: str, doc: Any) -> None:
    """The checks of ``ValidateMutatingWebhookConfiguration`` a webhook here relies on (422 as upstream words them):
    ``sideEffects`` None or NoneOnDryRun (what v1 accepts on create), ``admissionReviewVersions`` naming v1 or
    v1beta1, exactly one of ``clientConfig.url`` and ``clientConfig.service``, an https URL."""
    if not isinstance(doc, dict):
        return
    errors: list[str] = []
    for i, hook in enumerate(doc.get("webhooks") or []):
        if not isinstance(hook, dict):
            continue
        at = f"webhooks[{i}]"
        if not hook.get("name"):
            errors.append(f"{at}.name: Required value")
        side = hook.get("sideEffects")
        if side is None:
            errors.append(f"{at}.sideEffects: Required value: must specify one of None, NoneOnDryRun")
        elif side not in ("None", "NoneOnDryRun"):
            errors.append(f'{at}.sideEffects: Unsupported value: "{side}": supported values: "None", "NoneOnDryRun"')
        versions = hook.get("admissionReviewVersions") or []
        if not versions:
            errors.append(f"{at}.admissionReviewVersions: Required value: must specify one of v1, v1beta1")
        elif not {"v1", "v1beta1"} & set(versions):
            errors.append(f"{at}.admissionReviewVersions: Invalid value: {json.dumps(versions)}: must include at "
                          "least one of v1, v1beta1")
        cc = hook.get("clientConfig") or {}
        if bool(cc.get("url")) == bool(cc.get("service")):
            errors.append(f"{at}.clientConfig: Required value: exactly one of url or service is required")
        elif cc.get("url") and urlsplit(str(cc["url"])).scheme != "https":
            errors.append(f"{at}.clientConfig.url: Invalid value: \"{cc['url']}\": 'https' is the only allowed URL "
                          "scheme")
    if errors:
        name = (doc.get("metadata") or {}).get("name", "")
        raise Invalid(f'{kind}.{GROUP} "{name}" is invalid: ' + ", ".join(errors)
                      if len(errors) == 1 else f'{kind}.{GROUP} "{name}" is invalid: [' + ", ".join(errors) + "]")


# ------------------------------------------------------------------------------------------- one request
@dataclass
class Attributes:
    """``admission.Attributes``: what a webhook is asked about. ``obj`` is the object as the write would store it
    (None for a delete), ``old`` the stored one (None for a create); both in their wire form."""

    operation: str  # CREATE, UPDATE or DELETE
    res: Resource
    subresource: str
    namespace: str
    name: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    options: dict[str, Any]
    dry: bool = False
    patches: list[str] = field(default_factory=list)

    @property
    def ref(self) -> str:
        return object_ref(self.res.kind, self.namespace, self.name)

    @property
    def said(self) -> str:
        """``CREATE Pod default/x`` (``UPDATE Pod default/x status`` for a subresource)."""
        return f"{self.operation} {self.ref}" + (f" {self.subresource}" if self.subresource else "")


class WebhookError(ApiError):
    """A ``metav1.Status`` a webhook's verdict makes (its reason, code and details as given, or none)."""

    def __init__(self, message: str, code: int, reason: str, details: dict[str, Any] | None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.details = details
        self.bare = details is None

    @classmethod
    def internal(cls, message: str) -> WebhookError:
        """``apierrors.NewInternalError``: 500, the message as the only cause."""
        return cls(f"Internal error occurred: {message}", 500, "InternalError", {"causes": [{"message": message}]})


class _CallFailed(Exception):
    """``webhookutil.ErrCallingWebhook``: the call did not give a verdict (the failure policy decides)."""


def configured(api: APIServer) -> bool:
    """Whether any webhook configuration is stored: without one, admission costs nothing and takes no step."""
    return bool(api._store.get(MUTATING)) or bool(api._store.get(VALIDATING))


def _selector(selector: Any) -> tuple[Requirement, ...]:
    """``metav1.LabelSelectorAsSelector``: matchLabels and matchExpressions as requirements."""
    if not isinstance(selector, dict):
        return ()
    out = [Requirement(k, "=", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()]
    ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for e in selector.get("matchExpressions") or []:
        op = ops.get(e.get("operator", ""))
        if op is None:
            raise WebhookError.internal(f'"{e.get("operator")}" is not a valid label selector operator')
        out.append(Requirement(e.get("key", ""), op, tuple(e.get("values") or ())))
    return tuple(out)


def _labels(doc: dict[str, Any] | None) -> dict[str, str] | None:
    return None if doc is None else dict((doc.get("metadata") or {}).get("labels") or {})


def _rule_matches(rule: dict[str, Any], a: Attributes) -> bool:
    """``rules.Matcher.Matches``: scope, operation, group, version and resource (with its subresource)."""
    scope = rule.get("scope") or "*"
    namespaces = a.res.group == "" and a.res.plural == "namespaces"
    if scope == "Namespaced" and (namespaces or not a.namespace):
        return False
    if scope == "Cluster" and not (namespaces or not a.namespace):
        return False
    if scope not in ("*", "Namespaced", "Cluster"):
        return False
    ops = rule.get("operations") or []
    if "*" not in ops and a.operation not in ops:
        return False
    if not {"*", a.res.group} & set(rule.get("apiGroups") or []):
        return False
    if not {"*", a.res.version} & set(rule.get("apiVersions") or []):
        return False
    for text in rule.get("resources") or []:
        res, _, sub = str(text).partition("/")
        if res in ("*", a.res.plural) and sub in ("*", a.subresource):
            return True
    return False


def _should_call(api: APIServer, hook: dict[str, Any], a: Attributes) -> bool:
    """``generic.Webhook.ShouldCallHook``: the namespace selector, the object selector, then the rules."""
    namespaces = a.res.group == "" and a.res.plural == "namespaces"
    ns_selector = _selector(hook.get("namespaceSelector"))
    if ns_selector and (a.namespace or namespaces):
        if namespaces and not a.subresource and a.operation in ("CREATE", "UPDATE"):
            ns_labels = _labels(a.obj) or {}
        else:
            stored = api._store.get("Namespace", {}).get(a.namespace)
            ns_labels = dict(stored.labels) if stored is not None else {}
        if not selects(ns_selector, ns_labels):
            return False
    obj_selector = _selector(hook.get("objectSelector"))
    if obj_selector and not any(labels is not None and selects(obj_selector, labels)
                                for labels in (_labels(a.obj), _labels(a.old))):
        return False
    return any(_rule_matches(r, a) for r in hook.get("rules") or [] if isinstance(r, dict))


def matching(api: APIServer, kind: str, a: Attributes) -> list[dict[str, Any]]:
    """The webhooks of ``kind``'s configurations to call for ``a``: configurations by name, webhooks in order."""
    if a.res.group == GROUP and a.res.kind in (MUTATING, VALIDATING):
        return []
    out = []
    for cfg in sorted(api._store.get(kind, {}).values(), key=lambda c: c.name):
        for hook in cfg.extra.get("webhooks") or []:
            if isinstance(hook, dict) and _should_call(api, hook, a):
                out.append(hook)
    return out


# ------------------------------------------------------------------------------------------- admission
async def admit(api: APIServer, a: Attributes, count: Callable[[], int]) -> dict[str, Any] | None:
    """Call the matching mutating webhooks, then the validating ones; the object they admitted (patched). Raises
    the refusal as an ApiError. ``count()`` numbers this apiserver's calls (each review's uid)."""
    for hook in matching(api, MUTATING, a):
        await _call(api, hook, a, count(), mutating=True)
    for hook in matching(api, VALIDATING, a):
        await _call(api, hook, a, count(), mutating=False)
    return a.obj


def _review(a: Attributes, uid: str) -> dict[str, Any]:
    """``CreateV1AdmissionReview``: the request, kinds and resources as served (no version conversion here)."""
    gvk = {"group": a.res.group, "version": a.res.version, "kind": a.res.kind}
    gvr = {"group": a.res.group, "version": a.res.version, "resource": a.res.plural}
    request: dict[str, Any] = {
        "uid": uid, "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "name": a.name, "namespace": a.namespace, "operation": a.operation, "userInfo": USER_INFO,
        "object": a.obj, "oldObject": a.old, "dryRun": a.dry, "options": a.options,
    }
    if a.subresource:
        request["subResource"] = request["requestSubResource"] = a.subresource
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


async def _call(api: APIServer, hook: dict[str, Any], a: Attributes, n: int, *, mutating: bool) -> None:
    world = api._world
    name = str(hook.get("name", ""))
    if a.dry:
        side = hook.get("sideEffects")
        if side not in ("None", "NoneOnDryRun"):  # callAttrMutatingHook / callHook: before any call
            if side is None:
                verdict: ApiError | None = _failed(hook, "Webhook SideEffects is nil")
                if verdict is not None:
                    raise verdict
                return
            raise WebhookError(f'admission webhook "{name}" does not support dry run', 400, "BadRequest", None)
    uid = f"00000000-0000-4000-8000-{n:012d}"  # upstream's is random; one from a count keeps a run's bytes
    review = _review(a, uid)
    await world.step(f"admission webhook {name} {a.said}", key=a.ref)
    try:
        answer = await _exchange(world, hook, review, f"admission webhook {name} answers {a.said}")
        response = _verify(answer, uid, mutating)
        ops = _patch_of(response) if mutating and response.get("allowed") else []
    except _CallFailed as exc:
        err = _failed(hook, str(exc))
        if world.noting:
            world.note(f"admission webhook {name} failed {a.said}: {exc}" + (
                "" if err is not None else " (failurePolicy Ignore: the request goes on)"), kind="admission",
                key=a.ref, webhook=name, outcome="failed")
        if err is not None:
            raise err from None
        return
    if not response.get("allowed"):
        err = _denied(name, response.get("status"))
        if world.noting:
            world.note(f"admission webhook {name} denied {a.said}: {err.message}", kind="admission", key=a.ref,
                       webhook=name, outcome="denied")
        raise err
    if ops:
        if a.obj is None:  # a DELETE has no object to patch
            raise WebhookError.internal(f'admission webhook "{name}" attempted to modify the object, which is not '
                                        "supported for this operation")
        try:
            a.obj = json_patch(a.obj, ops)
        except ApiError as exc:
            raise WebhookError.internal(exc.message) from None
        a.patches.append(name)
    if world.noting:
        patched = f" (patched {len(ops)} op{'s' if len(ops) != 1 else ''})" if ops else ""
        world.note(f"admission webhook {name} allowed {a.said}{patched}", kind="admission", key=a.ref, webhook=name,
                   outcome="allowed")


def _failed(hook: dict[str, Any], reason: str) -> ApiError | None:
    """A call that failed: ``failurePolicy: Ignore`` lets the request go on (None); ``Fail`` is the 500."""
    if hook.get("failurePolicy", "Fail") == "Ignore":
        return None
    return WebhookError.internal(f'failed calling webhook "{hook.get("name", "")}": {reason}')


def _denied(name: str, status: Any) -> WebhookError:
    """``ToStatusErr``: the webhook's status, its message prefixed, a code below 400 raised to 400."""
    status = status if isinstance(status, dict) else {}
    code = status.get("code") if isinstance(status.get("code"), int) else 0
    denied = f'admission webhook "{name}" denied the request'
    if status.get("message"):
        message = f"{denied}: {status['message']}"
    elif status.get("reason"):
        message = f"{denied}: {status['reason']}"
    else:
        message = f"{denied} without explanation"
    details = status.get("details") if isinstance(status.get("details"), dict) else None
    return WebhookError(message, max(code, 400), str(status.get("reason") or ""), details)


def _verify(answer: Any, uid: str, mutating: bool) -> dict[str, Any]:
    """``VerifyAdmissionResponse`` (v1): the response, its uid, its kind, and patch with patchType."""
    def bad(why: str) -> _CallFailed:
        return _CallFailed(f"received invalid webhook response: {why}")

    if not isinstance(answer, dict):
        raise bad("the answer is not a JSON object")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise bad("webhook response was absent")
    if response.get("uid") != uid:
        raise bad(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
    if (answer.get("apiVersion"), answer.get("kind")) != ("admission.k8s.io/v1", "AdmissionReview"):
        got = f"{answer.get('apiVersion') or '/'}, Kind={answer.get('kind') or ''}"
        raise bad(f"expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {got}")
    patch, ptype = response.get("patch"), response.get("patchType")
    if mutating:
        if patch and ptype is None:
            raise bad("webhook returned response.patch but not response.patchType")
        if not patch and ptype is not None:
            raise bad("webhook returned response.patchType but not response.patch")
    elif patch:
        raise bad("validating webhook may not return response.patch")
    elif ptype is not None:
        raise bad("validating webhook may not return response.patchType")
    return response


def _patch_of(response: dict[str, Any]) -> list[Any]:
    """The JSON patch of an allowed mutating answer (base64 in ``patch``), as a list of operations; an unsupported
    type or an undecodable patch is a failed call (``callAttrMutatingHook``), which the failure policy decides."""
    if not response.get("patch"):
        return []
    if response.get("patchType") != "JSONPatch":
        raise _CallFailed(f'unsupported patch type "{response.get("patchType")}"')
    try:
        ops = json.loads(base64.b64decode(response["patch"], validate=True))
    except (binascii.Error, ValueError, TypeError) as exc:
        raise _CallFailed(f"received undecodable patch in webhook response: {exc}") from None
    if not isinstance(ops, list):
        raise _CallFailed("received undecodable patch in webhook response: not a list of operations")
    return ops


# ------------------------------------------------------------------------------------------- the call
class _Call:
    """One webhook call in flight: its thread's outcome, and the world event its caller waits on."""

    def __init__(self, event: Event, timeout: float) -> None:
        self.event = event
        self.timeout = timeout
        self.done = False
        self.answer: Any = None
        self.error: str | None = None


class Calls:
    """The webhook calls of one world in flight: a program outside the world (``harness.sim._outside``).

    The scheduler waits for it before its next choice while a call is in flight (up to the call's timeout), then
    :meth:`settled` hands each answer to the actor that waits for it, so when an answer arrives, in real time,
    never decides where it lands among the world's steps."""

    #: (the wait looks when a call's answer pokes it)
    look_every = math.inf

    def __init__(self, world: World) -> None:
        import trio

        self.world = world
        self.stirred = False
        self.pending: list[_Call] = []
        self._token = trio.lowlevel.current_trio_token()

    @classmethod
    def of(cls, world: World) -> Calls:
        calls: Calls | None = world.state.get("_admission_webhook_calls")
        if calls is None:
            calls = world.state["_admission_webhook_calls"] = cls(world)
            if world._real is None:
                world._add_outside(calls)
        return calls

    def quiet_for(self) -> float | None:
        return None if any(not c.done for c in self.pending) else math.inf

    def quiet(self) -> float:
        return 0.0

    def bound(self) -> float:
        return max((c.timeout for c in self.pending if not c.done), default=0.0) + 2.0

    def check(self) -> None:
        pass

    def holds(self) -> bool:
        """Calls never hold the world: a call in flight is waited for while it is stirred, then settled."""
        return False

    def settled(self) -> None:
        pending, self.pending = self.pending, []
        for c in pending:
            if not c.done:  # (its thread has its own timeout: this is a last resort)
                c.done, c.error = True, "context deadline exceeded"
            c.event.set()

    def start(self, url: str, ca: bytes | None, body: bytes, timeout: float) -> _Call:
        call = _Call(self.world.Event(), timeout)
        if self.world._real is None:
            self.pending.append(call)
            self.stirred = True

        def run() -> None:
            try:
                answer, error = _post(url, ca, body, timeout), None
            except _CallFailed as exc:
                answer, error = None, str(exc)
            try:
                self._token.run_sync_soon(self._finished, call, answer, error)
            except RuntimeError:  # the run is over (trio.RunFinishedError): nobody waits for the answer
                pass

        threading.Thread(target=run, name="admission-webhook", daemon=True).start()
        return call

    def _finished(self, call: _Call, answer: Any, error: str | None) -> None:
        if call.done:
            return
        call.done, call.answer, call.error = True, answer, error
        if self.world._real is not None:
            call.event.set()
        else:
            self.world._poke_outside()


async def _exchange(world: World, hook: dict[str, Any], review: dict[str, Any], label: str) -> Any:
    """POST the review to the webhook and wait for its answer (a wait of the world's), or raise :class:`_CallFailed`."""
    cc = hook.get("clientConfig") or {}
    if not cc.get("url"):
        raise _CallFailed("could not get REST client: race-harness calls a webhook at its clientConfig.url and runs "
                          "no Services; give the webhook a url")
    if "v1" not in (hook.get("admissionReviewVersions") or []):
        raise _CallFailed("could not create admission objects: race-harness sends AdmissionReview v1 only; add v1 "
                          "to the webhook's admissionReviewVersions")
    ca: bytes | None = None
    if cc.get("caBundle"):
        try:
            ca = base64.b64decode(cc["caBundle"], validate=True)
        except (binascii.Error, ValueError):
            raise _CallFailed("could not get REST client: clientConfig.caBundle is not base64") from None
    timeout = int(hook.get("timeoutSeconds") or DEFAULT_TIMEOUT)
    url = f"{cc['url']}?timeout={timeout}s"
    call = Calls.of(world).start(url, ca, json.dumps(review).encode(), float(timeout))
    if world._real is None:
        await call.event.wait(label)
    else:  # a real-clock run: the thread sets the event; a pending timer keeps the run from counting as settled
        scale = world._real.clock.time_scale  # (virtual seconds of the timer for the call's real bound)
        guard = world.call_later((3 * timeout + 2.0) / scale, lambda: None, label=f"{label}: still waiting",
                                 actor="admission")
        try:
            await call.event.wait(label)
        finally:
            guard.cancel()
    if not call.done:
        raise _CallFailed(f'failed to call webhook: Post "{url}": context deadline exceeded')
    if call.error is not None:
        raise _CallFailed(call.error)
    return call.answer


def _post(url: str, ca: bytes | None, body: bytes, timeout: float) -> Any:
    """One HTTPS POST (on a thread), its JSON answer; a failure as client-go words it (``Post "URL": ...``).

    Two things as kube-apiserver's client does them, which a webhook server of envtest's needs:

    * the path is the URL's, cleaned: ``webhookutil.ClientManager.HookClient`` (``k8s.io/apiserver/pkg/util/webhook/
      client.go``) makes it the rest config's ``APIPath``, which client-go joins (``rest/url_utils.go``
      ``DefaultVersionedAPIPath``: ``path.Join("/", apiPath)``). envtest writes ``https://host:port/`` + a
      service path that starts with ``/`` (``pkg/envtest/webhook.go`` ``updateClientConfig``), and Go's
      ``http.ServeMux`` answers ``//mutate-...`` with a redirect, not the webhook;
    * a certificate of ``caBundle`` is a trust anchor even when it is no CA's own: Go's ``crypto/x509``
      (``verify.go``, ``Certificate.Verify``: a certificate found in ``Roots`` ends the chain) trusts a leaf it is
      given, and envtest's caBundle is its serving certificate itself (``setupCA``: ``LocalServingCAData =
      certData``). OpenSSL does so only with ``X509_V_FLAG_PARTIAL_CHAIN``."""
    parts = urlsplit(url)
    host, port, target = parts.hostname or "", parts.port or 443, f"{_clean_path(parts.path)}?{parts.query}"
    where = f'failed to call webhook: Post "{parts.scheme}://{parts.netloc}{target}"'
    try:
        context = ssl.create_default_context(cadata=ca.decode("ascii", "replace") if ca else None)
    except (ssl.SSLError, ValueError) as exc:
        raise _CallFailed(f"could not get REST client: unable to load root certificates: {exc}") from None
    if ca:
        context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    conn = http.client.HTTPSConnection(host, port, context=context, timeout=timeout)
    try:
        conn.request("POST", target, body,
                     {"Content-Type": "application/json", "Accept": "application/json"})
        reply = conn.getresponse()
        data = reply.read()
    except ssl.SSLCertVerificationError as exc:
        why = "x509: certificate signed by unknown authority" if exc.verify_code == 20 else exc.verify_message
        raise _CallFailed(f"{where}: tls: failed to verify certificate: {why}") from None
    except ConnectionRefusedError:
        raise _CallFailed(f"{where}: dial tcp {host}:{port}: connect: connection refused") from None
    except TimeoutError:
        raise _CallFailed(f"{where}: context deadline exceeded") from None
    except (OSError, http.client.HTTPException) as exc:
        raise _CallFailed(f"{where}: {exc}") from None
    finally:
        conn.close()
    if not 200 <= reply.status < 300:
        text = data.decode("utf-8", "replace")[:200]
        why = {404: "the server could not find the requested resource"}.get(
            reply.status, f'an error on the server ("{text}") has prevented the request from succeeding')
        raise _CallFailed(f"failed to call webhook: {why}")
    try:
        return json.loads(data)
    except ValueError as exc:
        raise _CallFailed(f"failed to call webhook: the answer is not JSON: {exc}") from None


def _clean_path(path: str) -> str:
    """Go's ``path.Join("/", path)``: one leading slash, no empty, ``.`` or ``..`` segment, no trailing slash."""
    out: list[str] = []
    for seg in path.split("/"):
        if seg == "..":
            if out:
                out.pop()
        elif seg not in ("", "."):
            out.append(seg)
    return "/" + "/".join(out)
