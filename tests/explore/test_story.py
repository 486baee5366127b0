"""Issue 25: counterexamples that explain themselves (notes in the trace, the story as a causal slice)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import harness as h
from harness.kube import APIServer, GenerationChangedPredicate, Informer, KubeObject, watch
from harness.sim import Access, PlanChooser, RandomChooser, Trace, run_once
from tests import toys
from tests.explore.story_models import expectations_ttl, filtered_relist, late_expiry, quiet_delete

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
    assert lost and lost[0].field("lost") == ["ADDED perf/w1 rv=6"]
    assert any("backs off 0.8 s" in t for t in texts)
    # notes never enter the records: a trace file of the run keeps its digest
    assert all(r.kind != "note" for r in told)


def test_predicate_verdicts_are_notes() -> None:
    async def status_only(world: h.World) -> None:
        api = APIServer(world, namespaces=("ns",))
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
    assert "nothing delivered" in line and "lost (never delivered) ADDED perf/w1 rv=6" in line
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
    assert "Create Workload perf/w1 rv=7 -> dropped" in text
    assert story[-1].startswith("=> at t=30.000"), done.stdout
    assert json.loads(trace.read_text())["notes"], "the saved trace carries its notes"


# ------------------------------------------------------------ issue 39: stories from data flow
def _accesses(trace: Trace) -> list[Access]:
    return [a for step in sorted(trace.footprints) for a in trace.footprints[step]]


async def _lister_reads(world: h.World) -> None:
    api = APIServer(world, namespaces=("ns",))
    pods = Informer(world, api, "Pod", name="ctrl/informer/Pod")
    pods.start()
    await pods.wait_for_cache_sync()
    await api.create(KubeObject("Pod", "ns", "a"))
    await world.sleep(1)  # the ADDED is delivered: the cache holds ns/a
    await api.create(KubeObject("Pod", "ns", "b"))  # committed; its ADDED is not delivered before the reads below
    pods.lister.get("ns", "a")
    assert pods.lister.try_get("ns", "b") is None
    pods.lister.list("ns")


def test_lister_reads_are_footprints() -> None:
    told = run_once(_lister_reads, PlanChooser(), notes=True).trace
    acc = _accesses(told)
    cache = "ctrl/informer/Pod cache: "
    # the delivery wrote the cache entry at the event's revision, and read the commit of that revision
    assert any(a.resource == cache + "ns/a" and a.write and a.version == 6 for a in acc)
    assert Access("Pod ns/a", False, "ADDED ns/a rv=6", 6, True) in acc
    # a get: the entry and its resourceVersion; a miss: absent, and (told) the commit the cache has not shown yet
    assert any(a.resource == cache + "ns/a" and not a.write and a.said == "lister Pod ns/a: rv=6" for a in acc)
    assert any(a.resource == cache + "ns/b" and not a.write and a.said.startswith("lister Pod ns/b: absent")
               and "the apiserver has rv=7" in a.said for a in acc)
    assert any(a.resource == "Pod ns/b" and a.version == 7 and "not yet in the cache" in a.said for a in acc)
    # a list: every entry, and the whole cache with what it showed and what it missed
    (listed,) = [a for a in acc if a.resource == cache + "*" and not a.write]
    assert listed.said == "lister: 1 Pod of ns (a); b absent (on the apiserver, not yet cached)"
    # one record for both readers: the reducing referee's chooser gets the same resources (no revision reads)
    chooser = PlanChooser(footprints=True)
    run_once(_lister_reads, chooser)
    seen = {r for fp in chooser.footprints for r, _w in fp}
    assert {cache + "ns/a", cache + "ns/b", cache + "*"} <= seen
    assert all((a.resource, a.write) in {x for fp in chooser.footprints for x in fp}
               for a in acc if a.version is None and a.resource.startswith(cache))


def test_expectation_checks_are_footprints() -> None:
    from harness.kube import ControllerExpectations, ScaleExpectations, UpdateExpectations

    async def checks(world: h.World) -> None:
        exp = ControllerExpectations(world, timeout=10)
        await world.step("expect")
        exp.expect_creations("ns/rs", 2)
        await world.step("check")
        exp.satisfied_expectations("ns/rs")
        await world.sleep(11)
        exp.satisfied_expectations("ns/rs")
        exp.creation_observed("ns/rs")
        exp.creation_observed("ns/rs")
        exp.satisfied_expectations("ns/rs")
        scale = ScaleExpectations(world)
        scale.expect_scale("ns/cs", "create", "cs-1")
        scale.satisfied_expectations("ns/cs")
        updates = UpdateExpectations(world)
        updates.expect_updated("ns/ss", "rev-2", KubeObject("Pod", "ns", "web-0", uid="u0"))
        updates.satisfied_expectations("ns/ss", "rev-2")

    told = run_once(checks, PlanChooser(), notes=True).trace
    said = {(a.resource, a.write, a.said) for a in _accesses(told)}
    res = "ControllerExpectations: ns/rs"
    assert (res, True, "ControllerExpectations ns/rs: expects 2 creation(s) and 0 deletion(s), stamped t=0.000") in said
    assert (res, False, "ControllerExpectations ns/rs: unsatisfied: (add, del) = (2, 0) set 0 s ago") in said
    assert (res, False, "ControllerExpectations ns/rs: expired: (add, del) = (2, 0) set 11 s ago, past the 10 s TTL") \
        in said
    assert (res, False, "ControllerExpectations ns/rs: satisfied: (add, del) = (0, 0)") in said
    assert ("ScaleExpectations: ns/cs", False, "ScaleExpectations ns/cs: unsatisfied for 0 s, pending create cs-1") \
        in said
    assert ("UpdateExpectations: ns/ss", False, "UpdateExpectations ns/ss: update expectations for revision rev-2 "
            "unsatisfied for 0 s: waits for ns/web-0") in said
    # the check reads from the write that set it: a story follows one to the other
    chooser = PlanChooser(footprints=True)
    run_once(checks, chooser)
    assert any((res, True) in fp for fp in chooser.footprints) and any((res, False) in fp for fp in chooser.footprints)


def test_story_shows_the_decisive_read() -> None:
    """kubernetes#129795 modelled from the docs alone: the sync that trusted an expired expectation and the cache."""
    cx = _found(expectations_ttl)
    story = cx.story()
    decisive = [x for x in story.lines if "expired" in x]
    assert len(decisive) == 1, story
    line = decisive[0]
    assert "past the 1 s TTL" in line and "lister: 0 Pods of perf" in line, story
    created = cx.violation.message.split("'")[1]  # the first pod, on the apiserver but not in the cache
    assert f"{created} absent (on the apiserver, not yet cached)" in line, story
    # and what it wrote: the second pod, on the line right after the decision
    at = story.lines.index(line)
    assert "create Pod perf/" in story.lines[at + 1] and "created rv=" in story.lines[at + 1], story


