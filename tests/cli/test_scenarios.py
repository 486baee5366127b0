"""Issue 10, items 1 and 2: any scenario on every command, and traces that name scenarios safely.

A scenario is a registered race (entry-point group ``race_harness.races``), a
``package.module:function`` or a ``path/to/file.py:function``; a trace names it
portably and a replay resolves only marked scenarios.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import LOST_UPDATE, ROOT, assert_one_clean_error, json_lines, run_cli, run_main

from harness.explore._params import parse_params
from harness.explore._scenarios import ENTRY_POINT_GROUP
from harness.explore._source import marked_in_source


def _hunt_then_replay_elsewhere(spec: str, tmp_path: Path, *extra: str, env: dict[str, str] | None = None) -> None:
    """Hunt ``spec`` with --json, check the files, replay the trace in a new process from another folder."""
    proc = run_cli("hunt", spec, "--json", "--report-dir", "out", "--strategy", "random", *extra, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    [rec] = json_lines(proc.stdout)
    assert rec["found"] is True and rec["race"] == spec
    trace, page = tmp_path / rec["trace"], tmp_path / rec["report"]
    assert trace.is_file() and page.is_file()
    index = (tmp_path / "out" / "index.html").read_text()
    assert spec in index and page.name in index  # the index lists it and links its page, as for a race
    saved = json.loads(trace.read_text())
    assert "__main__" not in saved["scenario"] and str(tmp_path) not in saved["scenario"]  # portable
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    replay = run_cli("replay", str(trace), "--json", cwd=elsewhere, env=env)
    assert replay.returncode == 0, replay.stderr
    out = json.loads(replay.stdout)
    assert out["digest"] == saved["digest"] == rec["digest"]
    assert out["violation"] is not None and out["violation"].endswith(saved["violation"]["message"])


def test_hunt_a_file_outside_the_project_then_replay_it_in_a_new_process(tmp_path: Path) -> None:
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "mine.py").write_text(LOST_UPDATE)
    _hunt_then_replay_elsewhere("models/mine.py:lost_update", tmp_path, "--param", "warm=2")
    saved = json.loads(next((tmp_path / "out").glob("*.json")).read_text())
    # the hunt copied the file next to its trace (issue 26 item 7), named relative to the trace's folder
    assert saved["scenario"] == "models-mine-lost_update.py:lost_update"
    assert (tmp_path / "out" / "models-mine-lost_update.py").read_text() == LOST_UPDATE
    assert saved["params"] == {"warm": 2}  # --param values are JSON when they parse


def test_hunt_a_package_module_function_then_replay_it_in_a_new_process(tmp_path: Path) -> None:
    pkg = tmp_path / "lib" / "toyraces"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "counters.py").write_text(LOST_UPDATE)
    env = {"PYTHONPATH": str(tmp_path / "lib")}
    _hunt_then_replay_elsewhere("toyraces.counters:lost_update", tmp_path, env=env)
    saved = json.loads(next((tmp_path / "out").glob("*.json")).read_text())
    assert saved["scenario"] == "toyraces.counters:lost_update"


THIRD_PARTY = '''
from harness import Race, World


async def scenario(world: World, *, fixed: bool = False) -> None:
    """Registered as a Race, not decorated: the entry point is its mark."""
    st = {"ready": False, "data": None}

    async def writer() -> None:
        await world.step("set ready")
        st["ready"] = True
        if not fixed:
            await world.step("write data")
        st["data"] = 1

    async def reader() -> None:
        await world.step("check ready")
        if st["ready"]:
            await world.step("read data")
            assert st["data"] == 1, "read data before it was written"

    world.spawn("writer", writer)
    world.spawn("reader", reader)


RACES = [Race(name="third_party_toy", title="A toy race from another package", upstream="example/toy#1",
              scenario=scenario, budget=200)]
'''


def _install_third_party(tmp_path: Path) -> dict[str, str]:
    """A package with a ``race_harness.races`` entry point, installed the way pip would leave it."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "thirdparty_races.py").write_text(THIRD_PARTY)
    info = site / "thirdparty_races-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-races\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\ntoy = thirdparty_races:RACES\n")
    return {"PYTHONPATH": str(site)}


