"""Performance models: one module per model, all with the same interface.

``MODELS[name]`` is a module (or package) with NAME, LIMITERS, INPUTS, a vectorized numpy
``evaluate(**arrays) -> dict`` and ``predict(configs, params) -> polars.DataFrame``
(input columns plus predicted_us, limiter and ``<phase>_us`` breakdown columns).

- "sol": speed of light, max(math, DRAM).
- "sync": synchronous tiled kernel (paper 2.1.2).
- "ws-stage": the paper's warp-specialized stage recurrence, closed form + simulator.
- "ws-persistent": gemm-model's persistent warp-specialized phase model.
- "ws-pipelined": the ws-hopper kernel as written: its K loop pipelined through the
  ring, waves sharing DRAM and L2, and eleven switchable effects (a package; its
  constants beyond ``params.PARAM_NAMES`` are a typed ``PipelinedConstants``).

``columns`` turns a configuration table into a model's input arrays and its result back
into columns.
"""

from __future__ import annotations

from ..errors import UserError
from . import sol, sync, ws_persistent, ws_pipelined, ws_stage

MODELS = {mod.NAME: mod for mod in (sol, sync, ws_stage, ws_persistent, ws_pipelined)}


def get_model(name: str):
    if name not in MODELS:
        raise UserError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    return MODELS[name]


def predict(configs, params, model: str):
    """Predict every row of ``configs`` (a polars DataFrame) with the named model."""
    return get_model(model).predict(configs, params)


__all__ = ["MODELS", "get_model", "predict"]
