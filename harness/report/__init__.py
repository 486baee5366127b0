"""Race reports: the self-contained HTML page of a counterexample, the session index, the terminal table.

Layering: ``harness.report`` builds on ``harness.explore`` and ``harness.sim``;
it reads ``harness.kube`` objects only by duck typing (see ``_snapshot``).
``rich`` is imported inside :func:`render_summary` and Jinja2 on the first
render, never at import time. The pages are rendered from the Jinja2 templates
and the one stylesheet in ``templates/`` (shipped in the package).
"""

from ._files import atomic_write_text as atomic_write_text
from ._files import ensure_report_dir as ensure_report_dir
from ._files import free_stem as free_stem
from ._files import is_ours as is_ours
from ._files import record_written as record_written
from ._files import write_owned as write_owned
from ._html import MAX_STEPS as MAX_STEPS
from ._html import render_counterexample_html as render_counterexample_html
from ._html import slug as slug
from ._html import write_counterexample_html as write_counterexample_html
from ._index import ReportEntry as ReportEntry
from ._index import interrupted_words as interrupted_words
from ._index import render_index as render_index
from ._index import render_summary as render_summary
from ._index import verdict_words as verdict_words
from ._index import write_index as write_index
from ._snapshot import StateLog as StateLog
from ._snapshot import capture_states as capture_states

__all__ = [
    "MAX_STEPS", "ReportEntry", "StateLog", "atomic_write_text", "capture_states", "ensure_report_dir",
    "free_stem", "is_ours", "record_written", "write_owned",
    "render_counterexample_html", "render_index", "render_summary", "slug", "verdict_words",
    "write_counterexample_html", "write_index", "interrupted_words",
]
