"""bench.refusal_heldout's arithmetic: the AUC it reports and the threshold it picks on tune."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # bench/ is a package of the repository, not of the installed project
    sys.path.insert(0, str(REPO))
from bench import refusal_heldout  # noqa: E402


def test_auc_is_the_chance_an_answerable_question_scores_higher_ties_half():
    assert refusal_heldout.auc([0.9, 0.8], [0.7]) == 1.0
    assert refusal_heldout.auc([0.7], [0.9, 0.8]) == 0.0
    assert refusal_heldout.auc([0.8, 0.6], [0.7, 0.8]) == pytest.approx((0.5 + 1 + 0 + 0) / 4)
    assert refusal_heldout.auc([], [0.7]) is None


@pytest.mark.parametrize("n", [1, 19, 20, 28, 40])
def test_the_threshold_is_the_highest_that_refuses_at_most_5_percent(n):
    values = [0.80 + i / 1000 for i in range(n)]
    floor = refusal_heldout.floor_for(values)
    refused = sum(1 for v in values if v < floor)
    assert refused <= 0.05 * n
    higher = min(v for v in values if v > floor) if any(v > floor for v in values) else None
    if higher is not None:  # one step higher refuses too many
        assert sum(1 for v in values if v < higher) > 0.05 * n
