"""Sieve's three patterns as portfolio members (harness/explore/_patterns.py), aimed by what the runs did.

Each member reads the canonical run's notes (the writes with their UIDs, deletion marks and finalizers; the
work-queue hand-outs; where each fault point fell) and draws only the plans its pattern points at. These tests
run one member alone on the examples and check that what it draws is its pattern, and that it finds the bug
there without help.
"""

from __future__ import annotations

from typing import Any

import harness as h
from harness.explore import resolve_scenario
from harness.explore._patterns import Aim, Seen, View, pattern_choosers
from harness.explore._runner import Budget, _failed, _Runner
from harness.sim import Fault, Hold, PlanChooser, RunOutcome, run_once


def _member(target: str, member: str, seed: int = 0, **params: Any) -> tuple[list[tuple[PlanChooser, RunOutcome]], View]:
    """Every plan one member draws on ``target`` (until its candidates are spent), with its run."""
    runner = _Runner(resolve_scenario(target), params, h.Limits(), Budget(runs=None), None)
    aim = Aim()
    drawn = []
    for chooser in pattern_choosers(member, aim, seed):
        drawn.append((chooser, runner.run(chooser)))
    assert aim.view is not None
    return drawn, aim.view


def test_stale_state_member_targets_identity_changes() -> None:
    drawn, view = _member("examples/rabbitmq_time_travel.py:scenario", "stale state")
    rmq = [w for w in view.writes if w.ref == "RabbitmqCluster default/rmq"]
    recreated = next(w for w in rmq if w.uid != rmq[0].uid)  # the user's second create: another UID, same name
    analysis, *plans = drawn
    assert analysis[0].plan == () and isinstance(analysis[0], Seen) and analysis[0].wants_notes
    pairs = [c.plan for c, _out in plans if len(c.plan) == 2]
    assert pairs, [c.plan for c, _ in plans]
    for plan in pairs:
        crash = [e.at for e in plan if isinstance(e, Fault) and "operator crashes before" in e.at.label]
        stale = [e.at for e in plan if isinstance(e, Fault) and "lagging watch cache" in e.at.label]
        assert len(crash) == 1 and len(stale) == 1, plan
        # the LIST is served at a revision where an object of that name had another UID, a deletion mark or
        # other finalizers than it has later in the run
        name = stale[0].label.rpartition(" at the revision of ")[2]
        [then] = [w for w in view.writes if w.kind == stale[0].key and w.revision == name]
        later = [w for w in view.writes if w.ref == then.ref and w.pos > then.pos and w.event != "DELETED"]
        assert then.deleting or any(w.uid != then.uid or w.finalizers != then.finalizers for w in later), plan
    assert any(e.at.key == "RabbitmqCluster" for p in pairs for e in p if "lagging" in e.at.label)
    # the restarts it tries first come after the write that gave the name another UID
    first_crash = next(c.plan[0].at for c, _ in plans if len(c.plan) == 1)
    at = next(pos for point, kind, pos in view.faults if point == first_crash and kind == "crash")
    assert at > recreated.pos
    # and the member alone finds the time travel
    failing = [c.plan for c, out in plans if _failed(out)]
    assert failing and all(len(p) == 2 for p in failing), failing


def test_stale_state_member_also_restarts_before_the_write_that_makes_a_revision_stale() -> None:
    """cassandra-operator#407: the crash comes *before* the re-creation of the pod; the restarted controller's LIST
    shows the old pod terminating while the new one is live. The member reaches it only through its second tier
    (a crash point followed later in the run by a write that differs from a revision before it)."""
    drawn, view = _member("examples/cassandra_stale_pod_pvc.py:scenario", "stale state")
    ca1 = [w for w in view.writes if w.ref == "Pod default/ca-1"]
    recreated = next(w for w in ca1 if w.uid != ca1[0].uid and w.event == "ADDED")
    failing = [c.plan for c, out in drawn if _failed(out)]
    assert failing, [c.plan for c, _ in drawn]
    assert all(isinstance(e, Fault) for e in failing[0]), failing[0]
    [crash] = [e for e in failing[0] if "crashes before" in e.at.label]
    [stale] = [e for e in failing[0] if "lagging watch cache" in e.at.label]
    at = next(pos for point, kind, pos in view.faults if point == crash.at and kind == "crash")
    assert at < recreated.pos, (at, recreated.pos)  # before the write, not after it: the first tier never tries it
    assert "lagging watch cache at the revision of MODIFIED default/ca-1 (deleting)" in stale.at.label, stale


def test_stale_state_member_has_nothing_without_identity_changes() -> None:
    """No object changed identity, deletion mark or finalizers: the member draws nothing after its one analysis."""
    drawn, view = _member("examples/sieve_intermediate_state.py:scenario", "stale state")
    assert view.writes and [c.plan for c, _ in drawn] == [()]


TARGET = "examples/sieve_unobserved_state.py:scenario"


