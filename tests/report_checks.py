"""What every incident report must show, whatever the incident's end (shared by the unit and lab tests)."""

from __future__ import annotations

import re

# What a final status must show beyond the common parts (text that only that kind of end produces).
BY_STATUS = {
    "REMEDIATED": ("before (recorded to undo it)", "Verification: VERIFIED"),
    "ROLLED_BACK": ("before (recorded to undo it)", "<h3>Rolled back</h3>"),
    "REMEDIATION_FAILED": ('class="error"',),
    "ERROR": ('class="error"',),
    "FAILED": ('class="error"',),
    "PROPOSAL_FAILED": ('class="error"',),
    "REJECTED": ("Rejected by <b>",),
    "APPROVAL_EXPIRED": ("Nobody decided before the approval expired",),
    "PROPOSAL_READY": ("Nothing was applied to the account.",),
    "SUPPRESSED": ("No diagnosis.",),
}


def assert_report(page: str, status: str, *, stored: bool = True) -> None:
    """``page`` is a whole, self-contained report of an incident that ended in ``status``; ``stored``: built
    from the stores of a run (so it has the execution picture and the agents' usage)."""
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert f"<title>{status}: incident " in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    # No external asset: nothing to fetch, no script.
    assert not re.search(r"""<[a-zA-Z][^>]*\s(src|href)=["']?(https?:)?//""", page) and "<script" not in page.lower()
    for anchor in (
        "timeline",
        "execution",
        "alert",
        "diagnosis",
        "evidence",
        "proposal",
        "actions",
        "usage",
        "transcript",
    ):
        assert f'<section id="{anchor}">' in page, anchor
    for text in BY_STATUS.get(status, ()):
        assert text in page, (status, text)
    if stored:
        assert '<g class="edge taken"' in page and 'class="legend"' in page  # the execution picture, path drawn
        assert "The alert is not stored." not in page
