"""EM and F1 pinned on known cases of HotpotQA's official normalisation."""

from __future__ import annotations

import pytest

from offline_agent.eval import exact_match, f1_precision_recall, f1_score, normalize_answer


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("The Danube", "danube"),
        ("  River   Liffey. ", "river liffey"),
        ("An apple, a day!", "apple day"),
        ("Theatre", "theatre"),
        ("U.S.A.", "usa"),
        ("", ""),
    ],
)
def test_normalize(text: str, normal: str) -> None:
    assert normalize_answer(text) == normal


def test_exact_match() -> None:
    assert exact_match("the Danube.", "Danube") == 1.0
    assert exact_match("Danube river", "Danube") == 0.0
    assert exact_match(None, "Danube") == 0.0


def test_f1_partial_overlap() -> None:
    f1, precision, recall = f1_precision_recall("Liffey", "River Liffey")
    assert (precision, recall) == (1.0, 0.5) and f1 == pytest.approx(2 / 3)


def test_yes_no_are_all_or_nothing() -> None:
    assert f1_score("yes", "yes") == 1.0
    assert f1_score("yes it is", "yes") == 0.0
    assert f1_score("no", "yes") == 0.0
    assert f1_score("yes", "no way") == 0.0
    assert f1_score("noanswer", "Paris") == 0.0


def test_no_overlap_and_no_prediction() -> None:
    assert f1_score("Paris", "London") == 0.0
    assert f1_score(None, "London") == 0.0
    assert f1_score("London London", "London") == pytest.approx(2 / 3)
