"""tools/variant_matrix.py: every form of a unit the SPEC allows fails nothing in `run` or conform."""
from __future__ import annotations

import pytest

from tools import variant_matrix


@pytest.mark.parametrize("variant", ["", *variant_matrix.SHOWDOWN_FORMS])
def test_every_form_of_the_showdown_fails_nothing(variant):
    row = variant_matrix.measure("showdown", variant)
    assert not variant_matrix.bad(row), row
    assert row["verdict"] == "CONFORMS" and row["passed"] > 30, row


def test_a_unit_that_fails_is_a_bad_row():
    row = variant_matrix.measure("launcher", "card_capacity=60")     # LA-14: 98 cards, not 60
    assert variant_matrix.bad(row) and row["failed"] >= 1 and row["verdict"] == "DOES NOT CONFORM", row


def test_the_matrix_names_each_optional_capability_and_form():
    assert variant_matrix.variants("launcher") == ["", "rng=python", "timer_lag_us=2000",
                                                   *(f"without={c}" for c in variant_matrix.OPTIONAL)]
    assert "false_start_launch=0" in variant_matrix.variants("showdown")