def test_an_entry_point_race_is_listed_hunted_and_replayed(tmp_path: Path) -> None:
    env = _install_third_party(tmp_path)
    listed = run_cli("list", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and "third_party_toy" in listed.stdout and "kruise_imagepulljob" in listed.stdout
    proc = run_cli("hunt", "third_party_toy", "--variant", "both", "--json", "--report-dir", "out", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr  # buggy found, fixed clean: what the variants promise
    buggy, fixed = json_lines(proc.stdout)
    assert buggy["found"] and not fixed["found"]
    saved = json.loads((tmp_path / buggy["trace"]).read_text())
    assert saved["scenario"] == "thirdparty_races:scenario"
    replay = run_cli("replay", buggy["trace"], "--json", cwd=tmp_path, env=env)
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout)["digest"] == saved["digest"]


def test_our_races_are_registered_through_the_same_entry_points() -> None:
    from races import MODULES, REGISTRY

    eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    assert {ep.value.partition(":")[0] for ep in eps} >= set(MODULES)
    assert next(r.scenario.__module__ for r in REGISTRY.values()) == MODULES[0]  # the documented order
    assert len(REGISTRY) == 8 and "volcano_deleted_jobs_3375_residual" in REGISTRY


def test_a_race_machine_class_is_a_scenario_on_the_command_line(tmp_path: Path) -> None:
    proc = run_cli("hunt", "tests.toys:DepositMachine", "--json", "--report-dir", str(tmp_path), "--strategy", "random")
    assert proc.returncode == 0, proc.stderr
    [rec] = json_lines(proc.stdout)
    saved = json.loads(Path(rec["trace"]).read_text())
    assert rec["found"] and saved["scenario"] == "tests.toys:DepositMachine.scenario"
    replay = run_cli("replay", rec["trace"], "--json")
    assert replay.returncode == 0 and json.loads(replay.stdout)["digest"] == saved["digest"]


SCRIPT = LOST_UPDATE + '''

if __name__ == "__main__":
    import sys
    result = h.explore(lost_update, strategy="random", budget=500, seed=0)
    result.counterexample.save(sys.argv[1])
'''


def test_a_trace_saved_from_a_script_names_its_file_and_replays(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "mine.py").write_text(SCRIPT)
    subprocess.run([sys.executable, "scripts/mine.py", "out/mine.json"], cwd=tmp_path, check=True)
    saved = json.loads((tmp_path / "out" / "mine.json").read_text())
    assert saved["scenario"] == "../scripts/mine.py:lost_update"  # never __main__
    replay = run_cli("replay", str(tmp_path / "out" / "mine.json"), "--json", cwd=tmp_path)
    assert replay.returncode == 0, replay.stderr
    # from a folder that holds neither the trace nor the script, the file is outside what a trace may name
    refused = run_cli("replay", str(tmp_path / "out" / "mine.json"), cwd=ROOT)
    assert refused.returncode == 2 and "lies outside the trace's folder" in refused.stderr
    assert json.loads(replay.stdout)["digest"] == saved["digest"]


def test_a_scenario_of_python_c_is_refused_at_save_time_with_what_to_do(tmp_path: Path) -> None:
    code = LOST_UPDATE + (
        "\nimport sys\nr = h.explore(lost_update, strategy='random', budget=500)\n"
        "try:\n    r.counterexample.save(sys.argv[1])\nexcept h.UsageError as e:\n    print(e)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "x.json")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "interactive session or `python -c`" in proc.stdout and "@harness.scenario" in proc.stdout
    assert not (tmp_path / "x.json").exists()


def test_a_trace_naming_os_system_is_refused_without_running_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import harness as h
    from harness.explore._counterexample import checksum
    from tests.toys import lost_update

    called: list[object] = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a) or 0)
    raw = h.explore(lost_update, strategy="random", budget=500).counterexample.to_json()
    canary = tmp_path / "canary_module.py"
    canary.write_text(f"open({str(tmp_path / 'imported')!r}, 'w').close()\n\ndef run(world):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for ref in ("os:system", "canary_module:run", "canary_module.py:run", "subprocess:run"):
        raw = {**raw, "scenario": ref, "params": {"command": "touch pwned"}}
        raw["checksum"] = checksum(raw)  # a well-formed file: only the scenario rule stands in the way
        path = tmp_path / "evil.json"
        path.write_text(json.dumps(raw))
        code, out, err = run_main(capsys, "replay", str(path))
        assert code == 2, (ref, out, err)
        assert_one_clean_error(err, "is not marked as a scenario", "@harness.scenario")
    assert called == []
    assert not (tmp_path / "imported").exists() and "canary_module" not in sys.modules


def test_unmarked_functions_are_refused_on_the_command_line_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text(LOST_UPDATE)
    for spec in ("mine.py:not_marked", "os:system"):
        proc = run_cli("hunt", spec, "--report-dir", "out", cwd=tmp_path)
        assert proc.returncode == 2
        assert_one_clean_error(proc.stderr, "is not marked as a scenario", "decorate it with @harness.scenario")
    assert not (tmp_path / "out").exists()  # refused before anything was written


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("nowhere.py:f", "does not exist"),
        ("no_such_module_anywhere:f", "cannot be found"),
        ("mine.py:missing", "no function 'missing' in mine.py"),
        ("mine.py:", "is not of the form package.module:function or path/to/file.py:function"),
        ("__main__:lost_update", "names __main__"),
    ],
)
def test_bad_scenario_names_get_one_line_and_exit_2(tmp_path: Path, spec: str, words: str) -> None:
    (tmp_path / "mine.py").write_text(LOST_UPDATE)
    proc = run_cli("hunt", spec, cwd=tmp_path)
    assert proc.returncode == 2
    assert_one_clean_error(proc.stderr, words)


