"""The scenario of ``hunt-test``: a test command run against a served apiserver, its exit status the oracle.

A module of its own so that a trace can name it (``harness.cli._test_command:test_command``) and ``replay`` runs
it again with the same parameters, while ``python -m harness --help`` need not import the search to list it.
"""

from __future__ import annotations

from typing import Any

from harness.explore import scenario  # (absolute: the mark is read from this source)

#: what the test runs for, in real seconds, before it is stopped as runaway (a suite's own timeouts come first)
DEFAULT_TIMEOUT = 900.0


@scenario
async def test_command(world: Any, *, argv: list[str], env: dict[str, str] | None = None, cwd: str = ".",
                       name: str = "test", quiet: float = 0.15, startup: float = 180.0,
                       timeout: float = DEFAULT_TIMEOUT, cluster: bool = True) -> None:
    """The test command ``argv`` run in ``cwd`` against a served apiserver (with the namespace controller and
    the garbage collector, as ``serve`` has, unless ``cluster`` is false); the run fails when the command does."""
    from ..kube import APIServer, start_cluster
    from ..operators import TestProcess

    api = APIServer(world)
    if cluster:
        await start_cluster(api)
    test = TestProcess(api, argv, name=name, env=env, cwd=cwd, quiet=quiet, startup=startup, timeout=timeout)
    await test.start().finished()
