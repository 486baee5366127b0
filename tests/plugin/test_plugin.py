"""The pytest plugin end to end, with pytester (in-process, and -n 2 in a subprocess)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

RACE_TESTS = """
import pytest
from tests.toys import lost_update, slow_liveness

@pytest.mark.race(lost_update, fixed=True)
def test_fixed(race):
    race.explore()

def test_buggy_expected(race):
    r = race.explore(lost_update, expect="violation", fixed=False)
    assert r.counterexample.deviations == 1

def test_buggy_fails(race):
    race.explore(lost_update, fixed=False)

def test_order_fails(race):
    race.explore(slow_liveness, fixed=False)

def test_not_a_race():
    pass
"""


@pytest.fixture
def ptr(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setenv("PYTEST_ADDOPTS", "--race-budget=200")
    pytester.makepyfile(test_races=RACE_TESTS)
    return pytester


def test_plugin_import_is_cheap() -> None:
    code = "import sys, harness.pytest_plugin; print(sorted(m for m in ('trio','rich','hypothesis') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_help_lists_one_group_of_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    text = result.stdout.str()
    assert "race-harness: deterministic race exploration" in text
    for opt in ("--race-seed=N|random|last", "--race-budget=RUNS|SECONDSs", "--race-strategy=NAME",
                "--race-hunt=MINUTES", "--race-report=DIR", "--race-replay=FILE", "--race-yield-timeout=SECONDS"):
        assert opt in text, opt
    assert "race_seed" in text  # ini twin


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--race-seed=abc"], "--race-seed=N (a whole number in [0, 2**64)), random or last"),
        (["--race-seed=18446744073709551616"], "--race-seed=N (a whole number in [0, 2**64)), random or last"),
        (["--race-budget=lots"], "--race-budget=RUNS (a whole number of runs >= 1, e.g. 500) or SECONDSs"),
        (["--race-budget=0"], "--race-budget=RUNS (a whole number of runs >= 1"),
        (["--race-budget=-5"], "--race-budget=RUNS (a whole number of runs >= 1"),
        (["--race-budget=0s"], "or SECONDSs (a positive number of seconds, e.g. 30s)"),
        (["--race-strategy=dfs"], "--race-strategy=NAME with NAME one of portfolio, random, pct[:DEPTH>=1]"),
        (["--race-strategy=pct:0"], "--race-strategy=NAME with NAME one of portfolio, random, pct[:DEPTH>=1]"),
        (["--race-strategy=exhaustive:-1"], "exhaustive[:K>=0]"),
        (["--race-hunt=-3"], "--race-hunt=MINUTES"),
        (["--race-faults=crashes"], "--race-faults='crashes' is not valid: use"),
        (["--race-replay=nope.json"], "--race-replay=FILE"),
        (["--race-replay=test_races.py"], "is not valid JSON"),
        (["--race-yield-timeout=soon"], "--race-yield-timeout=SECONDS (a number >= 0"),
        (["--race-yield-timeout=-1"], "--race-yield-timeout=SECONDS (a number >= 0"),
        (["-p", "no:cacheprovider", "--race-seed=last"], "no previous seed"),
    ],
)
def test_bad_values_are_usage_errors_naming_the_form(ptr: pytest.Pytester, args: list[str], needle: str) -> None:
    result = ptr.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert needle in result.stderr.str()


def test_ini_options_mirror_the_command_line(ptr: pytest.Pytester) -> None:
    ptr.makeini("[pytest]\nrace_seed = 4242\nrace_budget = 20\n")
    result = ptr.runpytest("-k", "fixed")
    result.stdout.fnmatch_lines(["race-harness: seed=4242 (--race-seed=4242 to repeat), budget=20*"])


def test_race_faults_reaches_every_race_test_through_the_ini_twin(ptr: pytest.Pytester) -> None:
    ptr.makepyfile(
        test_spaces="""
        from tests.toys import lost_update

        def test_default_space(race):
            assert "every fault kind" in race.explore(lost_update, fixed=True).space

        def test_own_choice_wins(race):
            assert "no faults" in race.explore(lost_update, fixed=True, faults="none").space
        """
    )
    ptr.makeini("[pytest]\nrace_faults = all\nrace_budget = 5\n")
    ptr.runpytest("test_spaces.py").assert_outcomes(passed=2)
    ptr.makeini("[pytest]\nrace_faults = crash,nope\n")
    bad = ptr.runpytest()
    assert bad.ret == pytest.ExitCode.USAGE_ERROR and "--race-faults='crash,nope' is not valid" in bad.stderr.str()


def test_marker_is_registered(ptr: pytest.Pytester) -> None:
    result = ptr.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.race(scenario=None, *, expect='clean', **params)*"])
    result = ptr.runpytest("--strict-markers", "-m", "race", "--race-seed=1")
    result.assert_outcomes(passed=2, failed=2, deselected=1)


def test_failure_shows_program_seed_replay_and_report(ptr: pytest.Pytester) -> None:
    result = ptr.runpytest("--race-seed=11", "--race-report=out")
    result.assert_outcomes(passed=3, failed=2)
    text = result.stdout.str()
    assert "race-harness: seed=11 (--race-seed=11 to repeat)" in text
    assert "minimal counterexample:" in text and "<- choice" in text and "=> at t=" in text
    assert "story: 1 deviation(s)" in text and "held: " in text  # the story comes first
    seed = re.search(r"seed:    (\d+) \(session --race-seed=11\)", text)
    assert seed is not None
    assert re.search(r"replay:  python -m harness replay \S+test_races.py-test_buggy_fails.json", text)
    report = re.search(r"report:  (\S+test_races.py-test_buggy_fails.html)", text)
    assert report is not None and Path(report.group(1)).is_file()
    out = ptr.path / "out"
    assert (out / "index.html").is_file() and (out / ".gitignore").read_text().strip().endswith("*")
    data = json.loads((out / "test_races.py-test_buggy_fails.json").read_text())
    assert data["seed"] == int(seed.group(1))


def test_seed_last_reuses_the_previous_session_seed(ptr: pytest.Pytester) -> None:
    ptr.runpytest("--race-seed=31337", "-k", "fixed")
    result = ptr.runpytest("--race-seed=last", "-k", "fixed")
    result.stdout.fnmatch_lines(["race-harness: seed=31337 *"])


def test_random_seed_is_echoed_and_changes(ptr: pytest.Pytester) -> None:
    seeds = set()
    for _ in range(2):
        text = ptr.runpytest("-k", "fixed").stdout.str()
        m = re.search(r"race-harness: seed=(\d+)", text)
        assert m is not None
        seeds.add(m.group(1))
    assert len(seeds) == 2


def test_replay_reproduces_the_failure_and_skips_other_scenarios(ptr: pytest.Pytester) -> None:
    ptr.runpytest("--race-seed=11", "--race-report=out")
    trace = ptr.path / "out" / "test_races.py-test_buggy_fails.json"
    result = ptr.runpytest(f"--race-replay={trace}", "--race-report=replayed", "-rs")
    # the lost_update tests replay the stored choices; the order_violation one is skipped
    result.assert_outcomes(passed=2, failed=1, skipped=2)
    assert "--race-replay replays tests.toys:lost_update(fixed=False); this test explores" in result.stdout.str()


def test_junit_xml_carries_seed_verdict_and_trace(ptr: pytest.Pytester) -> None:
    ptr.runpytest("--race-seed=11", "--race-report=out", "--junitxml=junit.xml", "-o", "junit_family=xunit1")
    tree = ET.parse(ptr.path / "junit.xml")
    case = next(c for c in tree.iter("testcase") if c.get("name") == "test_buggy_fails")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["race_verdict"] == "found" and props["race_session_seed"] == "11"
    assert props["race_seed"].isdigit() and props["race_trace"].endswith("test_races.py-test_buggy_fails.json")


def _failed(text: str) -> set[str]:
    return set(re.findall(r"^FAILED (\S+)", text, re.M))


def test_xdist_reports_what_a_single_process_reports(ptr: pytest.Pytester) -> None:
    single = ptr.runpytest_subprocess("-n", "0", "--race-seed=5", "--race-report=one", "-p", "no:randomly")
    multi = ptr.runpytest_subprocess("-n", "2", "--race-seed=5", "--race-report=two", "-p", "no:randomly")
    assert single.ret == multi.ret == pytest.ExitCode.TESTS_FAILED
    assert _failed(single.stdout.str()) == _failed(multi.stdout.str()) and len(_failed(single.stdout.str())) == 2
    one = sorted(p.name for p in (ptr.path / "one").glob("*.json"))
    two = sorted(p.name for p in (ptr.path / "two").glob("*.json"))
    assert one == two and len(one) == 3
    for name in one:  # same seed => the same counterexample, whichever process found it
        a = json.loads((ptr.path / "one" / name).read_text())
        b = json.loads((ptr.path / "two" / name).read_text())
        assert a["digest"] == b["digest"]
    assert (ptr.path / "two" / "index.html").is_file()


def test_hunt_shards_collect_identically_on_workers_and_deduplicate(ptr: pytest.Pytester) -> None:
    ptr.makepyfile(
        test_races="""