def test_unobserved_state_member_covers_create_delete() -> None:
    drawn, view = _member(TARGET, "unobserved state")
    _analysis, *plans = drawn
    # web-1 is created and deleted: the drop before its ADDED is drawn first (a create and a delete beat two updates)
    first = plans[0][0].plan
    assert len(first) == 1 and isinstance(first[0], Fault)
    assert "watch drops before ADDED team-a/web-1" in first[0].at.label, first
    # drop, then the relist held to the end of its window: the informer never delivers web-1 at all
    wide = [(c, out) for c, out in plans if len(c.plan) == 2 and c.plan[0] == first[0]]
    assert wide, [c.plan for c, _ in plans]
    chooser, _out = wide[0]
    assert any(isinstance(e, Hold) and e.what.label == "quota/informer/Pod list" for e in chooser.plan)
    told = run_once(resolve_scenario(TARGET), PlanChooser(chooser.plan), notes=True)
    handled = [n.text for n in told.trace.notes or () if n.kind == "handler" and "team-a/web-1" in n.text]
    assert handled == [], handled  # neither its create nor its delete reached a handler
    assert any("OnAdd Pod team-a/web-2" in n.text for n in told.trace.notes or ())  # the relist came, after both
    deleted = next(w.pos for w in view.writes if w.ref == "Pod team-a/web-1" and w.event == "DELETED")
    created = next(w.pos for w in view.writes if w.ref == "Pod team-a/web-1" and w.event == "ADDED")
    assert created < deleted


def test_intermediate_state_member_crashes_between_writes() -> None:
    drawn, view = _member("examples/sieve_intermediate_state.py:scenario", "intermediate state")
    _analysis, *plans = drawn
    worker = "backup/reconcile/worker-1"
    job = next(w for w in view.writes if w.ref.startswith("Job ") and w.actor == worker)
    status = next(w for w in view.writes if w.ref == "Backup default/nightly" and w.actor == worker)
    assert plans
    for chooser, _out in plans:
        [entry] = chooser.plan
        assert isinstance(entry, Fault) and entry.at.actor == worker, entry
        pos = next(p for point, kind, p in view.faults if point == entry.at)
        assert job.pos <= pos <= status.pos, (entry, job.pos, pos, status.pos)  # after the Job, before the status
    assert any(_failed(out) and "2 Jobs back up one database" in (out.violation.message if out.violation else "")
               for _c, out in plans)


def test_portfolio_names_the_pattern_member_that_found_it() -> None:
    r = h.explore(resolve_scenario("examples/rabbitmq_time_travel.py:scenario"), seed=0, shrink_found=False,
                  prove_minimal=False)
    assert r.found and r.found_by == "stale state", (r.found_by, r.outcome)


def test_stale_state_member_targets_another_desired_state() -> None:
    """zookeeper-operator#314, rabbitmq#653: the user scaled back up (or grew a volume); an older revision of the same
    object asked for less. The spec tier aims a restart after that write and a LIST at the older revision; the
    identity tiers see nothing there (same UID, no deletion mark, same finalizers)."""
    from harness.explore._patterns import Write, _desired, stale_desired, stale_state, stale_state_ahead
    from harness.sim import Ident

    def w(pos: int, event: str, spec: str, n: int) -> Write:
        rev = f"{event} default/zk" + (f" #{n}" if n > 1 else "")
        return Write(pos, "user", "ZookeeperCluster default/zk", event, "uid-1", False, (), rev, spec)

    crash_before = Ident("op/reconcile/worker-1", "op crashes before get", None, 1)
    crash_after = Ident("op/reconcile/worker-1", "op crashes before get", None, 2)
    view = View(writes=[w(1, "ADDED", "two", 1), w(5, "MODIFIED", "one", 1), w(9, "MODIFIED", "two", 2)],
                faults=[(crash_before, "crash", 7), (crash_after, "crash", 10)])
    assert stale_state(view) == [] and stale_state_ahead(view) == []
    after = {point: targets for _s, point, targets in stale_desired(view)}
    # before the scale-up the object asks for "one", and the revision that asked for "two" is the stale one; after
    # it, only the revision that asked for "one" (the first revision asked for "two" as the object does now)
    assert after == {crash_before: {("ZookeeperCluster", "ADDED default/zk"): 1},
                     crash_after: {("ZookeeperCluster", "MODIFIED default/zk"): 1}}
    # a crash before the scale-up, aimed ahead: the revision that asked for "one" differs from the scale-up's
    ahead = {point: targets for _s, point, targets in stale_state_ahead(view, _desired)}
    assert ahead == {crash_before: {("ZookeeperCluster", "MODIFIED default/zk"): 1}}


def test_stale_state_member_alone_finds_a_stale_spec() -> None:
    """rabbitmq#653: the RabbitmqCluster keeps its UID; only its spec went from 10Gi to 15Gi. The member's spec tier
    restarts the operator after it acted on the resize and serves its LIST at the revision before it."""
    drawn, view = _member("examples/rabbitmq_stale_resize.py:scenario", "stale state")
    failing = [c.plan for c, out in drawn if _failed(out)]
    assert failing, [c.plan for c, _ in drawn]
    [stale] = [e for e in failing[0] if isinstance(e, Fault) and "lagging watch cache" in e.at.label]
    assert stale.at.label.endswith("RabbitmqCluster lists from a lagging watch cache at the revision of ADDED "
                                   "default/rmq"), stale
    rmq = [w for w in view.writes if w.ref == "RabbitmqCluster default/rmq"]
    assert len({w.uid for w in rmq}) == 1 and len({w.spec for w in rmq}) == 2, rmq
