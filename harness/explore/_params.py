"""Scenario parameters typed on the command line (``--param NAME=VALUE``), checked against the signature.

A broken parameter is refused, with the form it takes and an example, before
anything runs: in a run it would fail as if it were the race.
"""

from __future__ import annotations

import inspect
import json
import types
from collections.abc import Iterable, Mapping
from typing import Any

from .._errors import UsageError


def parse_params(items: Iterable[str]) -> dict[str, Any]:
    """``["replicas=3", "name=web"]`` -> ``{"replicas": 3, "name": "web"}``: JSON when it parses, else a string."""
    out: dict[str, Any] = {}
    for item in items:
        name, eq, text = item.partition("=")
        name = name.strip()
        if not eq or not name.isidentifier():
            raise UsageError(
                f"--param {item!r} is not NAME=VALUE; use e.g. --param replicas=3 or --param name=web "
                "(VALUE is read as JSON when it parses, else as a string)"
            )
        try:
            out[name] = json.loads(text)
        except ValueError:
            out[name] = text
    return out


def check_params(fn: Any, params: Mapping[str, Any], ref: str, raw: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``params`` checked against the scenario's signature and annotations, before anything runs.

    Unknown names are refused with the list of known ones; a value must fit the
    parameter's annotation (or, without one, its default's type): ``bool`` takes
    true or false only, ``int`` a whole number, ``float`` a number, ``str`` any
    text (``raw``, the text typed on the command line, so ``--param name=3`` is
    ``"3"``). A broken parameter never reaches a run, where it would fail as if it
    were the race. Returns the values to run with.
    """
    try:
        sig = inspect.signature(fn, eval_str=True)
    except (NameError, SyntaxError, TypeError, AttributeError):
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            return dict(params)
    except ValueError:
        return dict(params)
    ps = list(sig.parameters.values())
    by_name = {p.name: p for p in ps[1:] if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in ps):
        unknown = [k for k in params if k not in by_name]
        if unknown:
            takes = ", ".join(by_name) if by_name else "no parameters"
            raise UsageError(f"{ref} takes no parameter {unknown[0]!r}; it takes: {takes}")
    out = dict(params)
    for name, value in params.items():
        p = by_name.get(name)
        if p is None:
            continue
        kind: Any = p.annotation
        if kind is p.empty:
            kind = type(p.default) if p.default is not p.empty and p.default is not None else None
        text = None if raw is None else raw.get(name)
        ok, coerced, form = _fit(kind, value, text)
        if not ok:
            typed = text if text is not None else json.dumps(value, default=repr)
            raise UsageError(
                f"--param {name}={typed} does not fit {ref}: {name} takes {form}"
                + (f" (default {p.default!r})" if p.default is not p.empty else "")
                + f", e.g. --param {name}={_example(form, p.default)}"
            )
        out[name] = coerced
    return out


_FORMS = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}


def _fit(kind: Any, value: Any, text: str | None) -> tuple[bool, Any, str]:
    """Whether ``value`` (typed as ``text``) fits the annotation ``kind``: (fits, value to use, accepted form)."""
    import typing

    if isinstance(kind, str):  # an annotation left as text (a name only TYPE_CHECKING imports)
        kind = {"bool": bool, "int": int, "float": float, "str": str}.get(kind.strip())
    if kind is None or kind is Any:
        return True, value, "any value"
    if kind is type(None):
        return value is None, None, "null"
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        forms = []
        for member in typing.get_args(kind):
            ok, coerced, form = _fit(member, value, text)
            if ok:
                return True, coerced, form
            forms.append(form)
        return False, value, " or ".join(dict.fromkeys(forms))
    if kind is bool:
        if isinstance(value, bool):
            return True, value, _FORMS[bool]
        if text is not None and text.strip().lower() in ("true", "false"):
            return True, text.strip().lower() == "true", _FORMS[bool]
        return False, value, _FORMS[bool]
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool), value, _FORMS[int]
    if kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return ok, float(value) if ok else value, _FORMS[float]
    if kind is str:
        if text is not None:
            return True, text, _FORMS[str]
        return isinstance(value, str), value, _FORMS[str]
    if origin in (list, tuple, set, frozenset) or kind in (list, tuple, set, frozenset):
        return isinstance(value, list), (tuple(value) if (origin or kind) is tuple and isinstance(value, list)
                                         else value), "a JSON list such as [1, 2]"
    if origin is dict or kind is dict:
        return isinstance(value, dict), value, 'a JSON object such as {"a": 1}'
    return True, value, "any value"


def _example(form: str, default: Any) -> str:
    if default is not inspect.Parameter.empty and default is not None:
        return json.dumps(default) if not isinstance(default, str) else default
    return {"true or false": "true", "a whole number": "3", "a number": "1.5"}.get(form, "VALUE")


def raw_params(items: Iterable[str]) -> dict[str, str]:
    """``["name=3"]`` -> ``{"name": "3"}``: the text as typed (a ``str`` parameter takes it as it is)."""
    return {name.strip(): text for name, eq, text in (item.partition("=") for item in items) if eq}