from tests.toys import lost_update

def test_lost(race):
    race.explore(lost_update, fixed=False)
"""
    )
    collected = ptr.runpytest("--race-hunt=0.01", "--collect-only", "-q")
    assert [ln for ln in collected.stdout.lines if "::" in ln] == [
        f"test_races.py::test_lost[shard{i}]" for i in range(4)
    ]
    result = ptr.runpytest_subprocess("-n", "2", "--race-hunt=0.01", "--race-seed=3", "--race-report=hunt")
    text = result.stdout.str()
    assert "Different tests were collected" not in text
    result.assert_outcomes(failed=4)
    m = re.search(r"(\d+) distinct failures? \(4 findings\)", text)
    assert m is not None and 1 <= int(m.group(1)) <= 4
    assert text.count("found ") >= 1 and "seeds " in text and "report " in text


def test_xdist_hunt_of_a_model_with_two_bugs_reports_exactly_two_distinct_failures(ptr: pytest.Pytester) -> None:
    """Findings group by failure signature (oracle, actor, minimal plan), not by trace or seed."""
    ptr.makepyfile(
        test_two="""
import harness as h

async def two_counters(world):
    store = {"x": 0, "y": 0}

    async def inc(name):
        await world.step(f"read {name}", key=name)
        v = store[name]
        await world.step(f"write {name}", key=name)
        store[name] = v + 1

    for name in ("x", "y"):
        world.spawn(f"{name}1", inc, name)
        world.spawn(f"{name}2", inc, name)
    world.at_end(lambda: store["x"] == 2, "no lost update of x")
    world.at_end(lambda: store["y"] == 2, "no lost update of y")

