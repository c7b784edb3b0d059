"""The eval's HTML report: one self-contained file (inline CSS and SVG, no script, nothing fetched) that a person
opens in a browser or attaches to a pull request.

It holds a chart of success rate against cost per run for each model (and workflow), a chart of time per task,
the summary table per task × model × workflow, and every run with its checks, question and diff. The charts are
SVG written here: two small charts do not justify a charting library and its JavaScript.
"""

from __future__ import annotations

import html
import math
import time
from typing import Any

from anvil.eval.results import Group, money, rate_text, seconds, short_model, summarise

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777")
_CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1100px;color:#111;
padding:0 1rem}h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2rem;font-size:1.2rem}
.meta{color:#555}table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border-bottom:1px solid #ddd;
padding:.3rem .5rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}th{background:#f5f5f5}
td.num{text-align:right;font-variant-numeric:tabular-nums}.ok{color:#15803d;font-weight:600}.bad{color:#b91c1c;font-weight:600}
.charts{display:flex;flex-wrap:wrap;gap:1.5rem}figure{margin:0;flex:1 1 480px}figcaption{font-weight:600;
margin-bottom:.3rem}svg text{font:12px system-ui,sans-serif;fill:#333}pre{background:#f8f8f8;padding:.5rem;
overflow:auto;max-height:30rem;font-size:12px}details summary{cursor:pointer}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _label(group: Group) -> str:
    model = short_model(group.model)
    return model if group.workflow in {"none", "*"} else f"{model} · {group.workflow}"


def _colours(labels: list[str]) -> dict[str, str]:
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(dict.fromkeys(labels))}


def nice_step(largest: float, steps: int = 4) -> float:
    """A round tick step (1, 2 or 5 times a power of ten) so that ``steps`` of them cover ``largest``."""
    if largest <= 0:
        return 0.25
    raw = largest / steps
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def success_cost_chart(models: list[Group], width: int = 520, height: int = 340) -> str:
    """Success rate (y) against the mean cost of a run (x), a point per model and workflow."""
    left, right, top, bottom = 56, 40, 24, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    costs = [(g.total_cost or 0.0) / g.runs if g.runs else 0.0 for g in models]
    step = nice_step(max(costs, default=0.0) * 1.05)
    top_cost = step * 4
    colours = _colours([_label(g) for g in models])
    parts = [f'<svg role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             'xmlns="http://www.w3.org/2000/svg" aria-label="success rate against cost per run">']
    for tick in range(5):  # y: 0 to 100 %
        y = top + plot_h - plot_h * tick / 4
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{tick * 25}%</text>')
    for tick in range(5):  # x: cost
        x = left + plot_w * tick / 4
        parts.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top}" y2="{top + plot_h}" stroke="#f0f0f0"/>'
                     f'<text x="{x:.1f}" y="{top + plot_h + 16}" text-anchor="middle">'
                     f'${step * tick:.4g}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 6}" text-anchor="middle">mean cost of a run (USD)'
                 '</text>')
    for group, cost in zip(models, costs, strict=True):
        x = left + plot_w * cost / top_cost
        y = top + plot_h - plot_h * group.rate
        label = _label(group) + ("" if group.total_cost is not None else " (cost unknown)")
        on_left = x > left + plot_w * 0.55  # labels go where there is room: inside the plot
        label_x, anchor = (x - 10, "end") if on_left else (x + 10, "start")
        label_y = y + 20 if y < top + 14 else y - 8
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="7" fill="{colours[_label(group)]}" fill-opacity=".85">'
                     f'<title>{_e(label)}: {_e(rate_text(group))}, {_e(money(cost))} a run</title></circle>'
                     f'<text x="{label_x:.1f}" y="{label_y:.1f}" text-anchor="{anchor}">{_e(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def time_chart(groups: list[Group], width: int = 520) -> str:
    """Median wall time per task, a bar per model and workflow."""
    tasks = list(dict.fromkeys(g.task for g in groups))
    labels = list(dict.fromkeys(_label(g) for g in groups))
    colours = _colours(labels)
    bar, gap, left, right = 14, 12, 150, 70
    longest = max((g.median_time or 0.0 for g in groups), default=0.0) or 1.0
    row = bar * len(labels) + gap
    legend = 22 * ((len(labels) + 2) // 3)
    height = row * len(tasks) + legend + 20
    plot_w = width - left - right
    parts = [f'<svg role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             'xmlns="http://www.w3.org/2000/svg" aria-label="time per task">']
    by_key = {(g.task, _label(g)): g for g in groups}
    for t, task in enumerate(tasks):
        y0 = 10 + t * row
        parts.append(f'<text x="{left - 8}" y="{y0 + bar * len(labels) / 2 + 4:.1f}" text-anchor="end">'
                     f'{_e(task[:22])}</text>')
        for i, label in enumerate(labels):
            group = by_key.get((task, label))
            if group is None or group.median_time is None:
                continue
            w = max(1.0, plot_w * group.median_time / longest)
            y = y0 + i * bar
            parts.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar - 2}" fill="{colours[label]}">'
                         f'<title>{_e(task)}, {_e(label)}: {seconds(group.median_time)}</title></rect>'
                         f'<text x="{left + w + 4:.1f}" y="{y + bar - 4}">{seconds(group.median_time)}</text>')
    y = 10 + row * len(tasks) + 6
    for i, label in enumerate(labels):
        x, ly = 10 + (i % 3) * (width // 3), y + 22 * (i // 3)
        parts.append(f'<rect x="{x}" y="{ly}" width="12" height="12" fill="{colours[label]}"/>'
                     f'<text x="{x + 18}" y="{ly + 11}">{_e(label[:40])}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _summary_rows(groups: list[Group]) -> str:
    rows = []
    for g in groups:
        css = "ok" if g.rate == 1 else "bad" if g.rate == 0 else ""
        iterations = "-" if g.median_iterations is None else f"{g.median_iterations:g}"
        rows.append(f"<tr><td>{_e(g.task)}</td><td>{_e(short_model(g.model))}</td><td>{_e(g.workflow)}</td>"
                    f'<td class="num {css}">{_e(rate_text(g))}</td><td class="num">{g.blocked}</td>'
                    f'<td class="num">{_e(money(g.median_cost))}</td><td class="num">{_e(seconds(g.median_time))}</td>'
                    f'<td class="num">{_e(iterations)}</td></tr>')
    return "".join(rows)


def _run_rows(records: list[dict[str, Any]]) -> str:
    rows = []
    for r in records:
        verdict = '<span class="ok">success</span>' if r.get("success") else '<span class="bad">failure</span>'
        details = []
        if r.get("error"):
            details.append(f"<p>Error: {_e(r['error'])}</p>")
        if r.get("question"):
            details.append(f"<p>Question: {_e(r['question'])}</p>")
        for check in r.get("checks") or []:
            details.append(f"<details><summary>{_e(check.get('command'))}: {_e(check.get('status'))}</summary>"
                           f"<pre>{_e(check.get('output', ''))}</pre></details>")
        if r.get("autofix_files"):
            details.append(f"<p>Automatic fixers changed: {_e(', '.join(r['autofix_files']))}</p>")
        if r.get("diff"):
            details.append(f"<details><summary>diff</summary><pre>{_e(r['diff'])}</pre></details>")
        if r.get("session"):
            details.append(f"<p>Session: <code>{_e(r['session'])}</code></p>")
        tokens = r.get("tokens") or {}
        rows.append(f"<tr><td>{_e(r.get('task'))}</td><td>{_e(short_model(str(r.get('model'))))}</td>"
                    f"<td>{_e(r.get('workflow'))}</td>"
                    f"<td>{verdict}<br>{_e(r.get('status'))}</td><td class=\"num\">{_e(r.get('iterations', 0))}</td>"
                    f"<td class=\"num\">{_e(tokens.get('input', 0))} / {_e(tokens.get('output', 0))} / "
                    f"{_e(tokens.get('cached', 0))}</td><td class=\"num\">{_e(money(r.get('cost')))}</td>"
                    f"<td class=\"num\">{_e(seconds(r.get('wall_time')))}</td>"
                    f"<td class=\"num\">{_e(seconds(r.get('time_to_first_edit')))}</td>"
                    f"<td>{''.join(details)}</td></tr>")
    return "".join(rows)


def render_report(records: list[dict[str, Any]], *, title: str = "anvil eval", source: str = "") -> str:
    groups = summarise(records)
    models = summarise(records, by=("model", "workflow"))
    when = time.strftime("%Y-%m-%d %H:%M")
    successes = sum(1 for r in records if r.get("success"))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{_e(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_CSS}</style></head><body>
<h1>{_e(title)}</h1>
<p class="meta">{len(records)} runs, {successes} successful · {len(groups)} task × model × workflow groups · {when}
{(' · ' + _e(source)) if source else ''}</p>
<div class="charts">
<figure><figcaption>Success rate against cost, per model</figcaption>{success_cost_chart(models)}</figure>
<figure><figcaption>Time per task (median wall time)</figcaption>{time_chart(groups)}</figure>
</div>
<h2>Summary per task × model × workflow</h2>
<table><thead><tr><th>task</th><th>model</th><th>workflow</th><th>success</th><th>blocked</th><th>median cost</th>
<th>median time</th><th>iterations</th></tr></thead><tbody>{_summary_rows(groups)}</tbody></table>
<h2>Runs</h2>
<table><thead><tr><th>task</th><th>model</th><th>workflow</th><th>result</th><th>iterations</th>
<th>tokens in / out / cached</th><th>cost</th><th>time</th><th>first edit</th><th>details</th></tr></thead>
<tbody>{_run_rows(records)}</tbody></table>
</body></html>
"""
