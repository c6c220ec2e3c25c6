"""How `make test` spreads the suite over its workers (tests/conftest.py): a file per unit, the corpus split."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests import conftest


def _scheduler(dist: str):
    pytest.importorskip("xdist")
    config = SimpleNamespace(
        option=SimpleNamespace(numprocesses=3, tx=[], dist=dist, loadscopereorder=True),
        getvalue=lambda name: {"dist": dist, "numprocesses": 3, "tx": ["3*popen"]}.get(name),
    )
    return conftest.pytest_xdist_make_scheduler(config, log=None), config


def test_a_file_is_one_unit_and_the_corpus_shards_are_three():
    scheduler, config = _scheduler("loadfile")
    unit = scheduler._split_scope
    assert unit("tests/functional/test_lab_pipeline.py::test_a") == unit(
        "tests/functional/test_lab_pipeline.py::test_b"
    )
    assert unit("tests/functional/test_lab_pipeline.py::test_a") != unit("tests/functional/test_chaos.py::test_a")
    shards = {unit(f"tests/functional/test_evaluation.py::test_corpus[{i}]") for i in range(3)}
    assert len(shards) == 3
    assert config.option.loadscopereorder is False  # the collected order (longest first) is the order run


def test_other_distribution_modes_are_xdists_own():
    assert _scheduler("load")[0] is None


class _Item:
    def __init__(self, nodeid: str, slow: bool = False):
        self.nodeid = nodeid
        self.slow = slow

    def get_closest_marker(self, name: str):
        return object() if name == "slow" and self.slow else None


def test_the_longest_units_come_first_and_each_file_stays_together():
    items = [
        _Item("tests/unit/test_a.py::t1"),
        _Item("tests/functional/test_lab_cli.py::fast"),
        _Item("tests/unit/test_a.py::t2"),
        _Item("tests/functional/test_evaluation.py::test_corpus[0]", slow=True),
        _Item("tests/functional/test_lab_cli.py::slow", slow=True),
    ]
    conftest.pytest_collection_modifyitems(items)
    assert [i.nodeid for i in items] == [
        "tests/functional/test_evaluation.py::test_corpus[0]",
        "tests/functional/test_lab_cli.py::fast",
        "tests/functional/test_lab_cli.py::slow",
        "tests/unit/test_a.py::t1",
        "tests/unit/test_a.py::t2",
    ]