def test_two(race):
    race.explore(two_counters, strategy="random")
"""
    )
    ptr.makeini("[pytest]\nrace_hunt_shards = 12\n")
    result = ptr.runpytest_subprocess(
        "test_two.py", "-n", "2", "--race-hunt=0.01", "--race-seed=5", "--race-report=hunt"
    )
    text = result.stdout.str()
    result.assert_outcomes(failed=12)
    assert "2 distinct failures (12 findings)" in text, text
    assert "no lost update of x" in text and "no lost update of y" in text


def test_live_hunt_display_keeps_pytest_output_above_it() -> None:
    """The rich live display of a hunt (interactive terminals only) never draws over pytest's lines."""
    import io
    from dataclasses import replace

    import harness.pytest_plugin as plugin

    class Real(io.StringIO):
        def isatty(self) -> bool:
            return True

    class TW:
        def __init__(self, f: object) -> None:
            self._file = f

    class Config:
        def __init__(self) -> None:
            self.stash = pytest.Stash()

        def get_verbosity(self) -> int:
            return 0

    real = Real()
    tw = TW(real)
    config = Config()
    config.stash[plugin._SETTINGS] = replace(_settings_template(), hunt_minutes=1.0, shards=4)
    live = plugin._LiveProgress(config, tw, real)  # type: ignore[arg-type]
    assert tw._file is not real  # pytest now writes through the proxy
    tw._file.write("tests/x.py ..")  # a partial line is held back ...
    assert "tests/x.py" not in real.getvalue()
    tw._file.write("..\n")  # ... and printed above the display once complete
    live.advance("tests/x.py::test_hunt[shard0-lost_update]", [{"runs": 12, "counterexample": None}])
    live.advance("tests/x.py::test_hunt[shard1-lost_update]", [{"runs": 30, "counterexample": {"x": 1}}])
    assert live.rows == {"test_hunt[lost_update]": [2, 42, 1]}
    tw._file.write("tail without newline")
    live.close()
    out = real.getvalue()
    assert tw._file is real
    assert "tests/x.py ...." in out and out.rstrip().endswith("tail without newline")
    assert "runs explored" in out and "2/4" in out


def _settings_template():  # type: ignore[no-untyped-def]
    import harness.pytest_plugin as plugin

    fields = {f.name: None for f in plugin.RaceSettings.__dataclass_fields__.values()}
    return plugin.RaceSettings(**fields)


def test_a_session_writes_under_reports_pytest_with_portable_pages(ptr: pytest.Pytester) -> None:
    ptr.runpytest("--race-seed=11", "-k", "buggy_fails")
    out = ptr.path / "reports" / "pytest"
    assert (out / "index.html").is_file()
    assert not (ptr.path / "reports" / "index.html").exists()  # the hunt's index is never replaced
    page = (out / "test_races.py-test_buggy_fails.html").read_text()
    assert "python -m harness replay test_races.py-test_buggy_fails.json" in page
    assert "--race-replay=reports/pytest/test_races.py-test_buggy_fails.json" in page
    assert 'href="index.html"' in page and 'href="test_races.py-test_buggy_fails.json"' in page
    assert str(ptr.path) not in page
    data = json.loads((out / "test_races.py-test_buggy_fails.json").read_text())
    assert data["meta"]["report"] == "test_races.py-test_buggy_fails.html"


