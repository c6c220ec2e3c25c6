"""The incident report page (incident_report.render_html): every final status, evidence beside the tool output
it quotes, hostile text kept as text, and the page as a real browser draws it."""

from __future__ import annotations

import json
import struct
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from incident_responder.reporting.report import render_html
from incident_responder.state.lifecycle import TERMINAL_STATUSES
from tests.browser import browser, run_browser
from tests.incident_details import _detail
from tests.report_checks import assert_report

ASL = json.loads((Path(__file__).parents[2] / "statemachine" / "incident_lifecycle.asl.json").read_text())


@pytest.mark.parametrize("status", sorted(TERMINAL_STATUSES))
def test_each_final_status_has_a_whole_report(status):
    page = render_html(_detail(status))
    assert_report(page, status, stored=False)
    if status in {"ERROR", "FAILED", "PROPOSAL_FAILED", "REMEDIATION_FAILED"}:
        assert 'class="error"' in page and "throttled by the model" in page


def test_each_pointer_sits_beside_the_output_it_quotes():
    page = render_html(_detail("PROPOSAL_READY"))
    # The verified pointer: the value highlighted inside the tool's own output.
    assert '<span class="ok">verified</span> <b>get_config_drift</b>' in page
    assert "<mark>role.inline_policies.s3-access</mark>" in page
    # The unverified one: marked, with the mechanical check's reason, and what is (not) at its path.
    assert '<span class="bad">not verified</span> <b>get_recent_logs</b>' in page
    assert "does not resolve" in page and "Nothing at events[9].message in any get_recent_logs result" in page
    # Investigation gaps, guardrail rejections, and the approval are on the page.
    assert "network not checked" in page and "Rejected by the guardrails" in page and "no baseline" in page


def test_hostile_text_stays_text(monkeypatch):
    detail = _detail("PROPOSAL_READY")
    detail["diagnosis"] = {**detail["diagnosis"], "root_cause": "<script>alert(1)</script><img src=//evil.example/x>"}
    detail["alert"] = {"reason": "</pre><script>fetch('//evil.example')</script>"}
    page = render_html(detail)
    assert "<script" not in page.lower() and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert_report(page, "PROPOSAL_READY", stored=False)


def test_cost_from_the_configured_prices(monkeypatch):
    monkeypatch.delenv("PRICE_PER_MTOK_INPUT", raising=False)
    assert "set PRICE_PER_MTOK_INPUT" in render_html(_detail("REMEDIATED"))
    monkeypatch.setenv("PRICE_PER_MTOK_INPUT", "3")
    monkeypatch.setenv("PRICE_PER_MTOK_OUTPUT", "15")
    # 5400 in at $3/M + 339 out at $15/M = 0.0162 + 0.005085
    assert "<b>$0.0213</b>" in render_html(_detail("REMEDIATED"))
    # 4,000 of those input tokens read from the prompt cache: at a tenth of the input price.
    cached = _detail("REMEDIATED")
    cached["usage"]["investigation"]["cache_read_tokens"] = 4000
    # 1400 in at $3/M + 4000 read at $0.3/M + 339 out at $15/M = 0.0042 + 0.0012 + 0.005085
    assert "<b>$0.0105</b>" in render_html(cached)


def _png_pixels(data: bytes) -> tuple[int, int, set[bytes]]:
    """Width, height and the distinct colours of an 8-bit RGB(A) PNG, with the standard library only."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, b"", None
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks += body
        pos += 12 + length
    width, height, depth, colour_type = header[0], header[1], header[2], header[3]
    assert depth == 8 and colour_type in (2, 6)
    size = 3 if colour_type == 2 else 4
    raw, stride, colours, previous = zlib.decompress(chunks), width * size, set(), bytearray(width * size)
    offset = 0
    for line in range(height):  # every row is unfiltered (each filter reads the row above); colours from every 4th
        kind, scan = raw[offset], bytearray(raw[offset + 1 : offset + 1 + stride])
        offset += 1 + stride
        for i in range(stride):
            left = scan[i - size] if i >= size else 0
            up = previous[i]
            corner = previous[i - size] if i >= size else 0
            if kind == 1:
                scan[i] = (scan[i] + left) & 255
            elif kind == 2:
                scan[i] = (scan[i] + up) & 255
            elif kind == 3:
                scan[i] = (scan[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                scan[i] = (scan[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        if line % 4 == 0:
            colours.update(bytes(scan[i : i + 3]) for i in range(0, stride, size * 2))
        previous = scan
    return width, height, colours


def test_the_report_renders_in_a_real_browser(tmp_path):
    binary = browser()
    detail = _detail("ROLLED_BACK")
    base = datetime(2026, 11, 24, 1, 56, 33, tzinfo=UTC)
    visited = ["RECEIVED", "Function budget", "Account budget", "INVESTIGATING", "Run investigator agent"]
    detail["definition"] = ASL
    detail["history"] = [
        {"timestamp": base + timedelta(seconds=i), "type": "TaskStateEntered", "stateEnteredEventDetails": {"name": s}}
        for i, s in enumerate(visited)
    ]
    detail["execution_status"] = "RUNNING"
    page = tmp_path / "report.html"
    page.write_text(render_html(detail))
    shot = tmp_path / "report.png"
    run = run_browser(
        binary, "--hide-scrollbars", f"--screenshot={shot}", "--window-size=1280,2400",
        "--force-device-scale-factor=0.5", page.as_uri(),
    )  # fmt: skip
    assert shot.exists(), run.stderr[-2000:]
    width, height, colours = _png_pixels(shot.read_bytes())
    assert (width, height) == (640, 1200)  # the page at 1280 x 2400 CSS pixels, drawn at half scale
    # Drawn, not blank: the header's dark band, the status badge's orange, the picture's green path and blue state.
    assert bytes((0x26, 0x32, 0x38)) in colours and len(colours) > 20
    assert any(abs(c[0] - 0xEF) < 8 and abs(c[1] - 0x6C) < 8 and c[2] < 16 for c in colours)
