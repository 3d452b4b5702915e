"""Small charts as inline SVG made on the server: no script, nothing fetched.

:func:`bar_chart` stacks series per x position (results per hour by state);
:func:`line_chart` draws series over time (queue depth).  Each bar or point
carries an SVG ``<title>``, which browsers show on hover.
"""

import math

from boincpy.web.markup import fmt, join

WIDTH, HEIGHT = 900, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 150, 14, 34


def nice_scale(value):
    """(top, step) of a y axis for counts up to ``value``: top is 1, 2 or 5
    x 10^n (at least 5) and step divides it in 4 or 5 round parts."""
    top = 5
    while top < value:
        top = top * 2 if str(top)[0] in "15" else top * 5 // 2
    step = top / 4 if str(top)[0] == "2" else top / 5
    return top, step


def _frame(title, scale, labels, width, height, plot_w, plot_h):
    """Axes, horizontal grid lines with y ticks, x labels (every few)."""
    ymax, step = scale
    parts = [fmt('<text x="{}" y="11" font-size="12" font-weight="bold">{}</text>', LEFT, title)]
    for i in range(int(round(ymax / step)) + 1):
        value = step * i
        y = TOP + plot_h - plot_h * value / ymax
        parts.append(fmt('<line x1="{}" y1="{:.1f}" x2="{}" y2="{:.1f}" stroke="#ddd"/>'
                         '<text x="{}" y="{:.1f}" font-size="10" text-anchor="end">{}</text>',
                         LEFT, y, LEFT + plot_w, y, LEFT - 4, y + 3,
                         ("%d" % value) if value == int(value) else ("%.1f" % value)))
    n = len(labels)
    every = max(1, int(math.ceil(n / 12.0)))
    for i, label in enumerate(labels):
        if i % every:
            continue
        x = LEFT + plot_w * (i + 0.5) / max(n, 1)
        parts.append(fmt('<text x="{:.1f}" y="{}" font-size="10" text-anchor="middle">{}</text>',
                         x, TOP + plot_h + 14, label))
    parts.append(fmt('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#888"/>',
                     LEFT, TOP + plot_h, LEFT + plot_w, TOP + plot_h))
    return parts


def _legend(series, plot_w):
    parts = []
    for i, (name, color, _values) in enumerate(series):
        y = TOP + 6 + 16 * i
        x = LEFT + plot_w + 14
        parts.append(fmt('<rect x="{}" y="{}" width="10" height="10" fill="{}"/>'
                         '<text x="{}" y="{}" font-size="11">{}</text>',
                         x, y - 8, color, x + 14, y + 1, name))
    return parts


def _svg(title, width, height, parts):
    return fmt('<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" '
               'viewBox="0 0 {} {}" role="img" aria-label="{}" font-family="sans-serif">'
               '{}</svg>', width, height, width, height, title, join(parts))


def bar_chart(title, labels, series, width=WIDTH, height=HEIGHT):
    """Stacked bars: ``series`` = [(name, colour, [value per label])]."""
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM
    totals = [sum(s[2][i] for s in series) for i in range(len(labels))]
    scale = nice_scale(max(totals) if totals else 0)
    ymax = scale[0]
    parts = _frame(title, scale, labels, width, height, plot_w, plot_h)
    n = max(len(labels), 1)
    bar_w = plot_w / n
    for i, label in enumerate(labels):
        base = 0.0
        for name, color, values in series:
            v = values[i]
            if not v:
                continue
            h = plot_h * v / ymax
            y = TOP + plot_h - base - h
            parts.append(fmt('<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" '
                             'fill="{}"><title>{}: {} {}</title></rect>',
                             LEFT + i * bar_w + 0.5, y, max(bar_w - 1, 0.5), h, color,
                             label, v, name))
            base += h
    parts += _legend(series, plot_w)
    return _svg(title, width, height, parts)


def line_chart(title, labels, series, width=WIDTH, height=HEIGHT):
    """Lines: ``series`` = [(name, colour, [value per label])]."""
    plot_w, plot_h = width - LEFT - RIGHT, height - TOP - BOTTOM
    peak = max((max(s[2]) for s in series if s[2]), default=0)
    scale = nice_scale(peak)
    ymax = scale[0]
    parts = _frame(title, scale, labels, width, height, plot_w, plot_h)
    n = max(len(labels), 1)
    for k, (name, color, values) in enumerate(series):
        points = []
        for i, v in enumerate(values):
            x = LEFT + plot_w * (i + 0.5) / n
            y = TOP + plot_h - plot_h * v / ymax
            points.append((x, y, labels[i], v))
        # Earlier series drawn wider, so a later one on top leaves them visible.
        parts.append(fmt('<polyline fill="none" stroke="{}" stroke-width="{}" points="{}"/>',
                         color, 2 + 2 * (len(series) - 1 - k), " ".join("%.1f,%.1f" % (x, y) for x, y, _, _ in points)))
        for x, y, label, v in points:
            parts.append(fmt('<circle cx="{:.1f}" cy="{:.1f}" r="2" fill="{}"><title>{}: {} {}'
                             '</title></circle>', x, y, color, label, v, name))
    parts += _legend(series, plot_w)
    return _svg(title, width, height, parts)