KNOWN_OPEN_SHARDS = """
import harness as h

@h.scenario
async def rare(world, *, fixed: bool = False):
    # a violation one run in 60 finds: a per-shard time budget would find it on some machines and not others
    pick = world.choose("which", 60)
    await world.step("look")
    world.at_end(lambda: pick != 41 or "picked 41", "never 41")

def test_known_open_fix_still_fails(race):
    race.explore(rare, expect="violation", budget=40, strategy="random", fixed=True)

def test_clean_one(race):
    race.explore(rare, expect="clean", budget=5, strategy="canonical", fixed=True)
"""


def test_known_open_hunt_shards_do_not_flake(ptr: pytest.Pytester) -> None:
    """Issue 29 item 5: under --race-hunt, a shard promising a violation runs its own budget with its shard seed
    and records what it found; -n 0 and -n 2 give the same pass/fail and the same traces."""
    ptr.makepyfile(test_races=KNOWN_OPEN_SHARDS)
    args = ("--race-seed=3", "--race-hunt=0.01", "-p", "no:randomly", "-o", "race_hunt_shards=6")
    single = ptr.runpytest_subprocess("-n", "0", "--race-report=one", *args)
    multi = ptr.runpytest_subprocess("-n", "2", "--race-report=two", *args)
    assert single.ret == multi.ret == pytest.ExitCode.OK, single.stdout.str()
    one = sorted(p.name for p in (ptr.path / "one").glob("*.json"))
    two = sorted(p.name for p in (ptr.path / "two").glob("*.json"))
    assert one == two and 0 < len(one) < 6, one  # some shards' seeds find it in 40 runs, some do not: both pass
    for name in one:
        a = json.loads((ptr.path / "one" / name).read_text())
        b = json.loads((ptr.path / "two" / name).read_text())
        assert a["digest"] == b["digest"] and a["choices"] == b["choices"]


def test_a_scenario_that_raises_in_its_setup_fails_as_a_model_error(ptr: pytest.Pytester) -> None:
    """Issue 29 item 1 in the plugin: expect='violation' is not met by the scenario's own exception."""
    ptr.makepyfile(test_races="""
import harness as h

@h.scenario
async def broken(world, *, fixed: bool = False):
    await world.step("setup")
    raise TypeError("a parameter of the wrong type")

def test_buggy(race):
    race.explore(broken, expect="violation", budget=5, fixed=False)
""")
    result = ptr.runpytest("-p", "no:randomly", "--race-report=out")
    result.assert_outcomes(failed=1)
    assert "model error: the scenario raised TypeError at" in result.stdout.str()


def test_a_cpu_loop_fails_as_a_model_error_under_the_yield_timeout(ptr: pytest.Pytester) -> None:
    """Issue 52 item 1 in the plugin: --race-yield-timeout bounds a step's wall time; a loop that never yields is
    a model error naming its line, not a hung session (it can only trip late on a slow machine, never early)."""
    ptr.makepyfile(test_races="""
import harness as h

@h.scenario
async def busy(world, *, fixed: bool = False):
    await world.step("setup")
    while True:
        pass

def test_buggy(race):
    race.explore(busy, expect="violation", budget=5, fixed=False)
""")
    result = ptr.runpytest("-p", "no:randomly", "--race-report=out", "--race-yield-timeout=0.5")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "s without a yield point at " in out and "test_races.py:" in out, out


def test_known_open_scenario_is_an_expected_failure_in_pytest(ptr: pytest.Pytester) -> None:
    """Issue 37: a user's @h.scenario(known_open=...) fixed variant that fails is reported as an expected failure
    with the text, as a registered race's known-open fix; its buggy variant is found as usual."""
    ptr.makepyfile(
        test_open="""
import harness as h

@h.scenario(known_open="upstream#1: the fix narrows the window but does not close it")
async def residual(world, *, fixed=False):
    store = {"x": 0}

    async def inc():
        await world.step("read x", key="x")
        v = store["x"]
        await world.step("write x", key="x")
        store["x"] = v + 1

    world.spawn("a", inc)
    world.spawn("b", inc)
    world.at_end(lambda: store["x"] == 2 or f"x is {store['x']}", "no lost update")

def test_fixed(race):
    race.explore(residual, fixed=True)

def test_buggy(race):
    race.explore(residual, expect="violation", fixed=False)
"""
    )
    result = ptr.runpytest("test_open.py", "-rx", "--race-seed=1")
    result.assert_outcomes(passed=1, xfailed=1)
    assert "known open upstream: upstream#1: the fix narrows the window" in result.stdout.str()
