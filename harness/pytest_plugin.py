"""The race-harness pytest plugin (entry point ``pytest11: race_harness``).

A race test asks for the ``race`` fixture and explores a scenario with the
session's seed, budget and strategy::

    from tests.toys import lost_update

    @pytest.mark.race(lost_update, fixed=True)        # optional: defaults for race.explore()
    def test_lost_update_fixed(race):
        race.explore()                                # fails with the minimal counterexample if one exists

    def test_lost_update_buggy(race):
        result = race.explore(lost_update, expect="violation", fixed=False)
        assert result.counterexample.deviations == 1

On a violation the test fails with the minimal step program, the seed, the
exact replay command and the path of the HTML report.

Options (one group ``race``; each has an ini twin ``race_seed``, ...)::

    --race-seed=N|random|last   --race-budget=RUNS|SECONDSs   --race-strategy=NAME
    --race-hunt=MINUTES         --race-report=DIR             --race-replay=FILE
    --race-faults=KINDS

xdist (the documented way, as pytest-randomly and pytest-cov do it): the
controller chooses the seed and passes it in ``workerinput``; every test's
finding travels back as a JSON-able report attribute (``report.race``), and only
the controller writes files (JSON trace, HTML report, ``index.html``), as soon
as each report arrives, so a crashed worker loses nothing the others found.
Workers also return their counts through ``workeroutput``.

Import cost: nothing here imports Trio, rich or Hypothesis at module level
(``harness/__init__.py`` loads its runtime lazily); hooks import what they need.
"""

from __future__ import annotations

import json
import os
import random
import re
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._errors import HarnessError
from ._options import BUDGET_FORMS, FAULT_FORMS, STRATEGY_FORMS, parse_budget, parse_fault_spec, parse_strategy
from ._shards import derive_seed as _derive_seed

if TYPE_CHECKING:
    from .explore import Budget, Counterexample, Result
    from .report import ReportEntry

# ----------------------------------------------------------------- the surface, named once
OPT_SEED = "--race-seed"
OPT_BUDGET = "--race-budget"
OPT_STRATEGY = "--race-strategy"
OPT_FAULTS = "--race-faults"
OPT_HUNT = "--race-hunt"
OPT_REPORT = "--race-report"
OPT_REPLAY = "--race-replay"

MARKER = "race"
FIXTURE = "race"
SHARD_FIXTURE = "race_shard"
CACHE_KEY = "race_harness/last_seed"
WORKERINPUT_SEED = "race_seed"
WORKEROUTPUT_KEY = "race_harness"
REPORT_ATTR = "race"  # the JSON-able attribute carried by a test report
INI_SHARDS = "race_hunt_shards"

DEFAULT_BUDGET = "500"
DEFAULT_STRATEGY = "random"
# a subfolder, so a test session never replaces the index of `python -m harness hunt` in reports/
DEFAULT_REPORT_DIR = "reports/pytest"
DEFAULT_SHARDS = 4
PROFILE_CI = "race-ci"
PROFILE_HUNT = "race-hunt"

_STRATEGY_FORM = STRATEGY_FORMS

