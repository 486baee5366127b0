"""Label and field selectors: ``labels.Parse`` and ``fields.ParseSelector`` with the apiserver's error messages.

A LIST and a watch filter with them (the cacher's ``filterWithAttrsFunction``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .._objects import KubeObject
from ._status import BadRequest


# ------------------------------------------------------------------------------------- label selectors
@dataclass(frozen=True)
class Requirement:
    """``labels.Requirement``: a key, an operator (``=``, ``!=``, ``in``, ``notin``, ``exists``, ``!``) and values."""

    key: str
    op: str
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        """``Requirement.Matches`` (apimachinery ``labels/selector.go``): ``!=`` and ``notin`` hold for absent keys."""
        has = self.key in labels
        if self.op in ("=", "==", "in"):
            return has and labels[self.key] in self.values
        if self.op in ("!=", "notin"):
            return not has or labels[self.key] not in self.values
        if self.op == "exists":
            return has
        return not has  # "!": DoesNotExist


_TOKEN = re.compile(r"\s*(?:(?P<op>==|!=|=|\(|\)|,|!)|(?P<word>[^\s,()=!]+))")
_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                  r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")


def parse_label_selector(text: str) -> tuple[Requirement, ...]:
    """``labels.Parse``: comma-separated requirements, equality-based and set-based.

    ``a=b``, ``a==b``, ``a!=b``, ``a in (x,y)``, ``a notin (x)``, ``a``
    (exists), ``!a`` (does not exist). Keys and values are validated as
    upstream validates them (``validateLabelKey``, ``validateLabelValue``);
    a bad selector is a :class:`BadRequest`, as the list handler answers.
    """
    tokens: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise BadRequest(f"unable to parse requirement: invalid label selector {text!r}")
        tokens.append(m["op"] or m["word"])
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    out: list[Requirement] = []
    i = 0

    def bad(why: str) -> BadRequest:
        return BadRequest(f"unable to parse requirement: {why}")

    def key_at(j: int) -> str:
        if j >= len(tokens) or not _KEY.match(tokens[j]) or tokens[j] in ("in", "notin"):
            got = repr(tokens[j]) if j < len(tokens) else "'end of string'"
            raise bad(f"found {got}, expected: identifier")
        return tokens[j]

    def value(v: str) -> str:
        if not _VALUE.match(v) or len(v) > 63:
            raise bad(f"values[0]: Invalid value: {v!r}: a valid label must be an empty string or consist of "
                      "alphanumeric characters, '-', '_' or '.'")
        return v

    while i < len(tokens):
        if tokens[i] == "!":
            out.append(Requirement(key_at(i + 1), "!"))
            i += 2
        else:
            key = key_at(i)
            op = tokens[i + 1] if i + 1 < len(tokens) else ","
            if op == ",":
                out.append(Requirement(key, "exists"))
                i += 1
            elif op in ("=", "==", "!="):
                nxt = tokens[i + 2] if i + 2 < len(tokens) else ","
                if nxt == ",":  # "a=" selects the empty value
                    out.append(Requirement(key, op, ("",)))
                    i += 2
                else:
                    out.append(Requirement(key, op, (value(nxt),)))
                    i += 3
            elif op in ("in", "notin"):
                if i + 2 >= len(tokens) or tokens[i + 2] != "(":
                    got = tokens[i + 2] if i + 2 < len(tokens) else "end of string"
                    raise bad(f"found {got!r}, expected: '('")
                j, values = i + 3, []
                while j < len(tokens) and tokens[j] != ")":
                    if tokens[j] != ",":
                        values.append(value(tokens[j]))
                    j += 1
                if j >= len(tokens):
                    raise bad("found 'end of string', expected: ')'")
                out.append(Requirement(key, op, tuple(values)))
                i = j + 1
            else:
                raise bad(f"found {op!r}, expected: '=', '!=', '==', 'in', notin'")
        if i < len(tokens):
            if tokens[i] != ",":
                raise bad(f"found {tokens[i]!r}, expected: ',' or 'end of string'")
            i += 1
    return tuple(out)


def selects(requirements: tuple[Requirement, ...], labels: dict[str, str]) -> bool:
    return all(r.matches(labels) for r in requirements)


#: fields a fieldSelector may name besides ``metadata.name``/``metadata.namespace`` (``GetAttrs`` of each registry)
_FIELD_LABELS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
            "status.phase", "status.podIP", "status.nominatedNodeName"),
    "Secret": ("type",),
    "Event": ("reason", "type", "involvedObject.kind", "involvedObject.name", "involvedObject.namespace",
              "involvedObject.uid"),
    "Namespace": ("status.phase",),
    "Node": ("spec.unschedulable",),
}


def parse_field_selector(text: str, kind: str) -> tuple[tuple[str, bool, str], ...]:
    """``fields.ParseSelector``: ``field=value``, ``field==value``, ``field!=value``, comma-separated."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        m = re.match(r"^([^=!]+)(==|!=|=)(.*)$", part)
        if m is None:
            raise BadRequest(f"invalid selector: '{text}'; can't understand '{part}'")
        name = m[1].strip()
        if name not in ("metadata.name", "metadata.namespace") and name not in _FIELD_LABELS.get(kind, ()):
            raise BadRequest(f'field label not supported: {name}')
        out.append((name, m[2] == "!=", m[3].strip()))
    return tuple(out)


def _field(obj: KubeObject, name: str) -> str:
    if name == "metadata.name":
        return obj.name
    if name == "metadata.namespace":
        return obj.namespace
    head, _, rest = name.partition(".")
    src: Any = {"spec": obj.spec, "status": obj.status}.get(head, obj.extra.get(head))
    for part in rest.split(".") if rest else ():
        src = src.get(part) if isinstance(src, dict) else None
    return "" if src is None else (str(src).lower() if isinstance(src, bool) else str(src))

def _fields_match(fields: tuple[tuple[str, bool, str], ...], obj: KubeObject) -> bool:
    return all((_field(obj, name) == value) != negated for name, negated, value in fields)
