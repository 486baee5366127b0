"""``python -m bench [--quick] [--json PATH]``: see :mod:`bench.run`."""

from bench.run import main

raise SystemExit(main())
