"""A CRD's structural schema applied to a custom resource: pruning, defaulting, then validation.

kube-apiserver serves a custom resource through ``apiextensions-apiserver``:
its decoder prunes the fields the version's ``openAPIV3Schema`` does not name
(``pkg/apiserver/schema/pruning/algorithm.go``), the defaulter fills in
``default`` values (``pkg/apiserver/schema/defaulting/algorithm.go``), and the
strategy validates the object against the schema
(``pkg/registry/customresource/validator.go`` over ``kube-openapi``'s
``validate`` package, whose errors ``apiservervalidation.ConvertToFieldErrors``
turns into field errors). A CRD version without a schema keeps everything, as
before.

A small walker, not a JSON Schema library: the rules are JSON Schema's, but
``nullable``, ``x-kubernetes-int-or-string`` and
``x-kubernetes-preserve-unknown-fields`` are OpenAPI/Kubernetes extensions no
JSON Schema validator knows, and the messages and field paths must be
kube-openapi's (``validate/errors``) for clients to show what a cluster shows.
``format``, ``multipleOf``, ``uniqueItems``, ``allOf``/``anyOf``/``oneOf``/``not``
and CEL ``x-kubernetes-validations`` are not checked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from .._errors import Invalid
from .._objects import copy_json
from ._status import BadRequest

#: the fields every object keeps whatever its schema says (``pruning.PruneWithOptions`` at the root, isResourceRoot)
_ROOT_FIELDS = ("apiVersion", "kind", "metadata")


# ------------------------------------------------------------------------------------------- errors
@dataclass(frozen=True)
class FieldError:
    """One ``field.Error``: its type (the Status cause's reason), path, value and detail."""

    reason: str  # FieldValueInvalid, FieldValueTypeInvalid, FieldValueRequired, FieldValueNotSupported
    field: str
    value: Any = None
    detail: str = ""

    def body(self) -> str:
        """``field.Error.ErrorBody``: the error type's words, then the value as Go prints it, then the detail."""
        if self.reason == "FieldValueRequired":
            return "Required value"
        if self.reason == "FieldValueNotSupported":
            return f"Unsupported value: {_go_value(self.value)}: supported values: {self.detail}"
        return f"Invalid value: {_go_value(self.value)}: {self.detail}"

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"


class SchemaInvalid(Invalid):
    """``errors.NewInvalid``: 422 whose Status carries ``details.causes`` (one per field error) and the kind."""

    def __init__(self, kind: str, group: str, name: str, errors: list[FieldError]) -> None:
        joined = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(str(e) for e in errors) + "]"
        super().__init__(f'{kind}.{group} "{name}" is invalid: {joined}')
        self.details_kind, self.details_name = kind, name
        self.causes = [{"reason": e.reason, "message": e.body(), "field": e.field} for e in errors]


def _go_value(value: Any) -> str:
    """A value as ``field.Error.ErrorBody`` prints it: strings quoted (%q), numbers and booleans bare (%v)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value) if isinstance(value, float) and not value.is_integer() else str(int(value))
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


# ------------------------------------------------------------------------------------------- schema
def version_schema(crd_spec: dict[str, Any], version: str) -> dict[str, Any] | None:
    """The ``openAPIV3Schema`` of ``version`` (per version, or the CRD's top-level ``validation`` of v1beta1)."""
    for v in crd_spec.get("versions") or []:
        if v.get("name") == version:
            schema = (v.get("schema") or crd_spec.get("validation") or {}).get("openAPIV3Schema")
            return schema if isinstance(schema, dict) else None
    return None


def conform(doc: dict[str, Any], schema: dict[str, Any], kind: str, group: str, strict: bool = False,
            version: str = "") -> dict[str, Any]:
    """``doc`` pruned and defaulted by ``schema``, or :class:`SchemaInvalid` naming every field that breaks it.

    ``strict`` (``fieldValidation=Strict``): a field pruning would drop is a 400 instead, as the strict decoder
    answers through ``handlers``' ``transformDecodeError`` (``App in version "v1" cannot be handled as a App:
    strict decoding error: unknown field "spec.x"``)."""
    out: dict[str, Any] = copy_json(doc)
    dropped: list[str] = []
    _prune(out, schema, root=True, path="", dropped=dropped)
    if strict and dropped:
        raise BadRequest(f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: '
                         + ", ".join(f'unknown field "{d}"' for d in dropped))
    _default(out, schema)
    _prune(out, schema, root=True)  # a default is pruned as the object is (defaulting.PruneDefaults)
    errors: list[FieldError] = [FieldError("FieldValueRequired", key) for key in schema.get("required") or []
                                if key not in out]
    for key, sub in (schema.get("properties") or {}).items():
        if key not in _ROOT_FIELDS and key in out and isinstance(sub, dict):
            _validate(out[key], sub, key, errors)
    if errors:
        name = str((out.get("metadata") or {}).get("name") or (out.get("metadata") or {}).get("generateName") or "")
        raise SchemaInvalid(kind, group, name, errors)
    return out


def _preserves(schema: dict[str, Any]) -> bool:
    return bool(schema.get("x-kubernetes-preserve-unknown-fields"))


def _prune(value: Any, schema: dict[str, Any], root: bool = False, path: str = "",
           dropped: list[str] | None = None) -> None:
    """``pruning.Prune``: an object keeps only the properties its schema names (or all, when it preserves
    unknown fields, or those ``additionalProperties`` describes); arrays prune each item by ``items``."""
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        embedded = root or bool(schema.get("x-kubernetes-embedded-resource"))
        for key in list(value):
            if root and key in _ROOT_FIELDS:
                continue  # metadata is ObjectMeta's, whatever the schema says of it
            at = f"{path}.{key}" if path else key
            if key in props:
                if isinstance(props[key], dict):
                    _prune(value[key], props[key], path=at, dropped=dropped)
            elif isinstance(extra, dict):
                _prune(value[key], extra, path=f"{path}[{key}]", dropped=dropped)
            elif not (_preserves(schema) or extra is True or (embedded and key in _ROOT_FIELDS)):
                del value[key]
                if dropped is not None:
                    dropped.append(at)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _prune(item, schema["items"], path=f"{path}[{i}]", dropped=dropped)


def _default(value: Any, schema: dict[str, Any]) -> None:
    """``defaulting.Default``: a missing property with a ``default`` gets it (a copy); a null one too, unless it
    is ``nullable``; then the walk goes down properties, ``additionalProperties`` and ``items``."""
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        for key, sub in props.items():
            if not isinstance(sub, dict) or "default" not in sub:
                continue
            if key not in value or (value[key] is None and not sub.get("nullable")):
                value[key] = copy_json(sub["default"])
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra if key not in props else None)
            if isinstance(sub, dict):
                _default(item, sub)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for item in value:
            _default(item, schema["items"])


def _type_of(value: Any) -> str:
    """The JSON type kube-openapi names in ``must be of type``: whole floats count as integers (``swag``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _type_ok(want: str, got: str) -> bool:
    return want == got or (want == "number" and got == "integer")


def _number(x: Any) -> str:
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def _validate(value: Any, schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    """kube-openapi's ``SchemaValidator`` for one value: type (with ``nullable`` and int-or-string), enum,
    bounds, lengths, pattern, required, then down into properties, ``additionalProperties`` and items."""
    got = _type_of(value)
    if value is None:
        if not schema.get("nullable") and schema.get("type"):
            errors.append(FieldError("FieldValueTypeInvalid", path, "null",
                                     f'{path} in body must be of type {schema["type"]}: "null"'))
        return
    if schema.get("x-kubernetes-int-or-string"):
        if got not in ("integer", "string"):
            errors.append(FieldError("FieldValueTypeInvalid", path, got,
                                     f'{path} in body must be of type integer,string: "{got}"'))
            return
    elif isinstance(schema.get("type"), str) and not _type_ok(schema["type"], got):
        errors.append(FieldError("FieldValueTypeInvalid", path, got,
                                 f'{path} in body must be of type {schema["type"]}: "{got}"'))
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(FieldError("FieldValueNotSupported", path, value,
                                 ", ".join(_go_value(v) for v in schema["enum"])))
    if got in ("integer", "number"):
        _bounds(value, schema, path, errors)
    if got == "string":
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(FieldError("FieldValueInvalid", path, value,
                                     f"{path} in body should be at least {schema['minLength']} chars long"))
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(FieldError("FieldValueInvalid", path, value,
                                     f"{path} in body should be at most {schema['maxLength']} chars long"))
        if "pattern" in schema and re.search(schema["pattern"], value) is None:
            errors.append(FieldError("FieldValueInvalid", path, value,
                                     f"{path} in body should match '{schema['pattern']}'"))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            errors.append(FieldError("FieldValueInvalid", path, value,
                                     f"{path} in body should have at least {schema['minItems']} items"))
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(FieldError("FieldValueInvalid", path, value,
                                     f"{path} in body should have at most {schema['maxItems']} items"))
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                _validate(item, schema["items"], f"{path}[{i}]", errors)
    if isinstance(value, dict):  # object_validator.go: the required ones first, then each property's own
        for key in schema.get("required") or []:
            if key not in value:
                errors.append(FieldError("FieldValueRequired", f"{path}.{key}"))
        props: dict[str, Any] = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key, extra if key not in props else None)
            if isinstance(sub, dict):
                _validate(item, sub, f"{path}.{key}" if key in props else f"{path}[{key}]", errors)


def _bounds(value: float, schema: dict[str, Any], path: str, errors: list[FieldError]) -> None:
    """``minimum``/``maximum`` with their ``exclusive*`` flags, worded as ``validate/errors`` words them."""
    if "minimum" in schema:
        low, excl = schema["minimum"], bool(schema.get("exclusiveMinimum"))
        if value < low or (excl and value == low):
            words = "greater than" if excl else "greater than or equal to"
            errors.append(FieldError("FieldValueInvalid", path, value, f"{path} in body should be {words} {_number(low)}"))
    if "maximum" in schema:
        high, excl = schema["maximum"], bool(schema.get("exclusiveMaximum"))
        if value > high or (excl and value == high):
            words = "less than" if excl else "less than or equal to"
            errors.append(FieldError("FieldValueInvalid", path, value, f"{path} in body should be {words} {_number(high)}"))
