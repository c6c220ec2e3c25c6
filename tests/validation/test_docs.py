"""The README is a front door and the docs site builds: the strict mkdocs build passes (this is how `make test`
runs it), the README stays short and shows the two commands, every relative link and every repository path the
README and the docs name exists, and the committed lifecycle picture is what scripts/lifecycle_picture.py draws
from the ASL now."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.scripts_by_path import load_script

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
# Written by hand; docs/failure-catalogue.md is generated from the catalogue (its own test checks it).
HAND_WRITTEN = [p for p in PAGES if p.name != "failure-catalogue.md"]
MKDOCS = Path(sys.executable).with_name("mkdocs")

# A backticked span is a repository path when it starts with one of the repository's top-level folders or is
# one of its top-level files; spans holding placeholders or patterns (<id>, *, {a,b}, $VAR) or spaces are not.
TOP_DIRS = ("incident_responder", "handlers", "mcp", "chaos", "scripts", "statemachine", "tests", "docs",
            "requirements", "scenarios", "events", "bench")  # fmt: skip
TOP_FILES = ("template.yaml", "samconfig.toml", "Makefile", "pyproject.toml", "uv.lock", "mkdocs.yml", "README.md")
_CODE_SPAN = re.compile(r"`([^`\n]+)`")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")


def _prose(path: Path) -> str:
    """The page without its fenced code blocks (commands and sample output, not claims about paths)."""
    return _FENCE.sub("", path.read_text(encoding="utf-8"))


def repository_paths(text: str) -> set[str]:
    found = set()
    for span in _CODE_SPAN.findall(text):
        if any(c in span for c in "<>*{}$ ") or "..." in span:
            continue
        if span in TOP_FILES or span.split("/", 1)[0] in TOP_DIRS and "/" in span:
            found.add(span)
    return found


def relative_links(text: str) -> set[str]:
    links = set()
    for match in _LINK.finditer(text):
        target = match.group(1) or match.group(2)
        parts = urlsplit(target)
        if parts.scheme or parts.netloc or not parts.path:
            continue  # a URL, or an anchor on the same page (the strict build checks anchors in the docs)
        links.add(unquote(parts.path))
    return links


def test_the_docs_site_builds_strictly(tmp_path):
    """`mkdocs build --strict`: a broken link, a missing anchor or a page left out of the nav fails it."""
    assert MKDOCS.exists(), f"{MKDOCS} missing: `make install` installs mkdocs-material"
    result = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "index.html").exists()


def test_the_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    lines = text.count("\n")
    assert 150 <= lines <= 250, f"README.md has {lines} lines: keep it between 150 and 250, the rest goes in docs/"
    assert re.search(r"^make demo\b", text, re.MULTILINE), "README.md must show `make demo`"
    assert re.search(r"^make test\b", text, re.MULTILINE), "README.md must show `make test`"
    assert "docs/images/report.png" in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(page):
    missing = sorted(
        link for link in relative_links(_prose(page)) if not (page.parent / link).resolve().exists()
    )  # fmt: skip
    assert not missing, f"{page.relative_to(REPO)} links to files that do not exist: {missing}"


@pytest.mark.parametrize("page", HAND_WRITTEN, ids=lambda p: str(p.relative_to(REPO)))
def test_every_repository_path_named_exists(page):
    missing = sorted(path for path in repository_paths(page.read_text(encoding="utf-8")) if not (REPO / path).exists())
    assert not missing, f"{page.relative_to(REPO)} names paths that do not exist: {missing}"


def test_the_path_and_link_readers_find_what_they_should():
    text = "see `incident_responder/remediation/` and `scripts/bench.py`, not `out/<id>/report.html` or `make demo`"
    assert repository_paths(text) == {"incident_responder/remediation/", "scripts/bench.py"}
    links = "[a](docs/lab.md#chaos) [b](https://example.com/x.md) [c](#top) ![d](images/report.png)"
    assert relative_links(links) == {"docs/lab.md", "images/report.png"}


@pytest.fixture(scope="module")
def picture_script():
    return load_script("lifecycle_picture")


def test_the_committed_lifecycle_picture_is_what_the_asl_draws(picture_script):
    picture = DOCS / "images" / "lifecycle.svg"
    assert picture.read_text(encoding="utf-8") == picture_script.render(), (
        "docs/images/lifecycle.svg differs from statemachine/incident_lifecycle.asl.json: "
        "run `python scripts/lifecycle_picture.py`"
    )


def test_the_picture_check_says_what_to_run_when_stale(picture_script, tmp_path, monkeypatch, capsys):
    stale = tmp_path / "lifecycle.svg"
    stale.write_text("<svg/>\n", encoding="utf-8")
    monkeypatch.setattr(picture_script, "PICTURE", tmp_path / "lifecycle.svg")
    monkeypatch.setattr(picture_script, "REPO", tmp_path)
    monkeypatch.setattr(picture_script, "ASL", REPO / "statemachine" / "incident_lifecycle.asl.json")
    assert picture_script.main(["--check"]) == 1
    assert "python scripts/lifecycle_picture.py" in capsys.readouterr().err
    assert picture_script.main([]) == 0
    assert picture_script.main(["--check"]) == 0


def test_the_eval_cost_bound_the_docs_quote_is_todays():
    """The docs quote what a Bedrock eval may cost at most per scenario: the figure follows the template's caps."""
    from incident_responder.agent.model_catalog import DEFAULT_MODEL, prices
    from incident_responder.lab.converse.eval_model import cost_bound

    text = " ".join((DOCS / "evaluation.md").read_text().split())
    quoted = re.search(r"at list prices: \$([\d.]+) a scenario for the default model", text)
    assert quoted, "docs/evaluation.md no longer quotes the cost bound per scenario"
    assert float(quoted.group(1)) == cost_bound(1, prices(DEFAULT_MODEL))
