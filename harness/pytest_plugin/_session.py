"""The session: configuration, xdist hand-over, results to reports, the terminal summary.

Only the controller writes files (JSON trace, HTML report, ``index.html``), as
soon as each test report arrives, so a crashed worker loses nothing the others
found; workers send their findings as a JSON-able report attribute.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._fixture import _PAYLOADS
from ._progress import _Progress
from ._settings import (
    _SETTINGS,
    _STATE,
    CACHE_KEY,
    FIXTURE,
    MARKER,
    OPT_REPLAY,
    OPT_REPORT,
    OPT_SEED,
    REPORT_ATTR,
    SHARD_FIXTURE,
    WORKERINPUT_SEED,
    WORKEROUTPUT_KEY,
    _is_worker,
    _parse_settings,
    settings_of,
)

if TYPE_CHECKING:
    from ..report import ReportEntry

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


#: the watchdog bounds in force before each --race-yield-timeout session (restored when it ends)
_WATCHDOG_BOUNDS: list[float] = []


def pytest_unconfigure(config: pytest.Config) -> None:
    if _SETTINGS in config.stash and settings_of(config).yield_timeout is not None and _WATCHDOG_BOUNDS:
        from ..sim._watchdog import configure

        configure(bound=_WATCHDOG_BOUNDS.pop())


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
    if settings.yield_timeout is not None:  # imported only when asked: the plugin's import stays cheap
        from ..sim._watchdog import SETTINGS, configure

        _WATCHDOG_BOUNDS.append(SETTINGS.bound)  # put back at unconfigure (pytester runs sessions in process)
        configure(bound=settings.yield_timeout)
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
    from ..explore import Counterexample
    from ..report import ReportEntry, ensure_report_dir, write_counterexample_html

    s = settings_of(config)
    raw = p.get("counterexample")
    json_path = html_path = None
    deviations = steps = None
    if raw is not None:
        ensure_report_dir(s.report_dir)
        from ..report import atomic_write_text, free_stem, record_written

        planned = Path(p["json_path"])
        planned.parent.mkdir(parents=True, exist_ok=True)
        # a file of that name the harness did not write is kept; this one goes beside it
        stem = free_stem(planned.parent, planned.stem, (".json", ".html"))
        tmp = planned.with_name(f"{stem}.json")
        atomic_write_text(tmp, json.dumps(raw, indent=1, sort_keys=True) + "\n")
        cx = Counterexample.load(tmp)
        json_path, html_path = str(tmp), str(planned.with_name(f"{stem}.html"))
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
        record_written(json_path, html_path)
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
            expect=p["expect"],
        )
    )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int | pytest.ExitCode = 0) -> None:
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
        from ..report import ensure_report_dir, write_index

        s = settings_of(config)
        ensure_report_dir(s.report_dir)
        entries = sorted(state.entries, key=lambda e: e.name)
        # a session cut by Ctrl-C, -x or --maxfail ran fewer searches than it collected: its index says so
        cut = exitstatus == pytest.ExitCode.INTERRUPTED or bool(session.shouldstop)
        write_index(entries, s.report_dir, title=f"race-harness pytest session (seed {s.seed})", interrupted=cut)


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


def iter_entries(config: pytest.Config) -> Iterator[ReportEntry]:
    """The session's report entries so far (for other plugins and the CLI)."""
    yield from config.stash[_STATE].entries
