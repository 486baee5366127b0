"""The race-harness pytest plugin (entry point ``pytest11: race_harness``).

A race test asks for the ``race`` fixture and explores a scenario with the
session's seed, budget and strategy::

    from tests.toys import lost_update

    @pytest.mark.race(lost_update, fixed=True)        # optional: defaults for race.explore()
    def test_lost_update_fixed(race):
        race.explore()                                # fails with the minimal counterexample if one exists

    def test_lost_update_buggy(race):
        result = race.explore(lost_update, expect="violation", fixed=False)
        assert result.counterexample.deviations == 1

On a violation the test fails with the minimal step program, the seed, the
exact replay command and the path of the HTML report.

Options (one group ``race``; each has an ini twin ``race_seed``, ...)::

    --race-seed=N|random|last   --race-budget=RUNS|SECONDSs   --race-strategy=NAME
    --race-hunt=MINUTES         --race-report=DIR             --race-replay=FILE
    --race-faults=KINDS

xdist (the documented way, as pytest-randomly and pytest-cov do it): the
controller chooses the seed and passes it in ``workerinput``; every test's
finding travels back as a JSON-able report attribute (``report.race``), and only
the controller writes files (JSON trace, HTML report, ``index.html``), as soon
as each report arrives, so a crashed worker loses nothing the others found.
Workers also return their counts through ``workeroutput``.

Import cost: nothing here imports Trio, rich or Hypothesis at module level
(``harness/__init__.py`` loads its runtime lazily); hooks import what they need.
"""

from __future__ import annotations

from ._fixture import RaceFixture as RaceFixture
from ._fixture import race as race
from ._fixture import race_shard as race_shard
from ._fixture import signature as signature
from ._progress import _LiveProgress as _LiveProgress
from ._progress import _Progress as _Progress
from ._session import distinct as distinct
from ._session import iter_entries as iter_entries
from ._session import pytest_collection_modifyitems as pytest_collection_modifyitems
from ._session import pytest_configure as pytest_configure
from ._session import pytest_generate_tests as pytest_generate_tests
from ._session import pytest_report_header as pytest_report_header
from ._session import pytest_runtest_logreport as pytest_runtest_logreport
from ._session import pytest_runtest_makereport as pytest_runtest_makereport
from ._session import pytest_sessionfinish as pytest_sessionfinish
from ._session import pytest_sessionstart as pytest_sessionstart
from ._session import pytest_terminal_summary as pytest_terminal_summary
from ._session import pytest_unconfigure as pytest_unconfigure
from ._settings import _SETTINGS as _SETTINGS
from ._settings import CACHE_KEY as CACHE_KEY
from ._settings import DEFAULT_BUDGET as DEFAULT_BUDGET
from ._settings import DEFAULT_REPORT_DIR as DEFAULT_REPORT_DIR
from ._settings import DEFAULT_SHARDS as DEFAULT_SHARDS
from ._settings import DEFAULT_STRATEGY as DEFAULT_STRATEGY
from ._settings import FIXTURE as FIXTURE
from ._settings import INI_SHARDS as INI_SHARDS
from ._settings import MARKER as MARKER
from ._settings import OPT_BUDGET as OPT_BUDGET
from ._settings import OPT_FAULTS as OPT_FAULTS
from ._settings import OPT_HUNT as OPT_HUNT
from ._settings import OPT_REPLAY as OPT_REPLAY
from ._settings import OPT_REPORT as OPT_REPORT
from ._settings import OPT_SEED as OPT_SEED
from ._settings import OPT_STRATEGY as OPT_STRATEGY
from ._settings import OPT_YIELD_TIMEOUT as OPT_YIELD_TIMEOUT
from ._settings import RaceSettings as RaceSettings
from ._settings import derive_seed as derive_seed
from ._settings import pytest_addoption as pytest_addoption
from ._settings import settings_of as settings_of
