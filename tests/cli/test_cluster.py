"""``hunt --cluster``: shards on a Dask LocalCluster bound to 127.0.0.1 (harness/_cluster.py).

The determinism claim is pinned both ways: the same seed gives the same findings,
digests and shard counts in process, on one worker and on two; different seeds give
different shard seeds. The faults of a cluster are real ones: a worker process
killed by SIGKILL in the middle of a shard, an address where nothing listens,
Ctrl-C between two searches.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_support import ROOT, assert_one_clean_error, json_lines, run_main

from harness import _cluster, _interrupt
from harness._shards import derive_seed, shard_seed, split_runs
from harness.cli import _hunt as cli_hunt

distributed = pytest.importorskip("distributed", reason="the cluster tests need pip install -e '.[test]' (dask)")

TOY = "tests/toys.py:lost_update"

#: a lost update whose first run on any worker kills that worker's process (SIGKILL: no goodbye to the scheduler)
DIES_ONCE = '''
import os
import signal
from pathlib import Path

import harness as h


@h.scenario
async def dies_once(world: h.World, *, marker: str) -> None:
    m = Path(marker)
    if not m.exists():
        m.write_text("a worker was killed here")
        os.kill(os.getpid(), signal.SIGKILL)
    store = {"x": 0}

    async def increment(warm_up: int) -> None:
        for i in range(warm_up):
            await world.step(f"warm up {i}")
        await world.step("read x", key="x")
        v = store["x"]
        await world.step("write x", key="x")
        store["x"] = v + 1

    world.spawn("a", increment, 0)
    world.spawn("b", increment, 1)
    world.at_end(lambda: store["x"] == 2, "no lost update")
'''


#: an operator process (stdlib only: it starts in milliseconds) that lists ConfigMaps once, says which process
#: started it, and waits to be ended; the scenario says which process ran it, so the test sees where each ran
OPERATOR_PROCESS = """
import base64, os, re, ssl, sys, time, urllib.request
from pathlib import Path
kubeconfig = Path(os.environ["KUBECONFIG"]).read_text()
server = re.search(r"server: (\\S+)", kubeconfig).group(1)
ca = base64.b64decode(re.search(r"certificate-authority-data: (\\S+)", kubeconfig).group(1)).decode()
urllib.request.urlopen(server + "/api/v1/namespaces/default/configmaps", context=ssl.create_default_context(cadata=ca)).read()
Path(sys.argv[1], f"operator-{os.getpid()}").write_text(str(os.getppid()))
time.sleep(600)
"""

PROCESS_MODEL = '''
import os
import sys
from pathlib import Path

import harness as h
from harness.kube import APIServer, KubeObject
from harness.operators import ExternalOperator


@h.scenario
async def listed(world: h.World, *, marks: str, program: str) -> None:
    api = APIServer(world)
    ExternalOperator(api, "lister", [sys.executable, program, marks]).start()
    Path(marks, f"worker-{os.getpid()}").write_text("")
    await api.create(KubeObject("ConfigMap", "default", "app"))
    await world.sleep(1.0, "user waits")
    world.at_end(lambda: len(api.peek_all("ConfigMap")) == 1, "one ConfigMap")
'''


@pytest.fixture(scope="module")
def two_workers() -> Iterator[str]:
    """A scheduler and two worker processes on 127.0.0.1, shared by this module's tests; its address."""
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
        scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, silence_logs=logging.ERROR,
    )
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def _hunt(capsys: pytest.CaptureFixture[str], tmp: Path, *extra: str) -> tuple[int, list[dict[str, Any]], str]:
    code, out, err = run_main(capsys, "hunt", TOY, "--variant", "both", "--seed", "7", "--budget", "120", "--json",
                              "--report-dir", str(tmp), *extra)
    return code, json_lines(out), err


def _findings(lines: list[dict[str, Any]]) -> list[tuple[str, str, bool, str | None, str | None]]:
    return [(d["race"], d["variant"], d["found"], d["signature"], d["digest"]) for d in lines]


def test_same_seed_same_findings_in_process_on_one_worker_and_on_two(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, two_workers: str
) -> None:
    code, here, _ = _hunt(capsys, tmp_path / "here")
    code2, on_two, _ = _hunt(capsys, tmp_path / "two", "--cluster", two_workers)
    code1, on_one, _ = _hunt(capsys, tmp_path / "one", "--cluster", "local:1")
    assert (code, code1, code2) == (0, 0, 0)
    assert _findings(here) == _findings(on_two) == _findings(on_one)
    assert [d["found"] for d in here] == [True, False]
    # the same shards whatever runs them: run for run, not only the same finding
    assert [d["runs"] for d in on_one] == [d["runs"] for d in on_two]
    trace = json.loads(Path(on_two[0]["trace"]).read_text())
    assert trace["digest"] == here[0]["digest"]
    assert (tmp_path / "two" / "index.html").is_file()


