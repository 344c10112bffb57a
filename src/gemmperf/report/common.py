"""What every page of a GPU's report shares: the pages' file names and menu, the order
models are shown in, and the sentence for a GPU with nothing measured."""

from __future__ import annotations

from ..models import MODELS, sol, sync, ws_persistent, ws_stage
from ..tables import CONFIG_KEY, CORRECTED_MODEL, FITTED_CORRECTED_MODEL, FITTED_MODEL
from .html import Page

# the pages' file names (the one place that names them) and their menu, in order
OVERVIEW, ACCURACY, ERRORS, ROOFLINE, TIMELINE, TILINGS, KERNELS = (
    "index.html", "accuracy.html", "errors.html", "roofline.html", "timeline.html", "tilings.html", "kernels.html")
NAV = [
    (OVERVIEW, "Overview"),
    (ACCURACY, "Predicted vs measured"),
    (ERRORS, "Where the errors are"),
    (ROOFLINE, "Roofline"),
    (TIMELINE, "Timeline"),
    (TILINGS, "Tilings"),
    (KERNELS, "Kernels"),
]
# the order models are shown in: the workflow's predictions, and the out-of-sample ones
# (where ws-pipelined appears with its constants fitted per fold)
PRED_MODELS = [*MODELS, CORRECTED_MODEL]
OOS_MODELS = [sol.NAME, sync.NAME, ws_stage.NAME, ws_persistent.NAME, FITTED_MODEL, FITTED_CORRECTED_MODEL]
MEASURED_KEY = [*CONFIG_KEY, "testlist"]  # one measured configuration of one testlist
SCATTER_PER_MODEL = 1000
NOTHING_MEASURED = (
    "Nothing was measured for this GPU: predictions only. The model parameters are "
    "descriptor defaults, so there is no accuracy to report here."
)


def models_in(present, order):
    """The models of ``present`` in ``order``, then any others by name."""
    return [m for m in order if m in set(present)] + sorted(set(present) - set(order) - {None})


def none(page: Page, text: str) -> None:
    """A grey box saying what is not there and why."""
    page.p(text, cls="none")
