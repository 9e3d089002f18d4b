"""The dashboard's trust offer: each type with its module and kind, and never a type that is
never trusted (core.tabular.never_trusted), in the offer or in the upload form."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import skops.io as sio
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer
from skops_files import SYSTEM, _harm, _pipeline


# --------------------------------------------------------------------------------------------
# The dashboard's trust offer
# --------------------------------------------------------------------------------------------
def _offer_script(types, data, name):
    from ui.own_model import _trust_offer
    from ui.state import TrustOffer, own_model_state

    own_model_state().offer = TrustOffer(
        digest="d", types=list(types), source={"files": {"model": (name, data)}, "trust": []}
    )
    _trust_offer(None)


def _offer(types, data):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_offer_script, args=(types, data, "model.skops"), default_timeout=60)
    at.run()
    assert not at.exception
    return at


def test_the_dashboard_trust_offer_names_each_types_module_and_kind():
    from sklearn.tree import DecisionTreeClassifier

    tree = DecisionTreeClassifier(max_depth=2).fit([[0], [1], [2], [3]], [0, 1, 0, 1])
    data = sio.dumps(Pipeline([("log", FunctionTransformer(func=np.expm1)), ("m", tree)]))
    types = [t for t in sio.get_untrusted_types(data=data) if t != "numpy.dtype"]
    at = _offer(types, data)
    (warning,) = [w.value for w in at.warning]
    assert "`sklearn.tree._tree.Tree` — a class in module sklearn.tree._tree" in warning
    assert "runs code" in warning
    assert [b.label for b in at.button] == ["Trust this type and retry"]


def test_the_dashboard_never_offers_a_never_trusted_type_for_trust():
    data = sio.dumps(_pipeline(os.system))
    at = _offer([SYSTEM], data)
    assert not at.button, "no trust button"
    (error,) = [e.value for e in at.error]
    assert f"`{SYSTEM}` — a function in module {os.system.__module__}: it can reach the operating system" in error
    assert "never trusted" in error and "--trust" not in error


def _open_script(data, test_csv):
    import streamlit as st

    from ui.own_model import _check_and_open
    from ui.state import own_model_state

    source = {
        "kind": "upload",
        "target": "y",
        "trust": [],
        "feature_order": None,
        "files": {"model": ("evil.skops", data), "test": ("test.csv", test_csv), "train": None},
    }
    _check_and_open(source)
    state = own_model_state()
    st.markdown(f"offer={state.offer is not None}")
    st.markdown(f"error={state.error.message if state.error else None}")
    st.markdown(f"opened={state.audit is not None}")


def test_the_dashboard_form_says_never_trusted_and_offers_nothing(tmp_path):
    from streamlit.testing.v1 import AppTest

    frame = pd.DataFrame({"a": np.arange(20.0), "y": ["no", "yes"] * 10})
    data, _, harmed = _harm("os.system", tmp_path)
    at = AppTest.from_function(_open_script, args=(data, frame.to_csv(index=False).encode()), default_timeout=60)
    at.run()
    assert not at.exception
    texts = [m.value for m in at.markdown]
    assert "offer=False" in texts and "opened=False" in texts
    (error,) = [t for t in texts if t.startswith("error=")]
    assert f"evil.skops holds 1 type(s) that are never trusted: `{SYSTEM}` (a function in module" in error
    assert "the dashboard cannot trust it" in error and "--trust" not in error
    assert not harmed()