# option -> (dest, ini name, metavar, help); help text in pytest-xdist's style
_OPTIONS: dict[str, tuple[str, str, str, str]] = {
    OPT_SEED: (
        "race_seed",
        "race_seed",
        "N|random|last",
        "seed of every race search: a number, 'random' (default: chosen once on the controller and shown "
        "in the header) or 'last' (the seed of the previous session, from the pytest cache).",
    ),
    OPT_BUDGET: (
        "race_budget",
        "race_budget",
        "RUNS|SECONDSs",
        f"how long each race test may search: a number of runs (e.g. 500) or seconds (e.g. 30s). "
        f"Default: {DEFAULT_BUDGET}.",
    ),
    OPT_STRATEGY: (
        "race_strategy",
        "race_strategy",
        "NAME",
        f"search strategy of race tests: {_STRATEGY_FORM}. Default: {DEFAULT_STRATEGY}.",
    ),
    OPT_FAULTS: (
        "race_faults",
        "race_faults",
        "KINDS",
        "fault kinds race tests may place, unless a test names its own: all, none, default (each component's "
        "own flags) or a comma-separated list such as crash,watch_drop. Default: each test's own.",
    ),
    OPT_HUNT: (
        "race_hunt",
        "race_hunt",
        "MINUTES",
        "hunt for flaky races: run every race test as shards with derived seeds for about MINUTES in all "
        "(split across xdist workers), de-duplicate what they find and list it at the end.",
    ),
    OPT_REPORT: (
        "race_report",
        "race_report",
        "DIR",
        f"write each counterexample (JSON trace + HTML report) and index.html to DIR. "
        f"Default: {DEFAULT_REPORT_DIR}.",
    ),
    OPT_REPLAY: (
        "race_replay",
        "race_replay",
        "FILE",
        "replay the counterexample in FILE (a JSON trace) in the race tests that explore its scenario; "
        "the other race tests are skipped.",
    ),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("race", "race-harness: deterministic race exploration")
    for opt, (dest, ini, metavar, text) in _OPTIONS.items():
        group.addoption(opt, action="store", dest=dest, metavar=metavar, default=None, help=text)
        parser.addini(ini, f"default for {opt}: {text}", type="string", default=None)
    parser.addini(INI_SHARDS, f"shards per race test under {OPT_HUNT} (default {DEFAULT_SHARDS})", default=None)


# --------------------------------------------------------------------------- settings
@dataclass
class RaceSettings:
    """The session's race options, parsed and checked once (on every process)."""

    seed: int
    seed_source: str
    budget_text: str
    strategy: str
    hunt_minutes: float | None
    report_dir: Path
    replay: Path | None
    shards: int
    faults: str | None = None  # --race-faults, checked; None: each test's own
    #: whether --race-report (or its ini twin) was given: a replay writes files only then
    report_given: bool = False

    @property
    def writes_reports(self) -> bool:
        """A search writes its reports; a replay re-reads a trace that exists, so it writes only when asked."""
        return self.replay is None or self.report_given


def _raw(config: pytest.Config, opt: str) -> str | None:
    dest, ini, _, _ = _OPTIONS[opt]
    value = config.getoption(dest)
    if value is None:
        value = config.getini(ini)
    return None if value in (None, "") else str(value)


def _usage(opt: str, value: str, form: str) -> pytest.UsageError:
    return pytest.UsageError(f"{opt}={value!r} is not valid: use {opt}={form}")


def _parse_seed(config: pytest.Config, text: str | None) -> tuple[int, str]:
    if text is None or text == "random":
        return random.SystemRandom().randrange(2**32), "random"
    if text == "last":
        last = cache.get(CACHE_KEY, None) if (cache := getattr(config, "cache", None)) is not None else None
        if not isinstance(last, int):
            raise pytest.UsageError(
                f"{OPT_SEED}=last: no previous seed in the pytest cache (run once with {OPT_SEED}=N or "
                f"{OPT_SEED}=random first, and keep the cache provider enabled)"
            )
        return last, "last"
    if re.fullmatch(r"\d+", text):
        return int(text), "given"
    raise _usage(OPT_SEED, text, "N (a non-negative integer), random or last")


def _parse_settings(config: pytest.Config) -> RaceSettings:
    budget = _raw(config, OPT_BUDGET) or DEFAULT_BUDGET
    try:
        parse_budget(budget)  # the one validation, shared with the CLI and explore() (harness/_options.py)
    except HarnessError:
        raise _usage(OPT_BUDGET, budget, BUDGET_FORMS) from None
    strategy = _raw(config, OPT_STRATEGY) or DEFAULT_STRATEGY
    try:
        parse_strategy(strategy)
    except HarnessError:
        raise _usage(OPT_STRATEGY, strategy, f"NAME with NAME one of {STRATEGY_FORMS}") from None
    faults = _raw(config, OPT_FAULTS)
    if faults is not None:
        try:
            parse_fault_spec(faults)
        except HarnessError:
            raise _usage(OPT_FAULTS, faults, FAULT_FORMS) from None
    hunt_text = _raw(config, OPT_HUNT)
    hunt: float | None = None
    if hunt_text is not None:
        try:
            hunt = float(hunt_text)
        except ValueError:
            hunt = -1.0
        if not hunt > 0:
            raise _usage(OPT_HUNT, hunt_text, "MINUTES (a positive number, e.g. 5 or 0.5)")
    replay_text = _raw(config, OPT_REPLAY)
    replay = None
    if replay_text is not None:
        replay = Path(replay_text)
        if not replay.is_file():
            raise pytest.UsageError(
                f"{OPT_REPLAY}={replay_text!r}: no such file; use {OPT_REPLAY}=FILE with a JSON trace written "
                f"by {OPT_REPORT} or `python -m harness hunt` (e.g. {OPT_REPLAY}=reports/<test>.json)"
            )
        from .explore import Counterexample  # only with --race-replay: the plugin's import stays cheap

        try:
            Counterexample.load(replay)  # untrusted input: a bad file is a usage error, not N test errors
        except HarnessError as exc:
            raise pytest.UsageError(f"{OPT_REPLAY}={replay_text!r}: {exc}") from None
    shards_text = config.getini(INI_SHARDS) or str(DEFAULT_SHARDS)
    if not re.fullmatch(r"[1-9]\d*", str(shards_text)):
        raise pytest.UsageError(f"ini option {INI_SHARDS}={shards_text!r} is not valid: use a positive integer")
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and WORKERINPUT_SEED in workerinput:
        seed, source = int(workerinput[WORKERINPUT_SEED]), str(workerinput.get("race_seed_source", "controller"))
    else:
        seed, source = _parse_seed(config, _raw(config, OPT_SEED))
    report_text = _raw(config, OPT_REPORT)
    report = Path(report_text or DEFAULT_REPORT_DIR)
    if not report.is_absolute():
        report = Path(str(config.rootpath)) / report
    return RaceSettings(
        seed, source, budget, strategy, hunt, report, replay, int(shards_text), faults, report_text is not None
    )


_SETTINGS = pytest.StashKey[RaceSettings]()
_STATE = pytest.StashKey["_SessionState"]()


def settings_of(config: pytest.Config) -> RaceSettings:
    return config.stash[_SETTINGS]


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def derive_seed(seed: int, nodeid: str) -> int:
    """A test's (or shard's) seed from the session seed and its node id: stable on every worker.

    The one derivation, shared with ``hunt --cluster`` (harness/_shards.py).
    """
    return _derive_seed(seed, nodeid)


# ---------------------------------------------------------------------- session state
@dataclass
class _Finding:
    nodeid: str
    signature: str
    seed: int
    json_path: str
    html_path: str
    outcome: str


@dataclass
class _SessionState:
    entries: list[ReportEntry] = field(default_factory=list)
    findings: list[_Finding] = field(default_factory=list)
    race_items: int = 0
    shard_seconds: float | None = None
    explored: int = 0
    started: float = field(default_factory=time.perf_counter)
    progress: _Progress | None = None


@pytest.hookimpl(trylast=True)  # after the cache provider has set config.cache
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(scenario=None, *, expect='clean', **params): a race test; the {FIXTURE!r} fixture's "
        "explore() uses the scenario, expectation and parameters given here as its defaults.",
    )
    if config.option.help or config.option.version:
        return
    settings = _parse_settings(config)
    config.stash[_SETTINGS] = settings
    config.stash[_STATE] = _SessionState()
    cache = getattr(config, "cache", None)  # None under -p no:cacheprovider
    if not _is_worker(config) and cache is not None:
        cache.set(CACHE_KEY, settings.seed)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(config), "race_harness_xdist")


