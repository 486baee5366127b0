"""Inline SVG step charts of a metric over virtual time (no script, no external asset).

A load bug such as volcano#3597's backlog is a curve, not a step: four thousand
canonical steps say nothing a line rising through its limit does not say at a
glance. The chart is a step line (a metric holds its value until the next
change) drawn from at most a few points per pixel column: per column, the
first, lowest, highest and last value, so a spike one step wide still shows and
a 100,000-step run costs a few kilobytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._snapshot import Series

WIDTH = 760
HEIGHT = 220
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 14, 14, 34


@dataclass(frozen=True)
class Chart:
    """Geometry of one chart, ready for the template (every string here is numbers only)."""

    name: str
    kind: str  # "bound" or "view"
    path: str
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]
    x_label: str
    limit: float | None
    limit_y: float | None
    mark_x: float | None  # where the violation was detected
    summary: str
    width: int = WIDTH
    height: int = HEIGHT

    @property
    def plot(self) -> tuple[int, int, int, int]:
        """``(left, top, right, bottom)`` of the plotting area."""
        return _LEFT, _TOP, self.width - _RIGHT, self.height - _BOTTOM


def _nice(span: float) -> float:
    """A round tick step giving about five ticks over ``span``."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / 5
    mag = 10.0 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _fmt(v: float) -> str:
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:,.3g}" if abs(v) >= 1 else f"{v:.3g}"


def draw(series: Series, *, end_time: float, end_step: int, mark: tuple[float, int] | None = None) -> Chart | None:
    """The chart of ``series`` over virtual time (over steps when no virtual time passed); None if empty."""
    pts = series.points
    if not pts:
        return None
    by_time = end_time > pts[0][0]
    xs = [p[0] if by_time else float(p[1]) for p in pts]
    x0, x1 = (0.0, end_time) if by_time else (0.0, float(max(end_step, 1)))
    x1 = max(x1, xs[-1], x0 + 1e-9)
    values = [p[2] for p in pts]
    lo = min(0.0, *values)
    hi = max(*values, series.limit if series.limit is not None else -math.inf, lo + 1.0)
    hi += (hi - lo) * 0.06
    left, top, right, bottom = _LEFT, _TOP, WIDTH - _RIGHT, HEIGHT - _BOTTOM

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * (right - left)

    def sy(y: float) -> float:
        return bottom - (y - lo) / (hi - lo) * (bottom - top)

    # one column per pixel: first, min, max, last value of the points falling in it
    cmds = [f"M{sx(xs[0]):.1f} {sy(values[0]):.1f}"]
    i, n = 0, len(pts)
    while i < n:
        col = int(sx(xs[i]))
        j = i
        lo_v = hi_v = values[i]
        while j + 1 < n and int(sx(xs[j + 1])) == col:
            j += 1
            lo_v, hi_v = min(lo_v, values[j]), max(hi_v, values[j])
        cmds.append(f"H{sx(xs[i]):.1f}")
        for v in (values[i], lo_v, hi_v, values[j]):
            cmds.append(f"V{sy(v):.1f}")
        i = j + 1
    cmds.append(f"H{sx(xs[-1] if not by_time else max(xs[-1], end_time)):.1f}")
    path = _compact(cmds)

    xstep = _nice(x1 - x0)
    x_ticks = [(sx(k * xstep), _fmt(k * xstep)) for k in range(int((x1 - x0) / xstep) + 1)]
    ystep = _nice(hi - lo)
    first = math.ceil(lo / ystep)
    y_ticks = [(sy(k * ystep), _fmt(k * ystep)) for k in range(first, int(hi / ystep) + 1)]
    limit = series.limit
    mark_x = None
    if mark is not None:
        mark_x = sx(mark[0] if by_time else float(mark[1]))
    peak_at = max(range(n), key=lambda k: values[k])
    when = f"t={pts[peak_at][0]:.3f} s" if by_time else f"step {pts[peak_at][1]}"
    summary = f"from {_fmt(values[0])} to {_fmt(values[-1])}; peak {_fmt(values[peak_at])} at {when} (step {pts[peak_at][1]})"
    if limit is not None:
        crossed = next((p for p in pts if p[2] > limit), None)
        if crossed is not None:
            summary += f"; limit {_fmt(limit)} first exceeded at t={crossed[0]:.3f} s (step {crossed[1]})"
        else:
            summary += f"; limit {_fmt(limit)} never exceeded"
    return Chart(
        name=series.name,
        kind=series.kind,
        path=path,
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        x_label="virtual time (s)" if by_time else "step",
        limit=limit,
        limit_y=sy(limit) if limit is not None else None,
        mark_x=mark_x,
        summary=summary,
    )


def _compact(cmds: list[str]) -> str:
    """Drop repeated absolute moves (``V10 V10``) that draw nothing."""
    out: list[str] = []
    for c in cmds:
        if out and out[-1] == c:
            continue
        if out and c[0] == out[-1][0] and c[0] in "HV" and len(out) > 1:
            # consecutive V's: keep only those that change direction (a spike's extreme stays)
            prev = out[-1]
            before = out[-2]
            if before[0] == c[0]:
                a, b, x = float(before[1:]), float(prev[1:]), float(c[1:])
                if (a <= b <= x) or (a >= b >= x):
                    out[-1] = c
                    continue
        out.append(c)
    return " ".join(out)
