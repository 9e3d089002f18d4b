"""Constants and helpers shared by the view tests (the fixtures are in conftest.py)."""

from __future__ import annotations

import pandas as pd

#: The two demo-pool models the upload fixtures keep (as in tests/app/test_uploads.py).
MODELS = ["cnn-w8", "logreg-c1"]


def csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode()