class _XdistHooks:
    """Registered only when pytest-xdist is installed (its hooks are unknown otherwise)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_configure_node(self, node: Any) -> None:
        settings = settings_of(self.config)
        node.workerinput[WORKERINPUT_SEED] = settings.seed
        node.workerinput["race_seed_source"] = settings.seed_source

    def pytest_testnodedown(self, node: Any, error: object) -> None:
        out = getattr(node, "workeroutput", {}).get(WORKEROUTPUT_KEY)
        if out:
            self.config.stash[_STATE].explored += int(out.get("explored", 0))


def pytest_report_header(config: pytest.Config) -> list[str] | None:
    if _SETTINGS not in config.stash:
        return None
    s = settings_of(config)
    if s.replay is not None:
        # a replay runs the trace's own choices: a session seed, budget or strategy would read as a new search
        where = f"reports in {s.report_dir}" if s.writes_reports else f"no reports ({OPT_REPORT}=DIR to write them)"
        return [f"race-harness: replaying trace {s.replay} in the tests that explore its scenario; {where}"]
    line = (
        f"race-harness: seed={s.seed} ({OPT_SEED}={s.seed} to repeat), budget={s.budget_text}, "
        f"strategy={s.strategy}, reports in {s.report_dir}"
    )
    extra = []
    if s.hunt_minutes is not None:
        extra.append(f"race-harness: hunting for {s.hunt_minutes:g} min, {s.shards} shards per race test")
    return [line, *extra]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if FIXTURE not in metafunc.fixturenames or _SETTINGS not in metafunc.config.stash:
        return
    s = settings_of(metafunc.config)
    if s.hunt_minutes is not None:
        # Same items on every worker: the shard count depends on configuration only, never on the worker.
        metafunc.parametrize(SHARD_FIXTURE, range(s.shards), ids=[f"shard{i}" for i in range(s.shards)])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _SETTINGS not in config.stash:
        return
    race_items = [it for it in items if FIXTURE in getattr(it, "fixturenames", ())]
    for it in race_items:
        if it.get_closest_marker(MARKER) is None:
            it.add_marker(MARKER)
    state = config.stash[_STATE]
    state.race_items = len(race_items)
    s = settings_of(config)
    if s.hunt_minutes is not None and race_items:
        workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
        state.shard_seconds = s.hunt_minutes * 60.0 * workers / len(race_items)


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
        from .explore import Budget, Replay, explore, scenario_ref

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
        if s.hunt_minutes is not None:
            state = self._config.stash[_STATE]
            b = Budget(runs=None, seconds=state.shard_seconds or 1.0)
        if s.replay is not None:
            from .explore import Counterexample

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
        if expect == "clean" and result.counterexample is not None:
            pytest.fail(self._failure_text(result), pytrace=False)
        if expect == "violation" and result.counterexample is None:
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
        from .report import slug

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
                f"{result.outcome}\n\ncounterexample:\n{cx.program()}\n\n"
                f"trace:   {result.replayed} (found with seed {cx.seed}, {cx.strategy})\n"
                f"replay:  {cx.replay_command(result.replayed)}\n"
                f"         pytest {self.nodeid} {OPT_REPLAY}={result.replayed}\n{where}"
            )
        return (
            f"{result.outcome}\n\nminimal counterexample:\n{cx.program()}\n\n"
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


# ---------------------------------------------------------------- results to reports
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        payloads = item.stash.get(_PAYLOADS, None)
        if payloads:
            setattr(report, REPORT_ATTR, payloads)  # JSON-able: xdist serialises it to the controller
    return report


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    payloads = getattr(report, REPORT_ATTR, None)
    if not payloads:
        return
    config = _CONFIG[-1] if _CONFIG else None
    if config is None or _SETTINGS not in config.stash:
        return
    state = config.stash[_STATE]
    state.explored += len(payloads)
    if _is_worker(config):
        return  # only the controller writes files
    if settings_of(config).writes_reports:  # a replay only when asked
        for p in payloads:
            _record(config, state, p)
    if state.progress is not None:
        state.progress.advance(report.nodeid, payloads)


#: the running sessions' configs, innermost last: a pytester session inside a test pushes its own and pops
#: it when it ends, so the outer session's reports never go to the inner one's closed terminal
_CONFIG: list[pytest.Config] = []


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _CONFIG.append(session.config)
    config = session.config
    if _SETTINGS in config.stash and not _is_worker(config):
        config.stash[_STATE].progress = _Progress.open(config)


def _record(config: pytest.Config, state: _SessionState, p: dict[str, Any]) -> None:
    from .explore import Counterexample
    from .report import ReportEntry, ensure_report_dir, write_counterexample_html

    s = settings_of(config)
    raw = p.get("counterexample")
    json_path = html_path = None
    deviations = steps = None
    if raw is not None:
        ensure_report_dir(s.report_dir)
        tmp = Path(p["json_path"])
        tmp.parent.mkdir(parents=True, exist_ok=True)
        from .report import atomic_write_text

        atomic_write_text(tmp, json.dumps(raw, indent=1, sort_keys=True) + "\n")
        cx = Counterexample.load(tmp)
        json_path, html_path = p["json_path"], p["html_path"]
        deviations, steps = cx.deviations, cx.steps
        # node ids are relative to the rootdir, so the pytest line is too (the page stays portable)
        from_root = Path(os.path.relpath(Path(json_path).resolve(), Path(str(config.rootpath)).resolve())).as_posix()
        write_counterexample_html(
            cx,
            html_path,
            title=p["nodeid"],
            seed=int(p["seed"]),
            json_path=json_path,
            index_path=s.report_dir / "index.html",
            replay_command=f"pytest {p['nodeid']} {OPT_REPLAY}={from_root}   # from the rootdir",
        )
        state.findings.append(_Finding(p["nodeid"], p["signature"], int(p["seed"]), json_path, html_path, p["outcome"]))
    variant = "buggy" if p["expect"] == "violation" else "fixed"
    state.entries.append(
        ReportEntry(
            name=p["nodeid"],
            variant=variant,
            verdict=p["verdict"],
            outcome=p["outcome"],
            found=raw is not None,
            runs=int(p["runs"]),
            seconds=float(p["seconds"]),
            deviations=deviations,
            steps=steps,
            json_path=json_path,
            html_path=html_path,
            seed=int(p["seed"]),
        )
    )


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if session.config in _CONFIG:
        _CONFIG.remove(session.config)
    if _SETTINGS not in config.stash:
        return
    state = config.stash[_STATE]
    if _is_worker(config):
        workeroutput: dict[str, Any] = config.workeroutput  # type: ignore[attr-defined]
        workeroutput[WORKEROUTPUT_KEY] = {"explored": state.explored}
        return
    if state.progress is not None:
        state.progress.close()
    if state.entries:
        from .report import ensure_report_dir, write_index

        s = settings_of(config)
        ensure_report_dir(s.report_dir)
        entries = sorted(state.entries, key=lambda e: e.name)
        write_index(entries, s.report_dir, title=f"race-harness pytest session (seed {s.seed})")


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if _SETTINGS not in config.stash or _is_worker(config):
        return
    state = config.stash[_STATE]
    s = settings_of(config)
    if not state.entries:
        return
    tr = terminalreporter
    tr.section("race-harness")
    found = distinct(state.findings)
    tr.write_line(
        f"seed {s.seed} ({OPT_SEED}={s.seed} or {OPT_SEED}=last to repeat); "
        f"{len(state.entries)} search{'' if len(state.entries) == 1 else 'es'}: "
        f"{len(found)} distinct failure{'' if len(found) == 1 else 's'} "
        f"({len(state.findings)} finding{'' if len(state.findings) == 1 else 's'})"
    )
    if s.hunt_minutes is not None or found:
        for sig, group in found.items():
            first = group[0]
            tr.write_line(f"race {sig}: found {len(group)}x, first by {first.nodeid}")
            tr.write_line(f"    {first.outcome}")
            tr.write_line(f"    seeds {', '.join(str(f.seed) for f in group)}")
            tr.write_line(f"    report {first.html_path}")
            tr.write_line(f"    trace  {first.json_path}")
    tr.write_line(f"index: {s.report_dir / 'index.html'}")


def distinct(findings: list[_Finding]) -> dict[str, list[_Finding]]:
    """Findings grouped by signature, in the order first found."""
    out: dict[str, list[_Finding]] = {}
    for f in findings:
        out.setdefault(f.signature, []).append(f)
    return out


# -------------------------------------------------------------------------- progress
class _Progress:
    """One plain line per finished race search on the controller, through pytest's terminal reporter.

    Shown for findings always and for every search under ``-v``; nothing under
    ``-q``. Writing through the terminal reporter keeps the lines in pytest's
    own output stream, so they never clobber it. A hunt in an interactive
    terminal (neither ``-q`` nor ``-v``) gets :class:`_LiveProgress` instead.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.done = 0

    @classmethod
    def open(cls, config: pytest.Config) -> _Progress | None:
        if config.get_verbosity() < 0:
            return None
        tr = config.pluginmanager.get_plugin("terminalreporter")
        tw = getattr(tr, "_tw", None)
        real = getattr(tw, "_file", None)
        hunting = settings_of(config).hunt_minutes is not None
        if hunting and config.get_verbosity() == 0 and real is not None and _isatty(real):
            return _LiveProgress(config, tw, real)
        return cls(config)

    def advance(self, nodeid: str, payloads: list[dict[str, Any]]) -> None:
        self.done += 1
        tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if tr is None:
            return
        for p in payloads:
            if self.config.get_verbosity() > 0 or p.get("counterexample") is not None:
                tr.write_line(f"race-harness: {nodeid}: {p['outcome']}")

    def close(self) -> None:
        pass


