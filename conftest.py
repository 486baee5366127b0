"""Hypothesis profiles for race-harness, with every setting pinned.

Hypothesis silently switches to its own ``ci`` profile when ``CI`` is set, which
changes ``derandomize``, ``database`` and the deadline under our feet. We load
our own profile explicitly instead, so a run on a laptop and a run in CI behave
the same: ``race-ci`` (default; deterministic, no database) or ``race-hunt``
(``HYPOTHESIS_PROFILE=race-hunt``: more examples, still reproducible by seed).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, Verbosity, settings

_COMMON = dict(
    deadline=None,
    database=None,
    print_blob=False,
    report_multiple_bugs=False,
    verbosity=Verbosity.normal,
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink),  # no Phase.explain
    suppress_health_check=(HealthCheck.too_slow, HealthCheck.data_too_large),
)

settings.register_profile("race-ci", derandomize=True, max_examples=100, **_COMMON)  # type: ignore[arg-type]
settings.register_profile("race-hunt", derandomize=False, max_examples=5000, **_COMMON)  # type: ignore[arg-type]
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "race-ci"))


# A subprocess's timeout in a test is a watchdog against a hang, set generously (minutes where the command takes
# seconds): crossing it says the machine is too slow or too loaded, never that the harness is wrong. Said as such.
import subprocess  # noqa: E402

import pytest  # noqa: E402


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> object:
    try:
        return (yield)
    except subprocess.TimeoutExpired as exc:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "unknown"
        cmd = exc.cmd if isinstance(exc.cmd, str) else " ".join(map(str, exc.cmd))
        pytest.fail(f"too slow on this machine: {cmd[:200]} did not finish within its watchdog of {exc.timeout:g} s "
                    f"(load average {load}); a hang or an overloaded machine, not a verdict of this test",
                    pytrace=False)