def test_story_omits_steps_that_fed_nothing() -> None:
    cx = _found(quiet_delete)
    story = cx.story()
    told = cx.told()
    audits = {r.step for r in told if "Audit" in r.label}
    assert audits and not audits & story.causal, story  # the auditor's creates fed nothing the oracle read
    ttl = _found(expectations_ttl).story()
    assert not any("informer/Pod" in x and "deliver" in x for x in ttl.lines), ttl  # never delivered before it broke
    for s in (story, ttl):
        assert 2 * len(s.causal) <= told.steps or s is ttl


def test_story_orders_by_causality() -> None:
    for scenario in (expectations_ttl, filtered_relist):
        story = _found(scenario).story()
        body = [x for x in story.lines if x.startswith("#")]
        order = [int(x[1:].split()[0]) for x in body]
        for i, line in enumerate(body):
            for ref in (int(m) for m in re.findall(r"\(#(\d+)\)", line)):
                if ref in order:
                    assert order.index(ref) < i, f"#{order[i]} read from #{ref}, told after it\n{story}"
    # a decision and the write it made are told together (nothing between them at that instant)
    story = _found(expectations_ttl).story()
    body = [x for x in story.lines if x.startswith("#")]
    decision = next(i for i, x in enumerate(body) if "expired" in x)
    assert "create Pod" in body[decision + 1], story


