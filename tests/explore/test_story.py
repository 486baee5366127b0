"""Issue 25: counterexamples that explain themselves (notes in the trace, the story as a causal slice)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import harness as h
from harness.kube import APIServer, GenerationChangedPredicate, Informer, KubeObject, watch
from harness.sim import PlanChooser, RandomChooser, run_once
from tests import toys
from tests.explore.story_models import filtered_relist, late_expiry, quiet_delete

ROOT = Path(__file__).resolve().parents[2]


def _found(scenario: h.Scenario, **params: object) -> h.Counterexample:  # type: ignore[name-defined]
    result = h.explore(scenario, seed=0, budget=300, fixed=False, **params)
    assert result.counterexample is not None, result.outcome
    return result.counterexample


def test_relist_events_are_notes_in_the_trace() -> None:
    cx = _found(filtered_relist)
    told = cx.told()
    assert told.noted and told.digest() == cx.trace.digest()  # the same run, told
    texts = [n.text for n in told.notes]
    assert any(t.startswith("reLIST Workload at rv=") and "perf/w1" in t for t in texts), texts
    synthesised = [n for n in told.notes if n.kind == "relist"]
    assert [(n.field("event"), n.keys) for n in synthesised] == [("Create", ("Workload perf/w1",))]
    lost = [n for n in told.notes if n.kind == "watch" and n.field("lost")]
    assert lost and lost[0].field("lost") == ["ADDED perf/w1 rv=1"]
    assert any("backs off 0.8 s" in t for t in texts)
    # notes never enter the records: a trace file of the run keeps its digest
    assert all(r.kind != "note" for r in told)


def test_predicate_verdicts_are_notes() -> None:
    async def status_only(world: h.World) -> None:
        api = APIServer(world)
        inf = Informer(world, api, "Certificate")
        queue: list[str] = []

        class Q:
            def add(self, item: str) -> None:
                queue.append(item)

        watch(inf, Q(), None, GenerationChangedPredicate())
        inf.start()
        await inf.wait_for_cache_sync()
        await api.create(KubeObject("Certificate", "default", "c"))
        await api.patch("Certificate", "default", "c", {"status": {"ready": True}}, subresource="status")
        await world.sleep(1)

    out = run_once(status_only, RandomChooser(0), notes=True)
    verdicts = [(n.field("predicate"), n.field("event"), n.field("verdict")) for n in out.trace.notes
                if n.kind == "predicate"]
    assert ("GenerationChangedPredicate", "Create", "passed") in verdicts
    assert ("GenerationChangedPredicate", "Update", "dropped") in verdicts
    assert any("GenerationChangedPredicate: Update Certificate default/c" in n.text and n.text.endswith("dropped")
               for n in out.trace.notes)


def test_note_adds_no_scheduling_point() -> None:
    async def noted(world: h.World, *, log: bool) -> None:
        async def worker(name: str) -> None:
            for i in range(3):
                if log:
                    world.note(f"{name} iteration {i}", key=f"Thing default/{name}", i=i)
                await world.step(f"{name} step {i}")

        world.spawn("a", worker, "a")
        world.spawn("b", worker, "b")

    for seed in range(8):
        plain = run_once(noted, RandomChooser(seed), params={"log": False})
        logged = run_once(noted, RandomChooser(seed), params={"log": True})
        told = run_once(noted, RandomChooser(seed), params={"log": True}, notes=True)
        assert plain.choices == logged.choices == told.choices
        assert plain.trace.digest() == logged.trace.digest() == told.trace.digest()
        assert len(told.trace.notes) == 6 and not logged.trace.notes
        assert told.trace.notes[0].fields == (("i", 0),)


def test_watch_drop_step_is_named_by_the_drop() -> None:
    cx = _found(filtered_relist)
    story = cx.story()
    line = next(x for x in story.lines if x.startswith("#") and "watch drops" in x)
    assert "nothing delivered" in line and "lost (never delivered) ADDED perf/w1 rv=1" in line
    assert not any("deliver ADDED perf/w1" in x for x in story.lines), story


def test_time_passing_violation_is_placed_at_its_instant() -> None:
    cx = _found(late_expiry)
    story = cx.story()
    assert story.lines[-1].startswith("=> at t=35.000 (no step ran since #4 at t=0.800): oracle violated"), story
    assert "lease holder went quiet" in str(story)  # the model's own log line, with no step of its own
    assert "(no step ran since #4 at t=0.800)" in cx.program().splitlines()[-1]


def test_report_opens_with_the_story_and_marks_the_instant(tmp_path: Path) -> None:
    from harness.report import write_counterexample_html

    cx = _found(late_expiry)
    page = write_counterexample_html(cx, tmp_path / "late.html", title="late expiry").read_text()
    assert page.index('id="story"') < page.index('id="summary"') < page.index('id="timeline"')
    assert "lease holder went quiet" in page
    assert "Turned false at t=35.000 s, with no step running" in page
    assert "violation at t=35.000: time passed after this step" in page  # the badge, on the last step before it
    assert "Detected right after" not in page


def test_story_is_a_causal_slice_not_a_name_match() -> None:
    cx = _found(quiet_delete)
    assert "cs-a" not in cx.violation.message  # the oracle names no object
    story = cx.story()
    assert any("janitor: delete ConfigSet perf/cs-a" in x and "deleted" in x for x in story.lines), story
    assert not any("Audit" in x for x in story.lines), story  # what the oracle never read stays out
    assert any("janitor: delete ConfigSet perf/cs-a" in x for x in cx.program().splitlines())


def test_hold_is_shown_once() -> None:
    result = h.explore(toys.lost_update, strategy="hypothesis", budget=1000, seed=0, fixed=False)
    cx = result.counterexample
    assert cx is not None and cx.plan
    holds = [e for e in cx.plan if isinstance(e, h.Hold)]
    assert holds
    program = cx.program()
    # the first step a hold displaced says so; the steps after it do not repeat it
    assert program.count("instead of") <= len(holds), program
    story = cx.story()
    held = [x for x in story.lines if x.startswith("held: ")]
    assert len(held) == len(holds), story
    assert " from #" in held[0] and ("until" in held[0] or "as long as" in held[0])
    # the same run, replayed under its plan, still has the per-step choices (the trace is unchanged)
    again = run_once(toys.lost_update, PlanChooser(cx.plan), params=cx.params)
    assert again.trace.digest() == cx.trace.digest()


def test_replay_story_names_relist_filter_and_time(tmp_path: Path) -> None:
    cx = _found(filtered_relist)
    trace = cx.save(tmp_path / "filtered.json")
    done = subprocess.run(
        [sys.executable, "-m", "harness", "replay", str(trace), "--story"], cwd=ROOT, capture_output=True, text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    story = lines[1:-1]
    assert len(story) <= 15, done.stdout
    text = "\n".join(story)
    assert "reLIST Workload" in text and "relist synthesises Create perf/w1" in text
    assert "Create Workload perf/w1 rv=2 -> dropped" in text
    assert story[-1].startswith("=> at t=30.000"), done.stdout
    assert json.loads(trace.read_text())["notes"], "the saved trace carries its notes"
