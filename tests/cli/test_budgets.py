"""What each budget bounds, said where a newcomer reads it: on the verdict's line and in ``hunt --help``.

``runs`` counts the search, the shrink and the minimality proof together, and ``--budget`` bounds only the first:
a hunt with ``--budget 300`` once ran 2,477 runs, 2,360 of them the proof. The line now says "found at run N, shrink
S runs, proof P runs (proof budget B runs an entry)", and ``--proof-budget`` bounds the proof.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import LOST_UPDATE, json_lines, run_main


def test_hunt_line_says_what_each_budget_bounded(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    model = tmp_path / "lost.py"
    model.write_text(LOST_UPDATE)
    code, out, _err = run_main(capsys, "hunt", f"{model}:lost_update", "--variant", "buggy", "--budget", "300",
                               "--proof-budget", "40", "--strategy", "random", "--report-dir", str(tmp_path / "r"),
                               "--json")
    assert code == 0, out
    [row] = [r for r in json_lines(out) if r.get("variant") == "buggy"]
    m = re.search(r"found at run (?P<at>[\d,]+), shrink (?P<shrink>[\d,]+) runs?, proof (?P<proof>[\d,]+) runs? "
                  r"\(proof budget 40 runs an entry\)", row["outcome"])
    assert m is not None, row["outcome"]
    at, shrink, proof = (int(m[k].replace(",", "")) for k in ("at", "shrink", "proof"))
    assert (at, shrink, proof) == (row["found_at_run"], row["shrink_runs"], row["proof_runs"]), row
    assert at <= 300 and proof <= 40 and at + shrink + proof == row["runs"], row
    assert "explored " + f"{row['runs']:,} run" in row["outcome"]
    assert row["why"] is not None and row["why"].startswith("Why it failed: "), row  # the page's sentence, in --json


def test_help_says_what_each_budget_bounds(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run_main(capsys, "hunt", "--help")
    text = " ".join(out.split())
    assert code == 0
    assert "the search's budget until its first failure" in text and "shrunk (at most 2,000 runs)" in text, text
    assert "--proof-budget RUNS" in text and "runs the minimality proof may take for each entry" in text, text


def test_proof_budget_below_one_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run_main(capsys, "hunt", "volcano_deleted_jobs", "--proof-budget", "0")
    assert code == 2 and "--proof-budget 0" in err and len(err.strip().splitlines()) == 1, err
