"""Object names as kube-apiserver validates them: ``ValidateObjectMeta`` with each kind's name validator.

Most kinds take a DNS-1123 subdomain (``apimachinery/pkg/api/validation`` ``NameIsDNSSubdomain``); a Namespace
takes a DNS-1123 label (``ValidateNamespaceName``), a Service a DNS-1035 label (``ValidateServiceName``), the RBAC
kinds any path segment (``ValidateRBACName``: ``path.IsValidPathSegmentName``). Messages are
``apimachinery/pkg/util/validation``'s (``IsDNS1123Subdomain``, ``RegexError``, ``MaxLenError``), and the 422 is
``errors.NewInvalid``'s: ``Kind.group "name" is invalid: metadata.name: Invalid value: ...`` with one cause per
field error (``FieldValueInvalid``, its field path) and the kind (not the resource) in ``details``.

Checked on a create through the served API only (a name cannot change afterwards): a model's own
``APIServer.create`` is not checked, so its runs stay as they were.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .._errors import Invalid
from ._resources import Resource

_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = _LABEL + r"(\." + _LABEL + ")*"
_LABEL_1035 = "[a-z]([-a-z0-9]*[a-z0-9])?"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """``validation.RegexError``: the message, its examples and the regex, worded exactly as upstream."""
    out = msg + " (e.g. "
    for i, example in enumerate(examples):
        out += (" or " if i else "") + f"'{example}', "
    return out + f"regex used for validation is '{fmt}')"


def dns1123_subdomain(value: str) -> list[str]:
    """``IsDNS1123Subdomain``."""
    errs = ["must be no more than 253 characters"] if len(value) > 253 else []
    if not re.fullmatch(_SUBDOMAIN, value):
        errs.append(_regex_error("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                                 "'-' or '.', and must start and end with an alphanumeric character", _SUBDOMAIN,
                                 "example.com"))
    return errs


def dns1123_label(value: str) -> list[str]:
    """``IsDNS1123Label``."""
    errs = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not re.fullmatch(_LABEL, value):
        errs.append(_regex_error("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
                                 "'-', and must start and end with an alphanumeric character", _LABEL, "my-name",
                                 "123-abc"))
    return errs


def dns1035_label(value: str) -> list[str]:
    """``IsDNS1035Label``."""
    errs = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not re.fullmatch(_LABEL_1035, value):
        errs.append(_regex_error("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                                 "with an alphabetic character, and end with an alphanumeric character",
                                 _LABEL_1035, "my-name", "abc-123"))
    return errs


def path_segment(value: str) -> list[str]:
    """``path.IsValidPathSegmentName``."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


#: the kinds whose name validator is not ``NameIsDNSSubdomain``
_VALIDATORS: dict[str, Callable[[str], list[str]]] = {
    "Namespace": dns1123_label, "Service": dns1035_label,
    "Role": path_segment, "RoleBinding": path_segment, "ClusterRole": path_segment,
    "ClusterRoleBinding": path_segment,
}


class FieldInvalid(Invalid):
    """``errors.NewInvalid``: a 422 whose ``details`` name the kind and carry one cause per field error."""

    def __init__(self, message: str, details: dict[str, Any]) -> None:
        super().__init__(message)
        self.details = details


def validate_name(res: Resource, name: str, generate_name: str) -> None:
    """``ValidateObjectMeta``'s name checks for a create of ``res``; raises :class:`FieldInvalid`.

    A ``generateName`` prefix is checked with its trailing dash masked (``maskTrailingDash``), as the generated
    name will end with five more characters; an empty name is left to the create's own Required check."""
    check = _VALIDATORS.get(res.kind, dns1123_subdomain)
    errors: list[tuple[str, str, str]] = []
    if generate_name:
        # maskTrailingDash replaces the last two characters, not one: kept, as it decides which prefixes pass
        masked = generate_name[:-2] + "a" if len(generate_name) > 1 and generate_name.endswith("-") else generate_name
        errors += [("metadata.generateName", generate_name, m) for m in check(masked)]
    if name:
        errors += [("metadata.name", name, m) for m in check(name)]
    if not errors:
        return
    bodies = [f"Invalid value: {_quote(value)}: {m}" for _f, value, m in errors]
    each = [f"{f}: {body}" for (f, _v, _m), body in zip(errors, bodies, strict=True)]
    qualified = f"{res.kind}.{res.group}" if res.group else res.kind
    shown = each[0] if len(each) == 1 else "[" + ", ".join(each) + "]"
    details: dict[str, Any] = {"name": name or generate_name}
    if res.group:
        details["group"] = res.group
    details["kind"] = res.kind
    details["causes"] = [{"reason": "FieldValueInvalid", "message": body, "field": f}
                         for (f, _v, _m), body in zip(errors, bodies, strict=True)]
    raise FieldInvalid(f'{qualified} "{name or generate_name}" is invalid: {shown}', details)


def _quote(value: str) -> str:
    """A string value as ``field.Error`` prints it (Go's ``%q``; names are ASCII in practice)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
