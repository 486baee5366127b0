"""Small text transforms the pages share: upstream references as links, step labels without repetition.

Everything here that returns :class:`markupsafe.Markup` escapes every piece of
model text itself first; the templates autoescape everything else.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from markupsafe import Markup, escape

GITHUB = "https://github.com"

# owner/repo#123, a bare repo#123 or #123 (resolved against the page's own upstream repository),
# and a short commit hash after a full reference ("fix PR #3375, 2832dfe1")
_REF = re.compile(
    r"(?P<full>\b(?P<owner>[A-Za-z0-9][\w.-]*)/(?P<repo>[A-Za-z0-9][\w.-]*)#(?P<num>\d+))"
    r"|(?P<short>\b(?P<srepo>[A-Za-z0-9][\w.-]*)#(?P<snum>\d+))"
    r"|(?P<bare>(?<![\w/#])#(?P<bnum>\d+)\b)"
    r"|(?P<commit>\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b)"
)


def upstream_repo(text: str) -> tuple[str, str] | None:
    """The first ``owner/repo#N`` reference's repository in ``text`` (the race's upstream project)."""
    m = re.search(r"\b([A-Za-z0-9][\w.-]*)/([A-Za-z0-9][\w.-]*)#\d+", text or "")
    return (m.group(1), m.group(2)) if m else None


def linkify(text: object, repo: tuple[str, str] | None = None, *, commits: bool = False) -> Markup:
    """``text`` escaped, with GitHub references turned into links.

    ``owner/repo#N`` always links (GitHub redirects ``/issues/N`` to a pull
    request when N is one); ``repo#N`` and ``#N`` only when ``repo`` (the
    page's upstream repository) says which project they mean, and commit hashes
    only with ``commits`` (a violation message's hex ids are not commits).
    """
    s = str(text)
    out: list[str] = []
    pos = 0
    for m in _REF.finditer(s):
        href = None
        if m.group("full"):
            href = f"{GITHUB}/{m.group('owner')}/{m.group('repo')}/issues/{m.group('num')}"
        elif m.group("short") and repo is not None and m.group("srepo").lower() in (repo[1].lower(), repo[0].lower()):
            href = f"{GITHUB}/{repo[0]}/{repo[1]}/issues/{m.group('snum')}"
        elif m.group("bare") and repo is not None:
            kind = "pull" if s[max(0, m.start() - 3) : m.start()].lower() == "pr " else "issues"
            href = f"{GITHUB}/{repo[0]}/{repo[1]}/{kind}/{m.group('bnum')}"
        elif m.group("commit") and commits and repo is not None:
            href = f"{GITHUB}/{repo[0]}/{repo[1]}/commit/{m.group('commit')}"
        if href is None:
            continue
        out.append(str(escape(s[pos : m.start()])))
        out.append(f'<a href="{escape(href)}">{escape(m.group(0))}</a>')
        pos = m.end()
    out.append(str(escape(s[pos:])))
    return Markup("".join(out))


def breakable(text: object) -> Markup:
    """``text`` escaped, with a line-break opportunity after every ``/`` (long actor names in narrow lanes)."""
    return Markup("/<wbr>").join(escape(part) for part in str(text).split("/"))


def without_actor(label: str, actor: str) -> str:
    """A step label without a leading repetition of its actor's name.

    Informer actors label their steps with their own name ("scheduler/informer/Pod
    deliver DELETED ..."); in the actor's own lane that prefix says nothing.
    """
    for sep in (": ", " "):
        if actor and label.startswith(actor + sep) and len(label) > len(actor) + len(sep):
            return label[len(actor) + len(sep) :]
    return label


def split_action(text: str, actors: Iterable[str]) -> tuple[str | None, str]:
    """``"actor: label"`` (a deviation's displaced action) as ``(actor, label without the actor)``.

    Actor names may contain ``": "``, so the longest known actor that prefixes
    the text wins; an unknown prefix is split at the first ``": "``.
    """
    best = max((a for a in actors if text.startswith(a + ": ")), key=len, default=None)
    if best is None:
        head, sep, tail = text.partition(": ")
        if not sep:
            return None, text
        best, text = head, tail
    else:
        text = text[len(best) + 2 :]
    return best, without_actor(text, best)


def whole_name(name: str) -> re.Pattern[str]:
    """A pattern matching ``name`` only as a whole object name: ``test-a`` is not in ``test-a/wl1``."""
    return re.compile(r"(?<![\w./-])" + re.escape(name) + r"(?![\w/-]|\.\w)")
