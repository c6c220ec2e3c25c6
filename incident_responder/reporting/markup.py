"""REPORTED: the pieces of the report's HTML: text escaped (a hostile log line stays text), tables, sections, style."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from incident_responder.core.encoding import read_time

OUTPUT_LIMIT = 4000  # characters of one tool output shown beside its evidence pointer


def _e(value: Any) -> str:
    return escape(value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True))


def _pre(value: Any, limit: int = OUTPUT_LIMIT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=2, default=str, sort_keys=True)
    cut = f"\n… ({len(text) - limit} more characters in the stored record)" if len(text) > limit else ""
    return f"<pre>{escape(text[:limit])}{escape(cut)}</pre>"


def _marked(text: str, excerpt: str, limit: int = OUTPUT_LIMIT) -> str:
    """``text`` escaped, with the quoted ``excerpt`` highlighted where it occurs."""
    where = text.find(excerpt) if len(excerpt) >= 3 else -1
    if where < 0:
        return _pre(text, limit)
    start = max(0, where - limit // 2)
    shown = text[start : start + limit]
    where -= start
    return (
        "<pre>"
        + ("…" if start else "")
        + escape(shown[:where])
        + f"<mark>{escape(shown[where : where + len(excerpt)])}</mark>"
        + escape(shown[where + len(excerpt) :])
        + ("…" if start + limit < len(text) else "")
        + "</pre>"
    )


def _when(value: Any) -> str:
    stamp = read_time(value) if value else None
    return stamp.strftime("%Y-%m-%d %H:%M:%S UTC") if stamp else escape(str(value or "-"))


def _section(title: str, body: str, anchor: str) -> str:
    return f'<section id="{anchor}"><h2>{escape(title)}</h2>{body}</section>'


def _table(headers: list[str] | None, rows: list[list[str]]) -> str:
    """Rows of HTML cells; ``headers`` None: a two-column list of names and values."""
    if headers is None:
        body = "".join(f"<tr><th>{row[0]}</th><td>{row[1]}</td></tr>" for row in rows)
        return f'<table class="fields"><tbody>{body}</tbody></table>'
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


CSS = """
body{font:14px/1.45 -apple-system,'Segoe UI',Helvetica,Arial,sans-serif;color:#212121;margin:0;background:#fafafa}
header{background:#263238;color:#fff;padding:18px 28px}header h1{margin:0;font-size:20px}
header .sub{color:#cfd8dc;margin-top:4px}.status{display:inline-block;padding:3px 10px;border-radius:12px;
color:#fff;font-weight:600;margin-left:8px;font-size:13px}main{padding:8px 28px 40px;max-width:1400px}
nav{margin:12px 0}nav a{margin-right:14px;color:#1565c0;text-decoration:none}
section{background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:6px 18px 14px;margin:14px 0}
h2{font-size:17px;border-bottom:1px solid #eee;padding-bottom:6px}h3{font-size:15px;margin:14px 0 6px}
table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:5px 8px;
border-bottom:1px solid #eee}th{background:#f5f5f5;font-weight:600}.fields th{width:170px;background:none;color:#616161}
pre{background:#f6f8fa;border:1px solid #e1e4e8;border-radius:4px;padding:8px;margin:0;white-space:pre-wrap;
word-break:break-word;font-size:12px;max-height:320px;overflow:auto}code{background:#f6f8fa;padding:1px 4px;border-radius:3px}
mark{background:#fff176;padding:0 1px}.ok{color:#fff;background:#2e7d32;border-radius:3px;padding:1px 6px;font-size:12px}
.bad{color:#fff;background:#c62828;border-radius:3px;padding:1px 6px;font-size:12px}.muted{color:#757575}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}.card{background:#fff;border:1px solid #e0e0e0;
border-radius:6px;padding:10px 14px;min-width:130px}.card b{display:block;font-size:18px}
.card span{color:#757575;font-size:12px}.evidence{display:grid;grid-template-columns:minmax(260px,1fr) 2fr;
gap:14px;border-top:1px solid #eee;padding:10px 0}.evidence p{margin:3px 0}
.bar{height:10px;background:#90caf9;border-radius:2px}.picture{overflow:auto;max-height:900px;border:1px solid #eee}
.error{background:#ffebee;border:1px solid #ef9a9a;border-radius:4px;padding:8px 12px}
.transcript details,.transcript .event{border:1px solid #eee;border-radius:4px;margin:4px 0;padding:3px 8px}
.transcript summary{cursor:pointer}.transcript .tool{margin-left:24px}.transcript .event{color:#455a64}
.transcript .warn{background:#fff8e1}.transcript .bad-turn{border-color:#ef9a9a;background:#fff5f5}
"""
