"""Print README.md's two commands, one per line: the main job (install and hunt), then the tests.

`.ci/run` holds both verbatim (it is read by a person and a checker alike), and
`tests/docs/test_readme_commands.py` checks the same two lines: what a newcomer copies is what CI proved.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def commands(text: str) -> list[str]:
    """The one-line fenced blocks that create a venv and install the project, in README order."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)\n```", text, flags=re.M | re.S)
    return [b.strip() for b in blocks if "\n" not in b.strip() and b.strip().startswith("python3 -m venv .venv")]


if __name__ == "__main__":
    found = commands(README.read_text(encoding="utf-8"))
    if len(found) != 2:
        sys.exit(f"README.md should hold two one-line commands that start with 'python3 -m venv .venv' "
                 f"(the main job, then the tests); found {len(found)}")
    print("\n".join(found))
