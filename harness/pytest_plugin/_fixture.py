"""The ``race`` fixture: ``race.explore()`` with the session's seed, budget, strategy and faults."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._verdicts import runaway_line
from ._settings import (
    _SETTINGS,
    _STATE,
    MARKER,
    OPT_BUDGET,
    OPT_REPLAY,
    OPT_REPORT,
    OPT_SEED,
    OPT_STRATEGY,
    PROFILE_CI,
    PROFILE_HUNT,
    derive_seed,
    settings_of,
)

if TYPE_CHECKING:
    from ..explore import Budget, Counterexample, Result

@pytest.fixture
def race_shard(request: pytest.FixtureRequest) -> int | None:
    """The shard index of a race test under ``--race-hunt`` (None otherwise)."""
    return getattr(request, "param", None)


# ----------------------------------------------------------------------- the fixture
class RaceFixture:
    """What a race test uses: ``explore()`` with the session's seed, budget and strategy."""

    def __init__(self, request: pytest.FixtureRequest, shard: int | None) -> None:
        self._request = request
        self._config = request.config
        self.settings = settings_of(request.config)
        self.nodeid: str = request.node.nodeid
        self.shard = shard
        #: this test's seed, derived from the session seed and the test id
        self.seed = derive_seed(self.settings.seed, self.nodeid)
        self.results: list[Result] = []

    def explore(
        self,
        scenario: Callable[..., Any] | None = None,
        *,
        expect: str | None = None,
        budget: str | int | Budget | None = None,
        strategy: str | None = None,
        **params: Any,
    ) -> Result:
        """Search ``scenario(world, **params)``; fail the test unless the outcome is ``expect``.

        ``expect="clean"`` (default) fails on a violation with the minimal
        counterexample; ``expect="violation"`` fails when none is found. The
        marker's scenario, ``expect`` and parameters are the defaults.
        """
        __tracebackhide__ = True
        from ..explore import Budget, Replay, explore, scenario_ref

        marker = self._request.node.get_closest_marker(MARKER)
        if marker is not None:
            if scenario is None and marker.args:
                scenario = marker.args[0]
            mk = dict(marker.kwargs)
            if expect is None:
                expect = mk.pop("expect", None)
            mk.pop("expect", None)
            params = {**mk, **params}
        if scenario is None:
            raise pytest.UsageError(
                f"{self.nodeid}: race.explore() needs a scenario: race.explore(my_scenario, **params) or "
                f"@pytest.mark.{MARKER}(my_scenario, **params)"
            )
        expect = expect or "clean"
        if expect not in ("clean", "violation"):
            raise pytest.UsageError(f"race.explore(expect={expect!r}): use expect='clean' or expect='violation'")
        _select_profile(self._config)
        s = self.settings
        strat: Any = strategy or s.strategy
        b: Budget | str | int = budget if budget is not None else s.budget_text
        # Under --race-hunt a test that promises clean hunts for its shard's seconds. One that promises a violation
        # (a buggy variant, a known-open fix) has nothing to hunt for: it runs its own budget with the shard's
        # seed, so -n 0 and -n 2 give the same runs and traces, and it records what it found without failing on
        # a per-shard budget (the plain run, with the full budget, is where that promise is checked).
        hunting = s.hunt_minutes is not None and s.replay is None
        if hunting and expect != "violation":
            state = self._config.stash[_STATE]
            b = Budget(runs=None, seconds=state.shard_seconds or 1.0)
        if s.replay is not None:
            from ..explore import Counterexample

            cx = Counterexample.load(s.replay)
            mine = f"{scenario_ref(scenario)}({_fmt(params)})"
            theirs = f"{cx.scenario}({_fmt(cx.params)})"
            if mine != theirs:
                pytest.skip(f"{OPT_REPLAY} replays {theirs}; this test explores {mine}")
            strat, b, params = Replay.of(cx, str(s.replay)), 1, dict(cx.params)
            params["faults"] = cx.faults
        if s.faults is not None and "faults" not in params:
            params["faults"] = s.faults
        result = explore(scenario, strategy=strat, budget=b, seed=self.seed, **params)
        self.results.append(result)
        self._request.node.user_properties.extend(
            [("race_seed", str(self.seed if s.replay is None else strat.expected.seed)),
             ("race_session_seed", str(s.seed)), ("race_verdict", result.verdict)]
        )
        self._attach(result, expect)
        broken = result.model_error
        if broken is not None:  # the scenario's own actor raised or waited forever: never the race
            pytest.fail(f"model error: {broken}\n\n{self._failure_text(result)}", pytrace=False)
        if result.verdict == "runaway":  # a run that never ends is never the expected violation
            pytest.fail(f"{runaway_line(result.runaway or '')}\n\n{self._failure_text(result)}", pytrace=False)
        if expect == "clean" and result.counterexample is not None:
            from ..explore._scenarios import known_open_of

            why_open = known_open_of(scenario)
            if why_open is not None and params.get("fixed") is True:  # @harness.scenario(known_open=...)
                pytest.xfail(f"known open upstream: {why_open}; {result.outcome}")
            pytest.fail(self._failure_text(result), pytrace=False)
        if expect == "violation" and result.counterexample is None:
            if hunting:
                return result  # recorded (the index lists it), never asserted on a shard
            if result.replayed is not None:
                pytest.fail(f"expected a violation, but {result.outcome}", pytrace=False)
            pytest.fail(
                f"expected a violation, but {result.outcome}.\nseed {self.seed} (session {OPT_SEED}={s.seed}); "
                f"raise {OPT_BUDGET} or try another {OPT_STRATEGY}.",
                pytrace=False,
            )
        return result

    # The controller writes the files; the worker knows their names in advance.
    def paths(self) -> tuple[Path, Path]:
        from ..report import slug

        n = len(self.results)
        stem = slug(self.nodeid.replace("::", "-")) + (f"-{n}" if n > 1 else "")
        return self.settings.report_dir / f"{stem}.json", self.settings.report_dir / f"{stem}.html"

    def _attach(self, result: Result, expect: str) -> None:
        json_path, html_path = self.paths()
        cx = result.counterexample
        payload: dict[str, Any] = {
            "nodeid": self.nodeid,
            "expect": expect,
            "verdict": result.verdict,
            "outcome": result.outcome,
            "runs": result.runs,
            "seconds": result.seconds,
            "seed": self.seed,
            "scenario": result.scenario,
            "params": _jsonable(result.params),
            "shard": self.shard,
        }
        if cx is not None:
            cx.meta.setdefault("test", self.nodeid)
            cx.meta.setdefault("report", html_path.name)  # the page beside the trace
            payload["counterexample"] = cx.to_json()
            payload["json_path"] = str(json_path)
            payload["html_path"] = str(html_path)
            payload["signature"] = signature(cx)
            if self.settings.writes_reports:
                self._request.node.user_properties.append(("race_trace", str(json_path)))
                self._request.node.user_properties.append(("race_report", str(html_path)))
            else:  # a replay that writes nothing: the trace is the file it replayed
                self._request.node.user_properties.append(("race_trace", str(self.settings.replay)))
        self._request.node.stash.setdefault(_PAYLOADS, []).append(payload)

    def _failure_text(self, result: Result) -> str:
        cx = result.counterexample
        assert cx is not None
        json_path, html_path = self.paths()
        if result.replayed is not None:
            where = f"report:  {html_path}" if self.settings.writes_reports else f"report:  none ({OPT_REPORT}=DIR to write one)"
            return (
                f"{result.outcome}\n\n{cx.story()}\n\ncounterexample:\n{cx.program()}\n\n"
                f"trace:   {result.replayed} (found with seed {cx.seed}, {cx.strategy})\n"
                f"replay:  {cx.replay_command(result.replayed)}\n"
                f"         pytest {self.nodeid} {OPT_REPLAY}={result.replayed}\n{where}"
            )
        return (
            f"{result.outcome}\n\n{cx.story()}\n\nminimal counterexample:\n{cx.program()}\n\n"
            f"seed:    {self.seed} (session {OPT_SEED}={self.settings.seed})\n"
            f"replay:  {cx.replay_command(str(json_path))}\n"
            f"         pytest {self.nodeid} {OPT_REPLAY}={json_path}\n"
            f"report:  {html_path}"
        )


