"""``python -m harness``: see :mod:`harness.cli`."""

try:
    from .cli import main

    raise SystemExit(main())
except KeyboardInterrupt:  # before the CLI took over Ctrl-C (while Python was still importing it)
    import sys

    print("python -m harness: interrupted", file=sys.stderr)
    raise SystemExit(130) from None
