"""Issue 47: a real operator's own ``logging`` lines are notes of the step that logged them, never output."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import harness as h
from harness.kube import AlreadyExists, APIServer, KubeObject
from harness.sim import RandomChooser, run_once

NAMESPACE = "default"
LOGGER = "app-operator"


@h.scenario
async def app_secrets(world: h.World, *, fixed: bool = False, crash: bool = False) -> None:
    """Two reconciles of App db each count its Secrets, log the count and create one when they see none.

    The operator logs as a lightkube operator does (``logging.getLogger``): the
    line before the decisive read's consequence ("App db has 0 of 1 secrets")
    is what the story must show. ``fixed`` creates under one name, so the
    second create finds it there (and logs so); ``crash`` makes the reconcile
    raise after it logs.
    """
    world.capture_logging(LOGGER)
    api = APIServer(world)
    log = logging.getLogger(LOGGER)

    async def reconcile(name: str) -> None:
        secrets = await api.list("Secret", NAMESPACE)
        log.info("App %s has %d of %d secrets", "db", len(secrets), 1, extra={"k8s_key": "App default/db"})
        if crash:
            raise RuntimeError("reconcile failed")
        if not secrets:
            log.warning("creating the credentials of App %s", "db")
            try:
                await api.create(KubeObject("Secret", NAMESPACE, "db-credentials" if fixed else name))
            except AlreadyExists:
                log.info("the credentials of App %s exist already", "db")

    world.spawn("app-operator/a", reconcile, "db-a")
    world.spawn("app-operator/b", reconcile, "db-b")

    def one_secret() -> str | None:
        n = len(api.peek_all("Secret"))
        return f"App db has {n} Secrets" if n > 1 else None

    world.invariant(one_secret, "App db has at most one Secret")


def _logger_state() -> tuple[list[logging.Handler], bool, int]:
    log = logging.getLogger(LOGGER)
    return list(log.handlers), log.propagate, log.level


def test_operator_logging_becomes_notes(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    before = _logger_state()
    told = run_once(app_secrets, RandomChooser(0), notes=True)
    assert _logger_state() == before
    logged = [n for n in told.trace.notes if n.text.startswith(f"{LOGGER}: ")]
    assert logged, told.trace.notes
    first = logged[0]
    assert first.text == "app-operator: INFO: App db has 0 of 1 secrets"
    assert first.kind == "log" and first.keys == ("App default/db",) and first.field("level") == "INFO"
    # on the step that logged it: the actor's step that ran the LIST's response
    step = next(r for r in told.trace if r.step == first.step)
    assert step.actor == first.actor and first.actor.startswith("app-operator/")
    # a search's run notes nothing, and takes the same path
    quiet = run_once(app_secrets, RandomChooser(0), notes=False)
    assert not quiet.trace.notes
    assert quiet.trace.digest() == told.trace.digest()
    assert _logger_state() == before
    # nothing reached the terminal or the root logger's handlers
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    assert not [r for r in caplog.records if r.name == LOGGER]


def test_a_raising_run_puts_the_logger_back(capsys: pytest.CaptureFixture[str]) -> None:
    log = logging.getLogger(LOGGER)
    mine = logging.StreamHandler()
    log.addHandler(mine)
    log.setLevel(logging.ERROR)
    try:
        before = _logger_state()
        out = run_once(app_secrets, RandomChooser(0), params={"crash": True}, notes=True)
        assert out.violation is not None and "reconcile failed" in out.violation.message
        assert any(n.text == "app-operator: INFO: App db has 0 of 1 secrets" for n in out.trace.notes)
        assert _logger_state() == before
        assert capsys.readouterr().err == ""  # the operator's own handler printed nothing while captured
    finally:
        log.removeHandler(mine)
        log.setLevel(logging.NOTSET)
    assert _logger_state() == ([], True, logging.NOTSET)


def test_root_capture_swallows_every_propagating_logger(capsys: pytest.CaptureFixture[str]) -> None:
    async def chatty(world: h.World) -> None:
        world.capture_logging()
        logging.getLogger("some.library").warning("retrying %s", "GET /apis", extra={"k8s_keys": ["Pod a/b"]})
        await world.sleep(1)

    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    out = run_once(chatty, RandomChooser(0), notes=True)
    assert (list(root.handlers), root.level) == before
    assert [(n.text, n.keys) for n in out.trace.notes if n.kind == "log"] == [
        ("some.library: WARNING: retrying GET /apis", ("Pod a/b",))]
    assert capsys.readouterr().err == ""


def test_story_shows_the_operator_log_line(tmp_path: Path) -> None:
    from harness.report import write_counterexample_html

    result = h.explore(app_secrets, seed=0, budget=300, fixed=False)
    cx = result.counterexample
    assert cx is not None, result.outcome
    story = str(cx.story())
    assert "app-operator: INFO: App db has 0 of 1 secrets" in story, story
    page = write_counterexample_html(cx, tmp_path / "app.html", title="app secrets").read_text()
    assert "app-operator: INFO: App db has 0 of 1 secrets" in page
    assert h.explore(app_secrets, seed=0, budget=300, fixed=True).counterexample is None
