"""Text from a trace file, or from any model, made safe to print on a terminal.

A trace file is untrusted input, and its labels, messages and parameters are
printed by ``replay`` and ``hunt``. Raw, ``ESC]52;...`` would write the user's
clipboard and ``ESC[2J`` clear the screen. Every C0 and C1 control character
(and DEL) except newline and tab is shown as a Python escape (``\\x1b``);
:func:`markup_safe` also escapes rich markup (``[bold]``) for text that goes
through a rich console with markup on.
"""

from __future__ import annotations

import re

_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: object) -> str:
    """``text`` with every control character but newline and tab escaped, e.g. ``\\x1b[2J``."""
    return _CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def markup_safe(text: object) -> str:
    """:func:`printable`, then rich's own ``escape``: for a rich console with markup on."""
    from rich.markup import escape

    return escape(printable(text))