_PAYLOADS = pytest.StashKey[list[dict[str, Any]]]()


def _fmt(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in sorted(params.items()))


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return {k: repr(v) for k, v in value.items()} if isinstance(value, dict) else repr(value)


def signature(cx: Counterexample) -> str:
    """Identity of a finding: the failure (oracle, violating actor, the minimal plan's entries), not the trace."""
    return cx.signature()


_PROFILE_LOADED = pytest.StashKey[bool]()


def _select_profile(config: pytest.Config) -> None:
    """Load our Hypothesis profile explicitly (race-hunt when hunting), if the project registered it."""
    if config.stash.get(_PROFILE_LOADED, False):
        return
    config.stash[_PROFILE_LOADED] = True
    from hypothesis import settings
    from hypothesis.errors import InvalidArgument

    name = PROFILE_HUNT if settings_of(config).hunt_minutes is not None else PROFILE_CI
    try:
        settings.load_profile(name)
    except InvalidArgument:
        pass  # a project without our conftest keeps its own profile


@pytest.fixture
def race(request: pytest.FixtureRequest, race_shard: int | None) -> RaceFixture:
    """Explore race scenarios with the session's ``--race-*`` settings; see :class:`RaceFixture`."""
    if _SETTINGS not in request.config.stash:
        pytest.skip("race-harness settings are unavailable (pytest --help/--version)")
    return RaceFixture(request, race_shard)
