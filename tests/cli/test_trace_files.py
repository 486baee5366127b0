"""Issue 12, items 5 and 6: a trace file is untrusted input.

Every way a path can fail to be a trace gets one line and exit 2; the checksum
covers every field that affects a replay, so an edit is "edited or damaged", not
"the scenario changed"; and whatever bytes a file holds, ``replay`` exits 0, 1
or 2 without a traceback and imports no module the file names unless it is a
marked scenario.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import assert_one_clean_error, run_main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import harness as h
from harness.explore._counterexample import MAX_TRACE_BYTES, SIGNED_FIELDS, checksum
from tests import toys

CANARY = "race_harness_canary_module"


@pytest.fixture(scope="module")
def valid_trace() -> dict[str, Any]:
    cx = h.explore(toys.lost_update, strategy="random", budget=500, seed=3).counterexample
    assert cx is not None
    return cx.to_json()


def _write(tmp_path: Path, raw: dict[str, Any] | bytes, name: str = "t.json") -> Path:
    path = tmp_path / name
    path.write_bytes(raw if isinstance(raw, bytes) else json.dumps(raw).encode())
    return path


# ------------------------------------------------------------------ item 5: one message per bad path
def test_item5_a_folder_is_one_message_not_a_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "replay", str(tmp_path))
    assert code == 2
    assert_one_clean_error(err, "is a folder, not a trace file", "name one of the .json files in it")


def test_a_file_that_cannot_be_read_is_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], valid_trace: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _write(tmp_path, valid_trace)
    if os.geteuid() != 0:
        path.chmod(0)
    else:  # root reads any file: make the open fail the way a mode of 000 would for anyone else
        real_open = Path.open

        def deny(self: Path, *a: Any, **k: Any) -> Any:
            if self == path:
                raise PermissionError(13, "Permission denied", str(self))
            return real_open(self, *a, **k)

        monkeypatch.setattr(Path, "open", deny)
    code, _, err = run_main(capsys, "replay", str(path))
    assert code == 2
    assert_one_clean_error(err, "cannot be read: permission denied")


def test_a_huge_file_is_refused_unread(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "huge.json"
    with path.open("wb") as fh:  # sparse: takes no disk space
        fh.truncate(MAX_TRACE_BYTES + 1)
    code, _, err = run_main(capsys, "replay", str(path))
    assert code == 2
    assert_one_clean_error(err, "larger than any trace the harness writes", "was not read")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"\xff\xfe{\x00}", "is not UTF-8 text"),
        (b"", "is not valid JSON"),
        (b"[" * 100_000, "nested too deeply"),
        (b"1" * 5000, "is not valid trace JSON"),
        (b'{"format": "race-harness-trace", "version": 1, "choices": [1]}', "has no checksum"),
    ],
)
def test_bytes_that_are_no_trace_are_one_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, words: str
) -> None:
    code, _, err = run_main(capsys, "replay", str(_write(tmp_path, content)))
    assert code == 2
    assert_one_clean_error(err, words, "re-run the hunt")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_pipe_is_refused_without_blocking_on_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    code, _, err = run_main(capsys, "replay", str(fifo))
    assert code == 2
    assert_one_clean_error(err, "is not a regular file")


# ------------------------------------------------------------------ item 6: the checksum
def test_item6_the_checksum_covers_every_signed_field(valid_trace: dict[str, Any]) -> None:
    assert {"format", "version", "scenario", "params", "choices", "limits", "trace", "violation"} <= set(SIGNED_FIELDS)
    base = checksum(valid_trace)
    for field in SIGNED_FIELDS:
        changed = {**valid_trace, field: ["changed", valid_trace.get(field)]}
        assert checksum(changed) != base, field
    assert checksum({**valid_trace, "meta": {"note": "added later"}}) == base  # labels only


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("choices", [0, 0, 0, 0, 0, 0, 1]),
        ("params", {"fixed": True}),
        ("scenario", "tests.explore.changed:order_violation"),
        ("limits", {"max_steps": 10, "max_time": 1.0}),
        ("trace", []),
        ("proved_minimal", False),
    ],
)
def test_item6_an_edited_field_is_edited_or_damaged_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], valid_trace: dict[str, Any], field: str, value: Any
) -> None:
    code, _, err = run_main(capsys, "replay", str(_write(tmp_path, {**valid_trace, field: value})))
    assert code == 2
    assert_one_clean_error(err, "was edited or damaged")


def test_an_intact_trace_replays_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str], valid_trace: dict[str, Any]) -> None:
    code, out, err = run_main(capsys, "replay", str(_write(tmp_path, valid_trace)))
    assert code == 0, err
    assert "=> oracle violated" in out


# ------------------------------------------------------------------ fuzzing replay
def _canaries(tmp_path: Path) -> list[str]:
    """Scenario names a hostile file could hold; importing any canary module leaves a file behind."""
    (tmp_path / f"{CANARY}.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'w').close()\n\nasync def run(w): ...\n")
    return [
        "os:system", "subprocess:run", "shutil:rmtree", "builtins:exec", f"{CANARY}:run", f"{CANARY}.py:run",
        f"{tmp_path / CANARY}.py:run", "tests.toys:lost_update", "tests.toys:DepositMachine.scenario",
        "tests.toys:DepositMachine", "harness:World", "races.volcano_gang_close:scenario", "__main__:x", "x", ":",
        "tests.toys.py:lost_update",
    ]


def _mutate(draw: Any, raw: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """A valid trace with a hostile scenario name, and a few other fields changed, dropped or made up."""
    raw = json.loads(json.dumps(raw))
    trace = list(raw["trace"])
    if draw(st.integers(0, 3)):
        raw["scenario"] = draw(st.sampled_from(names))
    for _ in range(draw(st.integers(0, 3))):
        field = draw(st.sampled_from([*SIGNED_FIELDS, "meta", "checksum", "nonsense"]))
        value = draw(
            st.one_of(
                st.sampled_from(names),
                st.none(),
                st.integers(-3, 10**6),
                st.booleans(),
                st.text(max_size=20),
                st.lists(st.integers(-2, 5), max_size=12),
                st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=5) | st.none(), max_size=3),
                st.just(trace[: draw(st.integers(0, 12))]),
            )
        )
        if draw(st.booleans()):
            raw.pop(field, None)
        else:
            raw[field] = value
    if draw(st.integers(0, 3)):
        raw["checksum"] = checksum(raw)  # a well-formed file whose contents are hostile, not damaged
    return raw


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], database=None)
@given(data=st.data())
def test_replay_of_any_bytes_exits_0_1_or_2_without_traceback_or_foreign_import(
    data: st.DataObject,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    valid_trace: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = _canaries(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    called: list[object] = []
    monkeypatch.setattr(os, "system", lambda *a: called.append(a) or 0)
    if data.draw(st.booleans(), label="raw bytes"):
        content: bytes = data.draw(st.binary(max_size=300) | st.text(max_size=300).map(str.encode))
    else:
        content = json.dumps(_mutate(data.draw, valid_trace, names)).encode()
    before = set(sys.modules)
    code, _out, err = run_main(capsys, "replay", str(_write(tmp_path, content)))
    assert code in (0, 1, 2), err
    assert "Traceback" not in err
    if code != 0:
        assert len(err.strip().splitlines()) == 1, err
    assert called == []
    assert not (tmp_path / "imported").exists()
    foreign = {m for m in set(sys.modules) - before if CANARY in m or m in ("subprocess", "shutil")}
    assert not foreign


# ------------------------------------------------------------------ issue 29 item 4, issue 26 item 7: which file a trace may run
def _hunt_file(tmp_path: Path, folder: str = "out") -> tuple[Path, dict[str, Any]]:
    from cli_support import LOST_UPDATE, json_lines, run_cli

    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "model.py").write_text(LOST_UPDATE)
    proc = run_cli("hunt", "model.py:lost_update", "--variant", "buggy", "--json", "--report-dir", folder, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    [rec] = json_lines(proc.stdout)
    return tmp_path / rec["trace"], rec


def test_copied_report_folder_replays_a_file_scenario(tmp_path: Path) -> None:
    """The hunt copies the scenario file next to its trace; the folder replays anywhere, the original gone."""
    from cli_support import run_cli

    trace, rec = _hunt_file(tmp_path / "project")
    raw = json.loads(trace.read_text())
    assert raw["scenario"] == "model-lost_update-buggy.py:lost_update"
    copy = trace.parent / "model-lost_update-buggy.py"
    assert copy.read_text() == (tmp_path / "project" / "model.py").read_text()
    moved = tmp_path / "artifact"
    (trace.parent).rename(moved)
    (tmp_path / "project" / "model.py").unlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = run_cli("replay", str(moved / trace.name), "--json", cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["digest"] == rec["digest"]
    # the copy is the file that was hunted: an edit is refused, not replayed as if it were the same model
    copy = moved / copy.name
    copy.write_text(copy.read_text() + "\n# edited\n")
    proc = run_cli("replay", str(moved / trace.name), cwd=elsewhere)
    assert proc.returncode == 2
    assert_one_clean_error(proc.stderr, "was hunted with another version of model-lost_update-buggy.py")


def test_trace_cannot_name_a_file_outside_its_folder_or_cwd(tmp_path: Path) -> None:
    """A forged trace naming a marked file elsewhere (absolute or ``../``) is refused before the file is read."""
    from cli_support import LOST_UPDATE, run_cli

    trace, _ = _hunt_file(tmp_path / "project", "out")
    ran = tmp_path / "ran"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.py").write_text(
        f"import pathlib\npathlib.Path({str(ran)!r}).write_text('ran')\n" + LOST_UPDATE
    )
    work = tmp_path / "work"
    work.mkdir()
    for ref in (f"{outside / 'evil.py'}:lost_update", "../../outside/evil.py:lost_update"):
        raw = json.loads(trace.read_text())
        raw["scenario"] = ref
        raw.pop("scenario_sha256", None)
        raw["checksum"] = checksum(raw)  # anyone can recompute it: the checksum is for damage, not trust
        forged = trace.parent / "forged.json"
        forged.write_text(json.dumps(raw))
        proc = run_cli("replay", str(forged), cwd=work)
        assert proc.returncode == 2, proc.stderr
        assert_one_clean_error(proc.stderr, "lies outside the trace's folder", "and the current folder")
        assert not ran.exists()
    # the same file under the current folder is allowed (a checkout replaying its own traces)
    proc = run_cli("replay", str(forged), cwd=outside)
    assert proc.returncode in (0, 1) and ran.exists(), proc.stderr


def test_trace_text_is_printed_without_control_characters(tmp_path: Path) -> None:
    """Issue 29 item 4: a forged label (OSC 52 writes the clipboard, CSI 2J clears the screen) is printed escaped."""
    from cli_support import run_cli

    from harness.sim import Trace

    trace, _ = _hunt_file(tmp_path)
    raw = json.loads(trace.read_text())
    evil = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b31m"
    raw["trace"][2]["label"] += evil
    raw["violation"]["message"] += evil
    raw["meta"]["race"] = evil
    raw["digest"] = Trace.from_json(raw["trace"]).digest()
    raw["checksum"] = checksum(raw)
    forged = trace.parent / "forged.json"
    forged.write_text(json.dumps(raw))
    proc = run_cli("replay", str(forged), cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr  # the forged label is not what the model does: a divergence
    text = proc.stdout + proc.stderr
    assert "\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\x9b31m" in text, text
    assert not any((ord(c) < 32 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in text)
    # a forged scenario reference is refused, and its name is escaped too
    raw["scenario"] = "evil\x1b[2J.py:f"
    raw.pop("scenario_origin", None)  # (else the replay runs the file where it was hunted, unchanged, not this name)
    raw["meta"].pop("hunted_file", None)
    raw["checksum"] = checksum(raw)
    forged.write_text(json.dumps(raw))
    proc = run_cli("replay", str(forged), cwd=tmp_path)
    assert proc.returncode == 2 and "evil\\x1b[2J.py" in proc.stderr and "\x1b" not in proc.stderr
