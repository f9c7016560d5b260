"""The report's stylesheet: light and dark (the reader's setting), and a printable page."""

from __future__ import annotations

__all__ = ["CSS"]

CSS = """
:root {
  color-scheme: light dark;
  --bg: #ffffff; --fg: #1d2330; --muted: #5b6474; --line: #d9dde5; --card: #f4f6f9;
  --warn: #b3261e; --ok: #1b7f3b;
  --s0: #3867d6; --s1: #e1822b; --s2: #2e9e6a; --s3: #c2417a; --s4: #8b5cf6;
  --s5: #0f9fb4; --s6: #b8860b; --s7: #6b7280; --so: #a3a9b5;
}
@media (prefers-color-scheme: dark) {
  :root {
    --bg: #14171c; --fg: #e6e9ef; --muted: #9aa3b2; --line: #323844; --card: #1d2129;
    --warn: #ff8a80; --ok: #6fd08c;
    --s0: #6f95f0; --s1: #f0a35e; --s2: #5cc795; --s3: #e27aa6; --s4: #a98bfa;
    --s5: #4cc4d6; --s6: #d9b44a; --s7: #9aa1ad; --so: #5d6470;
  }
}
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1100px; padding: 24px; background: var(--bg); color: var(--fg);
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
h1 { font-size: 1.6em; margin: 0 0 4px; }
h2 { font-size: 1.2em; margin: 28px 0 10px; padding-bottom: 4px;
  border-bottom: 1px solid var(--line); }
.meta, .empty, .note { color: var(--muted); }
code { font: 0.92em ui-monospace, SFMono-Regular, Menlo, monospace; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 10px; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 8px;
  padding: 10px 12px; }
.card .n { font-size: 1.6em; font-weight: 600; display: block; }
.card .k { color: var(--muted); font-size: 0.85em; }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr)); gap: 16px; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line);
  vertical-align: top; }
th { color: var(--muted); font-weight: 600; font-size: 0.85em; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
.chart { width: 100%; height: auto; display: block; }
.chart .grid { stroke: var(--line); stroke-width: 1; }
.chart .axis { fill: var(--muted); font-size: 11px; }
.s0 { fill: var(--s0); background: var(--s0); } .s1 { fill: var(--s1); background: var(--s1); }
.s2 { fill: var(--s2); background: var(--s2); } .s3 { fill: var(--s3); background: var(--s3); }
.s4 { fill: var(--s4); background: var(--s4); } .s5 { fill: var(--s5); background: var(--s5); }
.s6 { fill: var(--s6); background: var(--s6); } .s7 { fill: var(--s7); background: var(--s7); }
.so { fill: var(--so); background: var(--so); }
.legend { list-style: none; padding: 0; margin: 6px 0 0; display: flex; flex-wrap: wrap;
  gap: 4px 14px; font-size: 0.88em; }
.key { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 5px; }
.chain { margin: 2px 0 0; padding-left: 18px; color: var(--muted); font-size: 0.9em; }
.tag { display: inline-block; border: 1px solid var(--line); border-radius: 10px; padding: 0 7px;
  margin: 0 4px 4px 0; font-size: 0.85em; }
.blocked { color: var(--warn); font-weight: 600; }
.good { color: var(--ok); }
.bad { color: var(--warn); }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  section { break-inside: avoid; }
  .card { border-color: #999; }
}
"""
