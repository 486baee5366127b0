"""The plugin's surface (options, ini twins, names) and the session's settings, parsed and checked once."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .._errors import HarnessError
from .._options import BUDGET_FORMS, FAULT_FORMS, STRATEGY_FORMS, parse_budget, parse_fault_spec, parse_strategy
from .._shards import derive_seed as _derive_seed

if TYPE_CHECKING:
    from ._session import _SessionState

# ----------------------------------------------------------------- the surface, named once
OPT_SEED = "--race-seed"
OPT_BUDGET = "--race-budget"
OPT_STRATEGY = "--race-strategy"
OPT_FAULTS = "--race-faults"
OPT_HUNT = "--race-hunt"
OPT_REPORT = "--race-report"
OPT_REPLAY = "--race-replay"
OPT_YIELD_TIMEOUT = "--race-yield-timeout"

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
    OPT_YIELD_TIMEOUT: (
        "race_yield_timeout",
        "race_yield_timeout",
        "SECONDS",
        "wall seconds an actor may run without reaching a yield point before its run is stopped as a model error "
        "naming its line (a CPU loop never yields). Default: 10; 0 turns the watchdog off.",
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
    #: --race-yield-timeout: the watchdog's bound in wall seconds (None: the default, 10)
    yield_timeout: float | None = None

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
    if re.fullmatch(r"\d+", text) and int(text) < 2**64:  # 64-bit: a larger seed would replay another
        return int(text), "given"
    raise _usage(OPT_SEED, text, "N (a whole number in [0, 2**64)), random or last")


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
        from ..explore import Counterexample  # only with --race-replay: the plugin's import stays cheap

        try:
            Counterexample.load(replay)  # untrusted input: a bad file is a usage error, not N test errors
        except HarnessError as exc:
            raise pytest.UsageError(f"{OPT_REPLAY}={replay_text!r}: {exc}") from None
    yield_text = _raw(config, OPT_YIELD_TIMEOUT)
    yield_timeout: float | None = None
    if yield_text is not None:
        try:
            yield_timeout = float(yield_text)
        except ValueError:
            yield_timeout = -1.0
        if not 0 <= yield_timeout < float("inf"):
            raise _usage(OPT_YIELD_TIMEOUT, yield_text, "SECONDS (a number >= 0, e.g. 30; 0 turns it off)")
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
        seed, source, budget, strategy, hunt, report, replay, int(shards_text), faults, report_text is not None,
        yield_timeout,
    )


_SETTINGS = pytest.StashKey[RaceSettings]()
_STATE: pytest.StashKey[_SessionState] = pytest.StashKey()


def settings_of(config: pytest.Config) -> RaceSettings:
    return config.stash[_SETTINGS]


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def derive_seed(seed: int, nodeid: str) -> int:
    """A test's (or shard's) seed from the session seed and its node id: stable on every worker.

    The one derivation, shared with ``hunt --cluster`` (harness/_shards.py).
    """
    return _derive_seed(seed, nodeid)
