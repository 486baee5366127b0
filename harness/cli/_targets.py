"""TARGETs resolved before anything runs: a race or a marked scenario, its variants, parameters and promises."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._errors import UsageError
from ._common import _registered


@dataclass
class _Target:
    """One TARGET of the command line, resolved: what to run and what its variants promise."""

    name: str
    scenario: Callable[..., Any]
    params: dict[str, Any]
    variants: list[str]  # "buggy", "fixed", or "" (the scenario as is: no promise)
    race: Any = None  # a harness.Race for a registered race
    title: str = ""
    upstream: str = ""
    known_open: bool = False
    budget: int | None = None
    strategy: str | None = None
    faults: str | None = None  # a registered race's own fault kinds
    params_by_variant: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: what each variant's search promises: "violation", "clean" or None (nothing)
    expect_by_variant: dict[str, str | None] = field(default_factory=dict)
    #: the --param values given on the command line, shown with every result
    given: dict[str, Any] = field(default_factory=dict)


def _resolve_targets(
    names: Sequence[str], variant: str | None, param_items: Sequence[str], *, live: bool, expect: str | None = None
) -> list[_Target]:
    """Resolve every TARGET before anything runs: a typo is exit 2, never a half-done hunt."""
    from ..explore._params import check_params, parse_params, raw_params
    from ..explore._references import resolve

    params = parse_params(param_items)
    typed = raw_params(param_items)
    if "fixed" in params and variant is not None:
        raise UsageError("give either --variant or --param fixed=..., not both")
    targets = []
    for name in names:
        if ":" not in name:
            registry = _registered()
            race = registry.get(name)
            if race is None and name.endswith(".py"):
                raise UsageError(_file_without_function(name))
            if race is None:
                raise UsageError(
                    f"unknown race {name!r}; choose from: {', '.join(registry)} -- or name a scenario as "
                    "package.module:function or path/to/file.py:function"
                )
            variants = (["buggy"] if live else ["buggy", "fixed"]) if variant in (None, "both") else [variant]
            t = _Target(
                name, race.scenario, {**race.params, **params}, variants, race, race.title, race.upstream,
                race.known_open, race.budget, race.strategy, race.faults,
            )
        else:
            from ..explore._scenarios import known_open_of

            fn = resolve(name, error=UsageError, source="the command line")
            variants = [""] if variant is None else ["buggy", "fixed"] if variant == "both" else [variant]
            t = _Target(name, fn, dict(params), variants)
            why_open = known_open_of(fn)
            if why_open is not None:  # @harness.scenario(known_open=...): what Race.known_open gives a race
                t.known_open, t.upstream = True, why_open
        t.params = check_params(t.scenario, t.params, name, typed)  # "fixed=False" is False from here on
        t.given = {k: t.params[k] for k in params}
        if t.race is not None and "fixed" in params:
            t.variants = ["fixed" if t.params["fixed"] is True else "buggy"]
        for v in t.variants:
            p = dict(t.params) if not v else {**t.params, "fixed": v == "fixed"}
            if v and t.race is None:
                try:
                    check_params(t.scenario, p, name)
                except UsageError as exc:
                    raise UsageError(f"{exc}; --variant {v} means --param fixed={str(v == 'fixed').lower()}") from None
            t.params_by_variant[v] = p
            promise = "violation" if v == "buggy" else "clean" if v == "fixed" else None
            if t.known_open and v == "fixed":
                promise = "violation"  # the upstream fix still fails: listed, not hidden
            t.expect_by_variant[v] = expect or promise
        targets.append(t)
    return targets


def _label(t: _Target, variant: str) -> str:
    shown = f"{t.name} [{_fmt_given(t.given)}]" if t.given else t.name
    return f"{shown} ({variant})" if variant else shown


def _fmt_given(params: dict[str, Any]) -> str:
    """``drops=false, name=web``: the --param values as they are typed."""
    return ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v)}" for k, v in params.items())


def _file_without_function(name: str) -> str:
    """``hunt FILE.py``: the error names the form it needs, ``FILE.py:function``, with the file's scenarios.

    The file is read as text and parsed (``ast``), never imported: an unmarked
    file is not run (the same rule as for a scenario given by name).
    """
    import ast
    from pathlib import Path

    path = Path(name)
    form = f"name the scenario function after a colon: {name}:FUNCTION"
    if not path.is_file():
        return f"{name}: no such file; {form}"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=name)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return f"{name} names a file, not a scenario; {form}"

    def marked(fn: ast.AST) -> bool:
        decorators = getattr(fn, "decorator_list", [])
        return any((isinstance(d, ast.Name) and d.id == "scenario")
                   or (isinstance(d, ast.Attribute) and d.attr == "scenario") for d in decorators)

    found = [n.name for n in tree.body if isinstance(n, ast.AsyncFunctionDef | ast.FunctionDef | ast.ClassDef)
             and marked(n)]
    if not found:
        return (f"{name} names a file, not a scenario, and it marks no function with @harness.scenario; {form}, "
                "and mark that function with @harness.scenario")
    return (f"{name} names a file, not a scenario; {form}, e.g. {name}:{found[0]} "
            f"(its scenarios: {', '.join(found)})")
