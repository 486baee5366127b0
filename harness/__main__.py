"""``python -m harness``: see :mod:`harness.cli`."""

import signal

from ._errors import HarnessError

try:
    import sys

    from . import _interrupt
    from ._terminal import QuietPipe

    sys.stdout = quiet = QuietPipe(sys.stdout)  # `hunt | head`: quiet, stops at once, exit 141
    quiet.watch_reader(_interrupt.request_stop_for_closed_pipe)
    from .cli import main

    _interrupt.keep_until_exit()  # this process ends with the command: no window for a late Ctrl-C traceback
    _interrupt.end_of_startup()  # the imports are done: main() handles Ctrl-C from here
    code = main()
    # Python's shutdown puts SIGINT back to the default action, so a Ctrl-C then would kill the process
    # by signal; everything is written by now, so ignore it (an ignored signal stays ignored at shutdown).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise SystemExit(code)
except HarnessError as exc:  # raised while the CLI was imported: a dependency at an untested version (_tested.py)
    import sys

    print(f"python -m harness: error: {exc}", file=sys.stderr)
    raise SystemExit(2) from None
except KeyboardInterrupt:  # before the CLI took over Ctrl-C (while Python was still importing it)
    import sys

    print("python -m harness: interrupted", file=sys.stderr)
    raise SystemExit(130) from None