def test_missing_function_is_named_before_marking(tmp_path: Path) -> None:
    """A typo is a typo, with the closest name; the marking refusal is for functions that exist unmarked."""
    (tmp_path / "model.py").write_text(LOST_UPDATE.replace("async def lost_update", "async def scenario"))
    proc = run_cli("hunt", "model.py:scenaro", cwd=tmp_path)
    assert proc.returncode == 2
    assert_one_clean_error(proc.stderr, "no function 'scenaro' in model.py (did you mean 'scenario'?)")
    assert "not marked" not in proc.stderr
    proc = run_cli("hunt", "model.py:not_marked", cwd=tmp_path)
    assert proc.returncode == 2 and "is not marked as a scenario" in proc.stderr


def test_lookalike_decorator_is_refused_without_running_the_file(tmp_path: Path) -> None:
    """A decorator named ``scenario`` that is not harness.scenario through the file's imports is no mark,
    and the file's top-level code never runs (a trace or a command line may name it)."""
    ran = tmp_path / "ran"
    for i, (head, deco) in enumerate([
        ("scenario = lambda f: f", "@scenario"),
        ("import harness as h\nclass h:\n    scenario = staticmethod(lambda f: f)", "@h.scenario"),
        ("from harness import scenario\nscenario = lambda f: f", "@scenario"),
        ("from harness import scenario\nfrom os.path import *", "@scenario"),
        ("import fakeharness as h", "@h.scenario"),
    ]):
        (tmp_path / f"evil{i}.py").write_text(
            f"import pathlib\npathlib.Path({str(ran)!r}).write_text('ran')\n{head}\n\n{deco}\n"
            "async def attack(world):\n    pass\n"
        )
        proc = run_cli("hunt", f"evil{i}.py:attack", cwd=tmp_path)
        assert proc.returncode == 2, (head, proc.stderr)
        assert_one_clean_error(proc.stderr, "is not marked as a scenario", "(nothing was imported)")
        assert not ran.exists(), head
    assert marked_in_source("import harness.explore\n@harness.explore.scenario\nasync def f(w): ...", "f")
    assert marked_in_source("from harness import scenario as mark\n@mark\nasync def f(w): ...", "f")


def test_params_are_json_when_they_parse_else_strings_and_checked_against_the_scenario(tmp_path: Path) -> None:
    assert parse_params(["n=3", "on=true", "name=web", 'q="3"', "xs=[1, 2]", "e="]) == {
        "n": 3, "on": True, "name": "web", "q": "3", "xs": [1, 2], "e": "",
    }
    (tmp_path / "mine.py").write_text(LOST_UPDATE)
    proc = run_cli("hunt", "mine.py:lost_update", "--param", "wram=2", cwd=tmp_path)
    assert proc.returncode == 2
    assert_one_clean_error(proc.stderr, "takes no parameter 'wram'", "it takes: fixed, warm")
    proc = run_cli("hunt", "mine.py:lost_update", "--param", "warm", cwd=tmp_path)
    assert proc.returncode == 2
    assert_one_clean_error(proc.stderr, "is not NAME=VALUE")


def test_replay_runs_a_scenario_under_given_choices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mine.py").write_text(LOST_UPDATE)
    spec = f"{tmp_path / 'mine.py'}:lost_update"
    code, out, _ = run_main(capsys, "replay", spec)
    assert code == 0 and "=> no violation" in out and "0 deviations" in out  # the canonical order is safe
    code, out, _ = run_main(capsys, "hunt", spec, "--json", "--strategy", "random", "--report-dir", str(tmp_path / "r"))
    saved = json.loads(Path(json_lines(out)[0]["trace"]).read_text())
    choices = ",".join(map(str, saved["choices"]))
    code, out, _ = run_main(capsys, "replay", spec, "--param", "warm=1", "--choices", choices, "--json")
    assert code == 0 and json.loads(out)["digest"] == saved["digest"]


@pytest.mark.parametrize(
    ("qualname", "marked"),
    [
        ("deco", True),
        ("attr_deco", True),
        ("bound", True),
        ("Machine", True),
        ("Machine.scenario", True),
        ("Grandchild.scenario", True),
        ("Decorated.scenario", True),
        ("Other", False),
        ("plain", False),
        ("Machine.helper", False),
        ("missing", False),
    ],
)
def test_the_mark_is_read_from_the_source_without_running_it(qualname: str, marked: bool) -> None:
    source = '''
import harness as h
from harness import scenario, RaceMachine
from elsewhere import BaseMachine

@scenario
async def deco(world): ...

@h.scenario
async def attr_deco(world): ...

async def plain(world): ...

bound = h.scenario(plain)

class Machine(h.RaceMachine):
    def helper(self): ...

class Grandchild(Machine): ...

@h.scenario
class Decorated(BaseMachine): ...

class Other(BaseMachine): ...
'''
    assert marked_in_source(source, qualname) is marked