def test_sampling_hunt_proves_its_finding_with_shards_on_the_cluster(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, two_workers: str
) -> None:
    """The shards of a random search shrink; the client proves the finding once, its referee's waves on the
    cluster, to the canonical minimum the in-process hunt proves."""
    args = ("hunt", TOY, "--variant", "buggy", "--seed", "7", "--budget", "120")
    code, here, _ = run_main(capsys, *args, "--json", "--report-dir", str(tmp_path / "here"))
    code2, text, _ = run_main(capsys, *args, "--report-dir", str(tmp_path / "two"), "--cluster", two_workers)
    assert (code, code2) == (0, 0)
    assert "minimality proof: referee on the cluster:" in text and "proved minimal" in text, text
    [line] = json_lines(here)
    trace = json.loads(next((tmp_path / "two").glob("*.json")).read_text())
    assert trace["digest"] == line["digest"] and trace["proved_minimal"] is True


def test_exhaustive_hunt_on_the_cluster_proves_with_the_in_process_plan_count(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, two_workers: str
) -> None:
    args = ("hunt", TOY, "--variant", "both", "--strategy", "exhaustive:2", "--json")
    code, out, _ = run_main(capsys, *args, "--report-dir", str(tmp_path / "here"))
    code2, out2, _ = run_main(capsys, *args, "--report-dir", str(tmp_path / "two"), "--cluster", two_workers)
    here, two = json_lines(out), json_lines(out2)
    assert (code, code2) == (0, 0)
    assert [(d["variant"], d["verdict"], d["runs"], d["digest"]) for d in here] == [
        (d["variant"], d["verdict"], d["runs"], d["digest"]) for d in two]
    assert [d["verdict"] for d in two] == ["found", "proved-clean"]
    code3, out3, _ = run_main(capsys, "hunt", TOY, "--variant", "fixed", "--strategy", "exhaustive:2",
                              "--report-dir", str(tmp_path / "text"), "--cluster", two_workers)
    assert code3 == 0 and "proved clean up to 2" in out3 and "referee on the cluster:" in out3, out3


def test_process_mode_hunt_shards_each_worker_starting_its_own_operator_processes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, two_workers: str
) -> None:
    """A hunt of a scenario with an operator process (``ExternalOperator``) shards like any other: each shard's runs
    start their processes on the worker that runs the shard (their parent is that worker, never this client), the
    verdict comes back, and every process was ended by the run that started it."""
    marks = tmp_path / "marks"
    marks.mkdir()
    (tmp_path / "program.py").write_text(OPERATOR_PROCESS)
    (tmp_path / "listed.py").write_text(PROCESS_MODEL)
    code, out, err = run_main(
        capsys, "hunt", f"{tmp_path / 'listed.py'}:listed", "--param", f"marks={marks}",
        "--param", f"program={tmp_path / 'program.py'}", "--strategy", "random", "--seed", "3", "--budget", "4",
        "--shards", "2", "--json", "--report-dir", str(tmp_path / "reports"), "--cluster", two_workers,
    )
    [line] = json_lines(out)
    assert code == 0 and line["verdict"] == "none-found" and line["runs"] == 4, out + err
    assert line["live_process_seconds"] > 0, line
    workers = {int(p.name.split("-")[1]) for p in marks.glob("worker-*")}
    parents = {p.name: int(p.read_text()) for p in marks.glob("operator-*")}
    assert len(parents) == 4, parents  # one process per run
    assert set(parents.values()) == workers and os.getpid() not in workers, (parents, workers)
    for name in parents:
        with pytest.raises(ProcessLookupError):
            os.kill(int(name.split("-")[1]), 0)  # ended (and reaped) by its run


