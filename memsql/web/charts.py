"""Inline SVG charts of the web page: drawn on the server, no script, no chart library to download.

Every function returns markupsafe.Markup; every text placed in a chart goes through markupsafe.escape.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone
from typing import Iterable, Sequence

from markupsafe import Markup, escape

PALETTE = ("#2f6fdf", "#d9822b", "#2e9e5b", "#c23b4b", "#7a4fc9", "#8a6d3b", "#1b9aaa", "#c2549d")
INK = "#333"
MUTED = "#999"
GRID = "#e4e4e4"


def _svg(width: int, height: int, body: Iterable[str], label: str) -> Markup:
    return Markup(f'<svg class="chart" role="img" aria-label="{escape(label)}" width="{width}" height="{height}" '
                  f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">' + "".join(body) + "</svg>")


def _text(x: float, y: float, text: str, anchor: str = "start", size: int = 11, fill: str = INK,
          cls: str = "") -> str:
    c = f' class="{cls}"' if cls else ""
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{fill}" text-anchor="{anchor}"{c}>'
            f"{escape(text)}</text>")


def score_breakdown(r, max_fusion: float, freq_cap: float = 1.5) -> Markup:
    """Bars of one search result: dense and lexical rank (bar = 1 / rank), fusion score (share of the best),
    decay factor, frequency factor (share of the cap) and importance (unset: grey, half)."""

    def rank(v, extra):
        return (1.0 / v, f"#{v}{extra}") if v else (0.0, "not in arm")

    dense = rank(r.dense_rank, f"  cos {r.dense_similarity:.2f}" if r.dense_similarity is not None else "")
    lexical = rank(r.lexical_rank, f"  bm25 {r.lexical_score:.2f}" if r.lexical_rank else "")
    rows = [
        ("dense", *dense, PALETTE[0]),
        ("lexical", *lexical, PALETTE[1]),
        ("fusion", r.fusion_score / max_fusion if max_fusion > 0 else 0.0, f"{r.fusion_score:.4f}", PALETTE[4]),
        ("decay", r.decay_factor, f"\u00d7{r.decay_factor:.3f}", PALETTE[2]),
        ("frequency", (r.frequency_factor - 1) / (freq_cap - 1) if freq_cap > 1 else 0.0,
         f"\u00d7{r.frequency_factor:.3f}", PALETTE[6]),
        ("importance", r.importance if r.importance is not None else 0.5,
         f"{r.importance:.2f}" if r.importance is not None else "unset", PALETTE[3] if r.importance is not None
         else MUTED),
    ]
    w, bar_x, bar_w, row_h = 330, 70, 130, 14
    body = []
    for i, (name, value, shown, color) in enumerate(rows):
        y = 2 + i * row_h
        value = max(0.0, min(1.0, float(value)))
        body.append(_text(0, y + 10, name, size=10, fill=MUTED))
        body.append(f'<rect x="{bar_x}" y="{y + 2}" width="{bar_w}" height="9" fill="{GRID}"/>')
        body.append(f'<rect class="bar bar-{name}" x="{bar_x}" y="{y + 2}" width="{bar_w * value:.1f}" height="9" '
                    f'fill="{color}"><title>{escape(name)} {escape(shown)}</title></rect>')
        body.append(_text(bar_x + bar_w + 6, y + 10, shown, size=10, cls=f"v-{name}"))
    return _svg(w, 2 + len(rows) * row_h, body, f"score breakdown of memory {r.memory_id}")


def _ts(t: datetime) -> float:
    return (t if t.tzinfo else t.replace(tzinfo=timezone.utc)).timestamp()


def versions_timeline(versions: Sequence, now: datetime, width: int = 640) -> Markup:
    """Each version a bar from valid_from to valid_to (the current one to now), labelled v1, v2, ..."""
    if not versions:
        return Markup("")
    t0 = _ts(versions[0].valid_from)
    t1 = max(_ts(now), max(_ts(v.valid_to or now) for v in versions))
    span = max(t1 - t0, 1.0)
    left, right, row = 10, width - 10, 22
    x = lambda t: left + (right - left) * (t - t0) / span  # noqa: E731
    body = [f'<line x1="{left}" y1="{row * len(versions) + 6}" x2="{right}" y2="{row * len(versions) + 6}" '
            f'stroke="{MUTED}"/>']
    for i, v in enumerate(versions):
        a, b = x(_ts(v.valid_from)), x(_ts(v.valid_to or now))
        color = PALETTE[2] if v.is_current else (MUTED if v.archived else PALETTE[0])
        y = 4 + i * row
        body.append(f'<rect class="version" x="{a:.1f}" y="{y}" width="{max(b - a, 3):.1f}" height="14" rx="3" '
                    f'fill="{color}"><title>v{v.version}: {escape(str(v.valid_from)[:19])} \u2192 '
                    f'{escape(str(v.valid_to)[:19]) if v.valid_to else "now"}</title></rect>')
        state = "current" if v.is_current else ("archived" if v.archived else "superseded")
        label = f"v{v.version} #{v.memory_id} {state}"
        if b - a > 160:  # inside its bar
            body.append(_text(a + 4, y + 11, label, size=10, fill="#fff"))
        elif b + 154 <= right:  # after a short bar
            body.append(_text(b + 4, y + 11, label, size=10))
        else:  # a short bar at the right end: before it
            body.append(_text(a - 4, y + 11, label, anchor="end", size=10))
    bottom = row * len(versions) + 6
    body.append(_text(left, bottom + 14, str(versions[0].valid_from)[:16], size=10, fill=MUTED))
    body.append(_text(right, bottom + 14, "now", anchor="end", size=10, fill=MUTED))
    return _svg(width, bottom + 20, body, "versions on a timeline")


def _next_bucket(start: datetime, bucket: str) -> datetime:
    """The start of the period after ``start`` (day, week, month or year)."""
    if bucket == "day":
        return start + timedelta(days=1)
    if bucket == "week":
        return start + timedelta(days=7)
    if bucket == "month":
        return start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1)
    return start.replace(year=start.year + 1)


def time_series(points: Sequence[tuple[datetime, int, int]], bucket: str | None = None, width: int = 640,
                height: int = 170, max_periods: int = 400) -> Markup:
    """Bars of memories per period (archived ones stacked in grey): points are (start, memories, archived), in
    order. With ``bucket`` (day, week, month, year) the periods without memories get their (empty) place, so the
    x axis is time; a bar is at most 48 px wide."""
    if not points:
        return Markup('<p class="muted">no memories yet</p>')
    if bucket:  # periods start at UTC midnights (memory_timeline): step in UTC
        points = [(start.astimezone(timezone.utc) if start.tzinfo else start, live, gone)
                  for start, live, gone in points]
        have = {start: (live, gone) for start, live, gone in points}
        filled, t = [], points[0][0]
        while t <= points[-1][0] and len(filled) < max_periods:
            filled.append((t, *have.get(t, (0, 0))))
            t = _next_bucket(t, bucket)
        if len(filled) < max_periods:
            points = filled
    top = max(m + a for _, m, a in points) or 1
    left, bottom, plot_h = 40, height - 22, height - 34
    n = len(points)
    step = (width - left - 10) / n
    bar = min(max(step * 0.8, 1), 48)
    body = [f'<line x1="{left}" y1="{bottom}" x2="{width - 10}" y2="{bottom}" stroke="{MUTED}"/>',
            _text(left - 4, bottom - plot_h + 8, f"{top}", anchor="end", size=10, fill=MUTED),
            _text(left - 4, bottom, "0", anchor="end", size=10, fill=MUTED)]
    for i, (start, live, gone) in enumerate(points):
        if not live and not gone:
            continue
        x = left + i * step + (step - bar) / 2
        h_live, h_gone = plot_h * live / top, plot_h * gone / top
        label = f"{str(start)[:10]}: {live} memories" + (f", {gone} archived" if gone else "")
        body.append(f'<rect class="period" x="{x:.1f}" y="{bottom - h_live:.1f}" width="{bar:.1f}" '
                    f'height="{h_live:.1f}" fill="{PALETTE[0]}"><title>{escape(label)}</title></rect>')
        if gone:
            body.append(f'<rect class="period-archived" x="{x:.1f}" y="{bottom - h_live - h_gone:.1f}" '
                        f'width="{bar:.1f}" height="{h_gone:.1f}" fill="{MUTED}"><title>{escape(label)}</title></rect>')
    first, last = str(points[0][0])[:10], str(points[-1][0])[:10]
    body.append(_text(left, height - 6, first, size=10, fill=MUTED))
    if last != first:
        body.append(_text(width - 10, height - 6, last, anchor="end", size=10, fill=MUTED))
    return _svg(width, height, body, "memories over time")


def decay_curves(kinds: Sequence, threshold: float, time_weight: float = 1.0, days: int | None = None,
                 width: int = 640, height: int = 240) -> Markup:
    """Retention score of a memory of unset importance, never accessed, by age, for each knowledge type:
    (1 - w) + w * 0.5^(age / half-life); the dashed line is the forgetting threshold (below it: forgotten)."""
    lives = [k.half_life_days for k in kinds if k.half_life_days]
    days = days or int(max(365, min(4 * max(lives, default=365), 3650)))
    left, right, top, bottom = 40, width - 150, 10, height - 24
    x = lambda d: left + (right - left) * d / days  # noqa: E731
    y = lambda s: bottom - (bottom - top) * s  # noqa: E731
    body = [f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{MUTED}"/>',
            f'<line x1="{left}" y1="{top}" x2="{left}" y2="{bottom}" stroke="{MUTED}"/>',
            _text(left - 4, top + 8, "1", anchor="end", size=10, fill=MUTED),
            _text(left - 4, bottom, "0", anchor="end", size=10, fill=MUTED),
            _text(left, height - 6, "0 days", size=10, fill=MUTED),
            _text(right, height - 6, f"{days} days", anchor="end", size=10, fill=MUTED),
            f'<line class="threshold" x1="{left}" y1="{y(threshold):.1f}" x2="{right}" y2="{y(threshold):.1f}" '
            f'stroke="{PALETTE[3]}" stroke-dasharray="4 3"/>',
            _text(right + 4, y(threshold) + 3, f"threshold {threshold:g}", size=10, fill=PALETTE[3])]
    seen: set = set()
    for i, k in enumerate(kinds):
        color = PALETTE[i % len(PALETTE)]
        dash = ' stroke-dasharray="7 5"' if k.half_life_days in seen else ""  # the same curve as one drawn: dashed
        seen.add(k.half_life_days)
        pts = []
        for step in range(0, 101):
            d = days * step / 100
            decay = 1.0 if not k.half_life_days else math.pow(0.5, d / k.half_life_days)
            pts.append(f"{x(d):.1f},{y((1 - time_weight) + time_weight * decay):.1f}")
        life = f"{k.half_life_days:g} d" if k.half_life_days else "never"
        body.append(f'<polyline class="curve" data-kind="{escape(k.name)}" fill="none" stroke="{color}" '
                    f'stroke-width="2"{dash} points="{" ".join(pts)}"><title>{escape(k.name)}: half-life {life}</title>'
                    "</polyline>")
        body.append(f'<rect x="{right + 12}" y="{top + i * 16}" width="10" height="10" fill="{color}"/>')
        body.append(_text(right + 26, top + i * 16 + 9, f"{k.name} ({life})", size=11))
    return _svg(width, height, body, "decay curve per knowledge type")


def hbars(rows: Sequence[tuple[str, int]], width: int = 420) -> Markup:
    """Horizontal bars of labelled counts (drawn at the width of a half-page column, so its text is not shrunk)."""
    if not rows:
        return Markup("")
    top = max(v for _, v in rows) or 1
    label_w, bar_w, row_h = 130, width - 190, 18
    body = []
    for i, (label, value) in enumerate(rows):
        y = i * row_h
        body.append(_text(label_w - 6, y + 12, label, anchor="end", size=11))
        body.append(f'<rect x="{label_w}" y="{y + 3}" width="{bar_w * value / top:.1f}" height="12" '
                    f'fill="{PALETTE[i % len(PALETTE)]}"/>')
        body.append(_text(label_w + bar_w * value / top + 6, y + 13, str(value), size=11))
    return _svg(width, len(rows) * row_h + 4, body, "counts")
