"""Charts as inline SVG: no script, no font or file to fetch, colours from the page's CSS.

A series' colour is a class (`s0` … `s7`, and `so` for "other") that the report's stylesheet
fills, so the chart follows the page into dark mode and onto paper.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

__all__ = ["SERIES", "stacked_bars"]

SERIES = 8  # series drawn in their own colour; the rest are summed into "other"
_W, _H = 720, 220  # the drawing's own units; it scales to the page's width
_LEFT, _BOTTOM, _TOP = 40, 28, 10


def stacked_bars(
    labels: Sequence[str], series: Mapping[str, Sequence[int]], *, title: str, chart_id: str
) -> str:
    """One bar per label (a week), stacked by series (a type, an agent), biggest series first;
    each bar segment has a tooltip. An empty chart says so."""
    if not labels:
        return f'<p class="empty" id="{escape(chart_id)}">Nothing to draw yet.</p>'
    ordered = sorted(series.items(), key=lambda kv: (-sum(kv[1]), kv[0]))
    if len(ordered) > SERIES:
        rest = [sum(column) for column in zip(*(v for _, v in ordered[SERIES:]), strict=True)]
        ordered = [*ordered[:SERIES], ("other", rest)]
    totals = [sum(values[i] for _, values in ordered) for i in range(len(labels))]
    top = _nice(max(totals) or 1)
    plot_w, plot_h = _W - _LEFT - 8, _H - _BOTTOM - _TOP
    step = plot_w / len(labels)
    bar = max(step * 0.8, 0.5)
    parts = [
        f'<svg id="{escape(chart_id)}" class="chart" viewBox="0 0 {_W} {_H}" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for tick in sorted({0, top // 2, top}):
        y = _TOP + plot_h - plot_h * tick / top
        parts.append(f'<line class="grid" x1="{_LEFT}" x2="{_W - 8}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(
            f'<text class="axis" x="{_LEFT - 4}" y="{y + 4:.1f}" text-anchor="end">{tick}</text>'
        )
    every = max(1, round(len(labels) / 8))
    for i, label in enumerate(labels):
        x = _LEFT + i * step + (step - bar) / 2
        y = _TOP + plot_h
        for n, (name, values) in enumerate(ordered):
            value = values[i]
            if not value:
                continue
            h = plot_h * value / top
            y -= h
            css = "so" if name == "other" and n == SERIES else f"s{n}"
            parts.append(
                f'<rect class="{css}" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" height="{h:.1f}">'
                f"<title>{escape(label)}: {escape(name)} {value}</title></rect>"
            )
        if i % every == 0:
            parts.append(
                f'<text class="axis" x="{x + bar / 2:.1f}" y="{_H - 10}" '
                f'text-anchor="middle">{escape(label)}</text>'
            )
    parts.append("</svg>")
    legend = "".join(
        f'<li><span class="key {"so" if name == "other" and n == SERIES else f"s{n}"}"></span>'
        f"{escape(name)} <b>{sum(values)}</b></li>"
        for n, (name, values) in enumerate(ordered)
    )
    return "".join(parts) + f'<ul class="legend">{legend}</ul>'


def _nice(value: int) -> int:
    """The axis's top: `value` rounded up to 1, 2 or 5 times a power of ten."""
    magnitude = 1
    while True:
        for factor in (1, 2, 5):
            if value <= factor * magnitude:
                return factor * magnitude
        magnitude *= 10
