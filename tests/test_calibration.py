"""The calibration `eval` reports of the confidence: the expected calibration error over ten
equal-width bins and the result sets per band, checked against hand-computed values."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nexusbrain.evals.calibration import (
    BandCount,
    Judged,
    calibrate,
    calibration_lines,
    calibration_view,
    chance_ece,
    expected_calibration_error,
    good_in_top,
)
from nexusbrain.retrieval.confidence import Band


def test_ece_matches_a_hand_computed_example() -> None:
    values = [0.05, 0.15, 0.95, 0.91, 0.5, 1.0]  # 1.0 falls in the last bin, [0.9, 1]
    good = [False, True, True, False, True, True]
    # bin 0: |0.05 - 0| = 0.05; bin 1: |0.15 - 1| = 0.85; bin 5: |0.5 - 1| = 0.5;
    # bin 9 (three): |0.95333 - 0.66667| = 0.28667, weighted 3/6
    expected = (0.05 + 0.85 + 0.5 + 3 * (2.86 / 3 - 2 / 3)) / 6
    assert expected == pytest.approx(0.376667, abs=1e-6)
    assert expected_calibration_error(values, good) == pytest.approx(expected)
    assert expected_calibration_error([0.3, 0.7], [False, True], bins=1) == pytest.approx(0.0)
    assert expected_calibration_error([], []) == 0.0
    with pytest.raises(ValueError, match="outside"):
        expected_calibration_error([1.2], [True])
    with pytest.raises(ValueError, match="labels"):
        expected_calibration_error([0.5], [])


@given(st.lists(st.tuples(st.floats(0, 1), st.booleans()), min_size=1, max_size=50))
def test_ece_is_between_0_and_1(pairs: list[tuple[float, bool]]) -> None:
    values, good = zip(*pairs, strict=True)
    assert 0.0 <= expected_calibration_error(list(values), list(good)) <= 1.0


def test_calibration_counts_each_band_and_the_empty_result_sets() -> None:
    judged = [
        Judged(0.9, Band.GOOD, True),
        Judged(0.95, Band.GOOD, True),
        Judged(0.88, Band.GOOD, False),
        Judged(0.5, Band.POSSIBLE, True),
        Judged(0.1, Band.NONE, False),
        Judged(0.2, Band.NONE, True),
        Judged(None, None, False),  # conservative returned nothing
    ]
    found = calibrate(judged)
    assert found is not None
    assert found.results == 6 and found.good == 4 and found.empty == 1
    assert found.bands == {
        Band.GOOD: BandCount(3, 2),
        Band.POSSIBLE: BandCount(1, 1),
        Band.NONE: BandCount(2, 1),
    }
    assert found.good_match_precision() == pytest.approx(2 / 3)
    assert found.no_match_precision() == pytest.approx(1 / 2)
    assert found.mean_confidence == pytest.approx(3.53 / 6)
    values = [0.9, 0.95, 0.88, 0.5, 0.1, 0.2]
    labels = [True, True, False, True, False, True]
    assert found.ece == pytest.approx(expected_calibration_error(values, labels))
    view = calibration_view(found)
    assert view["bands"]["good match"] == {"results": 3, "with_relevant_in_top5": 2}
    assert view["empty"] == 1 and view["bins"] == 10
    lines = calibration_lines(view)
    assert lines[0].startswith(
        f"calibration: ECE {found.ece:.4f} (10 equal-width bins; a calibrated confidence"
        f" shows {found.chance_ece:.4f} here)"
    )
    assert view["chance_ece"] == pytest.approx(chance_ece(values), abs=1e-6)
    older = {key: value for key, value in view.items() if key != "chance_ece"}
    assert calibration_lines(older)[0].startswith(
        f"calibration: ECE {found.ece:.4f} (10 equal-width bins), "
    )
    assert "  good match: 3 result sets, 66.7% (2/3) with a relevant hit in the top 5" in lines
    assert (
        "  no good match: 2 result sets, 50.0% (1/2) without a relevant hit in the top 5" in lines
    )
    assert lines[-1] == "  nothing returned (no confidence): 1 result sets"
    assert calibrate([Judged(None, None, True)]) is None  # a target that gives no confidence


def test_a_good_result_set_has_a_relevant_hit_in_its_first_five() -> None:
    assert good_in_top(["a", "b", "c", "d", "e", "f"], ["e"])
    assert not good_in_top(["a", "b", "c", "d", "e", "f"], ["f"])
    assert not good_in_top([], ["a"])


def test_the_ece_of_chance_shrinks_as_the_set_grows_and_is_0_for_certain_values() -> None:
    # labels drawn from values of 0 and 1 always agree with them
    assert chance_ece([0.0, 1.0, 1.0, 0.0]) == 0.0
    assert chance_ece([]) == 0.0
    # a fair coin: one result set's bin is always 0.5 off; 1,000 of them about 0.5 / sqrt(1000)
    assert chance_ece([0.5]) == pytest.approx(0.5)
    small, large = chance_ece([0.7] * 30), chance_ece([0.7] * 1000)
    assert 0.05 < small < 0.15 and 0.0 < large < 0.03
    assert chance_ece([0.7] * 30) == small  # seeded: the same figure on every run


@given(st.lists(st.floats(0, 1), min_size=1, max_size=40))
def test_the_ece_of_chance_is_an_ece(values: list[float]) -> None:
    assert 0.0 <= chance_ece(values, draws=50) <= 1.0