def test_story_header_counts_are_honest() -> None:
    for scenario in (expectations_ttl, filtered_relist, quiet_delete, late_expiry):
        cx = _found(scenario)
        story = cx.story()
        head = story.lines[0]
        m = re.match(r"story: (\d+) deviation\(s\); the slice keeps (\d+) of (\d+) step\(s\): (.*)$", head)
        assert m is not None, head
        assert int(m.group(1)) == cx.deviations
        assert int(m.group(2)) == len(story.causal) and int(m.group(3)) == cx.told().steps
        counts = {what: int(n) for n, what in re.findall(r"(\d+) ([a-z ()]+?)(?:,|$| \()", m.group(4))}
        shown = [x for x in story.lines if x.startswith("#")]
        assert counts["shown"] == len(shown) == len(story.steps), head
        assert sum(counts.values()) == len(story.causal), head  # every kept step is shown or said why not


def test_violation_text_never_cut() -> None:
    long = "the pods " + ", ".join(f"default/web-{i} (uid-{i:04d}) still waits" for i in range(40))

    @h.scenario
    async def wordy(world: h.World, *, fixed: bool = False) -> None:
        api = APIServer(world, namespaces=("ns",))
        await api.create(KubeObject("ConfigMap", "default", "c"))
        world.at_end(lambda: fixed or long, "every pod settles")

    result = h.explore(wordy, seed=0, budget=5, fixed=False)
    cx = result.counterexample
    assert cx is not None and len(cx.violation.message) > 1_000
    story = cx.story()
    at = next(i for i, x in enumerate(story.lines) if x.startswith("=> "))
    tail = story.lines[at:]
    assert len(tail) > 1 and all(x.startswith("   ") for x in tail[1:])  # it wraps onto lines of its own
    joined = tail[0] + "".join(" " + x[3:] for x in tail[1:])
    assert cx.violation.message in joined and "..." not in joined
    assert story.verdict == joined.replace("  ", " ") or cx.violation.message in story.verdict


def test_page_summary_and_story_agree(tmp_path: Path) -> None:
    from harness.report import write_counterexample_html

    cx = _found(expectations_ttl)
    story = cx.story()
    page = write_counterexample_html(cx, tmp_path / "ttl.html", title="expectations TTL").read_text()
    summary = page[page.index('id="summary"'): page.index('id="reproduce"')]
    import html as _html

    text = _html.unescape(re.sub(r"<[^>]+>", "", summary))
    assert story.entries and all(e in text for e in story.entries)  # how the run got there: the story's plan lines
    assert "instead of" not in text  # not a second, positional account of the same run
    state = _html.unescape(page[page.index('id="state"'): page.index('id="timeline"')])
    shown = set(re.findall(r"<th>((?:Pod|ReplicaSet) [^<]+)</th>", state)) | set(
        re.findall(r"<b>((?:Pod|ReplicaSet) [^<]+)</b>", state))
    assert shown and shown <= set(story.objects), (shown, story.objects)  # the state the slice read and wrote
    for line in story.lines[1:]:
        said = re.sub(r"^#\d+\s+", "", line)
        assert _html.escape(said, quote=False)[:80] in page or line.startswith("   "), said


@settings(max_examples=300, deadline=None, database=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 3), st.one_of(st.none(), st.integers(0, 4))),
                max_size=40),
       st.integers(0, 32), st.integers(0, 3), st.one_of(st.none(), st.integers(0, 4)))
def test_reads_from_is_the_last_write_of_the_version_read(
        writes: list[tuple[int, int, int | None]], step: int, index: int, version: int | None) -> None:
    """The story's reads-from, a binary search since a runaway's 200,000 steps made the walk take minutes, is the
    walk's answer: the last write of the version read before the read, else the last write before it; never the
    reading step's own."""
    from harness.explore._slice import _read_from, _writers

    fps: dict[int, tuple[Access, ...]] = {}
    for s, _i, v in sorted(writes, key=lambda w: (w[0], w[1])):
        fps[s] = (*fps.get(s, ()), Access("x", True, version=v))
    before = [(s, i, a.version) for s in sorted(fps) for i, a in enumerate(fps[s]) if (s, i) < (step, index)]
    same = [w for w in before if version is not None and w[2] == version]
    best = same[-1] if same else before[-1] if before else None
    expected = None if best is None or best[0] == step else best[0]
    assert _read_from(_writers(fps), Access("x", version=version), step, index) == expected
