"""core.views.screening: failure coverage by budget, thumbnails."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from core.views.screening import coverage_by_budget, thumbnail_uri


def test_coverage_by_budget_averages_conditions_with_failures():
    rows = []
    for condition, n_fail, cov in (("a", 4, 0.5), ("b", 2, 1.0), ("c", 0, np.nan)):
        for score in ("U", "S"):
            for budget in (0.1, 0.2):
                rows.append(
                    {
                        "condition": condition,
                        "score": score,
                        "budget": budget,
                        "n_fail": n_fail,
                        "coverage": cov * budget * 10 if score == "U" else cov,
                        "ceiling": 1.0,
                        "random": budget,
                    }
                )
    metrics = pd.DataFrame(rows)
    c = coverage_by_budget(metrics)
    budgets, curves, ceiling, random = c.budgets, c.curves, c.ceiling, c.random
    assert ceiling.tolist() == [1.0, 1.0]
    assert budgets.tolist() == [0.1, 0.2]
    assert curves["U"].tolist() == pytest.approx([0.75, 1.5])
    assert curves["S"].tolist() == pytest.approx([0.75, 0.75])
    assert random.tolist() == [0.1, 0.2]
    one = coverage_by_budget(metrics, condition="b").curves
    assert one["S"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="No image failed"):
        coverage_by_budget(metrics, condition="c")


def test_thumbnail_uri_round_trips():
    import base64
    import io

    from PIL import Image

    img = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    uri = thumbnail_uri(img, scale=2)
    assert uri.startswith("data:image/png;base64,")
    back = np.asarray(Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))))
    np.testing.assert_array_equal(back[::2, ::2], img)
    with pytest.raises(ValueError, match="2-D uint8"):
        thumbnail_uri(img.astype(float))