def test_shard_seeds_follow_the_hunt_seed_and_the_shard_never_the_worker() -> None:
    assert shard_seed(7, 0) == shard_seed(7, 0) == derive_seed(7, "shard0")
    assert len({shard_seed(7, k) for k in range(8)}) == 8
    assert shard_seed(7, 0) != shard_seed(8, 0)
    assert split_runs(10, 4) == [3, 3, 2, 2] and split_runs(3, 4) == [1, 1, 1]
    search = _cluster.Search("x", "m:f", {}, "random", None, 120, None)
    one, two = (_cluster.plan_shards([search], 7, 4, workers) for workers in (1, 2))
    assert one == two and sum(s.runs or 0 for s in one) == 120
    exhaustive = _cluster.Search("x", "m:f", {}, "exhaustive:2", None, 120, None)
    assert len(_cluster.plan_shards([exhaustive], 7, 4, 2)) == 1  # the same search on every shard: one shard


def test_a_worker_killed_mid_shard_and_the_hunt_still_completes_with_every_finding(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, two_workers: str
) -> None:
    model = tmp_path / "dies_once.py"
    model.write_text(DIES_ONCE)
    marker = tmp_path / "killed"
    code, out, err = run_main(
        capsys, "hunt", f"{model}:dies_once", "--param", f"marker={marker}", "--seed", "3", "--budget", "80",
        "--report-dir", str(tmp_path / "reports"), "--cluster", two_workers,
    )
    assert marker.is_file(), "the scenario never killed its worker"
    assert code == 0, err
    assert "found by 4 shards of 4" in out, out  # the killed shard was re-run; the others' findings kept
    assert len(list((tmp_path / "reports").glob("*.json"))) == 1


def test_an_unreachable_cluster_is_one_message_and_exit_2_before_any_search(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_cluster, "CONNECT_TIMEOUT", 1.0)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code, out, err = run_main(capsys, "hunt", TOY, "--cluster", f"tcp://127.0.0.1:{port}",
                              "--report-dir", str(tmp_path))
    assert code == 2 and out == ""
    assert_one_clean_error(err, f"tcp://127.0.0.1:{port}", "nothing was searched", "dask scheduler", "local:N")
    assert not (tmp_path / "index.html").exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--cluster", "here"], ["--cluster 'here' is not valid", "tcp://HOST:PORT", "local:N"]),
        (["--cluster", "local:0"], ["local:N"]),
        (["--shards", "4"], ["--shards goes with --cluster"]),
        (["--cluster", "local:2", "--shards", "0"], ["--shards 0 is not valid"]),
    ],
)
def test_bad_cluster_options_are_refused_before_anything_starts(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, args: list[str], words: list[str]
) -> None:
    code, _, err = run_main(capsys, "hunt", TOY, "--report-dir", str(tmp_path), *args)
    assert code == 2
    assert_one_clean_error(err, *words)


def test_ctrl_c_cancels_the_shards_still_out_and_keeps_what_came_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, two_workers: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = cli_hunt._hunt_one

    def then_ctrl_c(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        _interrupt.request_stop()  # what the first Ctrl-C does, right after the first search is written
        return out

    monkeypatch.setattr(cli_hunt, "_hunt_one", then_ctrl_c)
    code, lines, err = _hunt(capsys, tmp_path, "--cluster", two_workers, "--budget", "4000")
    assert code == 130, err
    assert lines[0]["found"] and Path(lines[0]["trace"]).is_file()
    assert all(d["verdict"] == "interrupted" for d in lines[1:])
    assert (tmp_path / "index.html").is_file()
    assert "interrupted: kept 1 counterexample" in err


def test_the_core_never_imports_dask_without_cluster(tmp_path: Path) -> None:
    code = (
        "import sys; from harness.cli import main; "
        f"rc = main(['hunt', {TOY!r}, '--budget', '20', '--json', '--report-dir', {str(tmp_path)!r}]); "
        "sys.exit(3 if 'distributed' in sys.modules or 'dask' in sys.modules else rc)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def test_a_cluster_hunts_line_counts_every_shards_injected_faults() -> None:
    """Each shard counts the faults its own runs injected; the combined line says their sum, not the first
    shard's."""
    first = "every fault kind, 3 injected: crash 3; postponements within windows of up to 2 s"
    done = [{"faults_injected": {"crash": 3}}, {"faults_injected": {"crash": 2, "watch_drop": 1}}, {}]
    assert _cluster._summed_space(first, done) == ("every fault kind, 6 injected: crash 5, watch_drop 1; "
                                                   "postponements within windows of up to 2 s")
    assert _cluster._summed_space("faults crash, 0 injected; no time windows", [{"faults_injected": {}}] * 2) == \
        "faults crash, 0 injected; no time windows"
    assert _cluster._summed_space("no faults; no time windows", done) == "no faults; no time windows"