def _isatty(f: Any) -> bool:
    try:
        return bool(f.isatty())
    except (AttributeError, ValueError):
        return False


class _LineProxy:
    """Stands in for pytest's terminal file while the live display runs.

    Complete lines go to ``console.print`` (so rich prints them *above* the live
    area); a partial line (pytest's progress dots) is held until its newline,
    so nothing pytest writes is ever drawn over. ``close()`` hands back the rest.
    """

    def __init__(self, console: Any, real: Any) -> None:
        self._console = console
        self._real = real
        self._buf = ""

    def write(self, text: str) -> int:
        from rich.text import Text

        self._buf += text
        while "\n" in self._buf:
            line, self._buf = self._buf.split("\n", 1)
            self._console.print(Text.from_ansi(line), soft_wrap=True)
        return len(text)

    def flush(self) -> None:
        pass  # a partial line waits for its newline (see the class docstring)

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return int(self._real.fileno())

    @property
    def encoding(self) -> str:
        return str(getattr(self._real, "encoding", "utf-8"))

    def close(self) -> None:
        if self._buf:
            self._real.write(self._buf)
            self._buf = ""
        self._real.flush()


class _LiveProgress(_Progress):
    """The rich live display of a hunt, on the controller, in an interactive terminal, not ``-q``/``-v``.

    One row per race test (its shards folded together): shards done, runs
    explored, failures. pytest's own output keeps flowing above it through
    :class:`_LineProxy`, so the display never clobbers it; the display is
    transient and the terminal summary prints the findings as usual.
    """

    def __init__(self, config: pytest.Config, tw: Any, real: Any) -> None:
        super().__init__(config)
        from rich.console import Console
        from rich.live import Live

        self._tw = tw
        self._real = real
        self.console = Console(file=real, force_terminal=True)
        self.rows: dict[str, list[int]] = {}  # race test -> [shards done, runs, failures], first-seen order
        self.live = Live(self.render(), console=self.console, transient=True, auto_refresh=False)
        self.live.start()
        self._proxy = _LineProxy(self.console, real)
        tw._file = self._proxy

    def render(self) -> Any:
        from rich.table import Table

        shards = settings_of(self.config).shards
        table = Table(title="race-harness hunt", title_justify="left", expand=False)
        table.add_column("race test")
        table.add_column("shards", justify="right")
        table.add_column("runs explored", justify="right")
        table.add_column("failures", justify="right")
        for name, (done, runs, failures) in self.rows.items():
            style = "bold red" if failures else ""
            table.add_row(name, f"{done}/{shards}", f"{runs:,}", f"[{style}]{failures}[/]" if style else "0")
        return table

    def advance(self, nodeid: str, payloads: list[dict[str, Any]]) -> None:
        self.done += 1
        key = re.sub(r"\[shard\d+-?", "[", nodeid.split("::", 1)[-1]).replace("[]", "")
        row = self.rows.setdefault(key, [0, 0, 0])
        row[0] += 1
        for p in payloads:
            row[1] += int(p["runs"])
            row[2] += 1 if p.get("counterexample") is not None else 0
        self.live.update(self.render(), refresh=True)

    def close(self) -> None:
        self.live.stop()
        self._tw._file = self._real
        self._proxy.close()


def iter_entries(config: pytest.Config) -> Iterator[ReportEntry]:
    """The session's report entries so far (for other plugins and the CLI)."""
    yield from config.stash[_STATE].entries
