"""What an interrupted hunt of an operator process leaves behind: processes and temporary folders, counted.

``python -m bench.interrupted_hunts [--hunts 20] [--root CHECKOUT]`` runs
``python -m harness hunt`` of a scenario whose operator process forks a child
that ignores SIGTERM and a ``setsid()`` daemon (``tests/operator_processes.py``),
and interrupts each hunt while the scheduler waits for the operator, in turn:
Ctrl-C once, Ctrl-C twice (1 s apart, while the harness waits for the operator,
which ignores SIGTERM, to stop), SIGTERM, and Ctrl-C then SIGTERM. After each it
counts the processes left that carry the bench's own mark in their environment
(``/proc/<pid>/environ``: the harness's marker is not trusted), the entries left
in the hunt's ``TMPDIR`` and the seconds from the first signal to the exit (a
hunt still running after 30 s is SIGKILLed, as a user would, then counted), then
kills and removes what was left so the next hunt starts clean. ``--root`` runs
another checkout's harness (``python -m harness`` from there): the same count
before a change. Linux only (``/proc``); about 4 s a hunt.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.operator_processes import OPERATOR, SCENARIO, marked  # noqa: E402  # the path above first

PATTERNS: list[list[str]] = [["SIGINT"], ["SIGINT", "SIGINT"], ["SIGTERM"], ["SIGINT", "SIGTERM"]]


def one(root: Path, work: Path, signals: list[str]) -> tuple[int, int, float, int | None]:
    """(processes left, temporary entries left, seconds from the first signal to the exit, exit code); a hunt
    still running 30 s after the signal is SIGKILLed (exit -9) before the count."""
    mark = uuid.uuid4().hex
    ready, temp = work / f"ready-{mark}", work / f"tmp-{mark}"
    ready.mkdir()
    temp.mkdir()
    env = {**os.environ, "LEAK_MARK": mark, "READY_DIR": str(ready), "TMPDIR": str(temp)}
    stubborn = ["--param", "stubborn=true"] if len(signals) > 1 else []
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "hunt", f"{work / 'leaky.py'}:leaky", "--strategy", "random", "--budget",
         "3", "--report-dir", str(work / "r"), *stubborn],
        cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        end = time.monotonic() + 60
        while not (any(ready.glob("operator-*")) and any(ready.glob("daemon-*"))):
            if time.monotonic() > end or proc.poll() is not None:
                raise RuntimeError(f"the operator never talked (hunt exit {proc.poll()})")
            time.sleep(0.02)
        sent = time.monotonic()
        for i, name in enumerate(signals):
            if i:
                time.sleep(1.0)
            if proc.poll() is None:
                proc.send_signal(getattr(signal, name))
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:  # it did not stop: killed, and what it leaves then is counted
            proc.kill()
            proc.wait()
        took = time.monotonic() - sent
        time.sleep(0.5)  # a SIGKILLed process's last moments: what is still there now stays
        left = marked(mark)
        entries = len(list(temp.iterdir()))
        return len(left), entries, took, proc.returncode
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in marked(mark):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        shutil.rmtree(temp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.interrupted_hunts", description=__doc__.split("\n")[0])
    parser.add_argument("--hunts", type=int, default=20)
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose harness runs (default: this one)")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-interrupted-"))
    try:
        (work / "op.py").write_text(OPERATOR)
        (work / "leaky.py").write_text(SCENARIO.format(operator=str(work / "op.py")))
        procs = folders = slow = 0
        worst = 0.0
        for i in range(args.hunts):
            signals = PATTERNS[i % len(PATTERNS)]
            n, entries, took, code = one(args.root.resolve(), work, signals)
            procs, folders, worst = procs + n, folders + entries, max(worst, took)
            slow += took >= 5.0
            print(f"hunt {i + 1:2}: {'+'.join(signals):15} exit {code}, {took:4.1f} s, {n} processes and "
                  f"{entries} temporary entries left", flush=True)
        print(f"{args.hunts} interrupted hunts: {procs} processes left, {folders} temporary entries left; "
              f"slowest exit {worst:.1f} s after the first signal, {slow} at 5 s or more")
        return 0 if procs == folders == slow == 0 else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
