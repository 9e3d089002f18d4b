"""Images under perturbation: what produces the paired records of SPEC Part B.

The image wing sits one layer above the paired maths (:mod:`core.paired`, which never imports
it): image perturbations (:mod:`~core.imaging.corruptions`: the 9 corruptions, the 18 natural
transforms; :mod:`~core.imaging.recapture_sim`: simulated screen and print re-captures), the
seeded Fashion-MNIST demo pool (:mod:`~core.imaging.demo`, torch and scikit-learn load lazily)
and its precomputed screening scores (:mod:`~core.imaging.demo_screening`), labelled image
inputs (:mod:`~core.imaging.images`), the ONNX probe of a user's classifier
(:mod:`~core.imaging.probe`, command ``python -m core probe`` in :mod:`~core.cli.imaging`) and
the checks that the model fits the images (:mod:`~core.imaging.fit`: resampling, channel
conversion, clean accuracy near chance).
"""

from core.imaging.corruptions import (
    CORRUPTIONS,
    NATURAL_TRANSFORMS,
    SEVERITY_PARAMETERS,
    RecaptureCondition,
    natural_transform,
    recapture_grid,
    simulate_recapture,
)
from core.imaging.demo import (
    DEFAULT_DIR,
    MODEL_SPECS,
    DemoPool,
    build_demo_pool,
    load_demo_models,
    load_demo_pool,
    reevaluate_demo_pool,
    render_condition,
    save_demo_pool,
)
from core.imaging.recapture_sim import SimulatedRecapture, recapture_conditions, simulate

__all__ = [
    "CORRUPTIONS",
    "DEFAULT_DIR",
    "DemoPool",
    "MODEL_SPECS",
    "NATURAL_TRANSFORMS",
    "RecaptureCondition",
    "SEVERITY_PARAMETERS",
    "SimulatedRecapture",
    "build_demo_pool",
    "load_demo_models",
    "load_demo_pool",
    "natural_transform",
    "recapture_conditions",
    "recapture_grid",
    "reevaluate_demo_pool",
    "render_condition",
    "save_demo_pool",
    "simulate",
    "simulate_recapture",
]
