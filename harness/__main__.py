"""``python -m harness``: see :mod:`harness.cli`."""

from .cli import main

raise SystemExit(main())
