"""Performance models: one module per model, all with the same interface.

``MODELS[name]`` is a module (or package) with NAME, LIMITERS, INPUTS, a vectorized numpy
``evaluate(**arrays) -> dict`` and ``predict(configs, params) -> polars.DataFrame``
(input columns plus predicted_us, limiter and ``<phase>_us`` breakdown columns).

- "sol": speed of light, max(math, DRAM).
- "sync": synchronous tiled kernel (paper 2.1.2).
- "ws-stage": the paper's warp-specialized stage recurrence, closed form + simulator.
- "ws-persistent": gemm-model's persistent warp-specialized phase model.
- "ws-pipelined": the ws-hopper kernel as written: its K loop pipelined through the
  ring, waves sharing DRAM and L2, and fifteen switchable effects (a package; its
  constants beyond ``params.PARAM_NAMES`` are a typed ``PipelinedConstants``).

Only ws-pipelined sees the configuration dimensions beyond the tile and the ring (ws-persistent
sees clusters too): sol, sync, ws-stage and ws-persistent predict a row with another
epilogue, schedule, raster group, persistent grid, K split (``split_k``) or stream-K as
the same tiling without them (their kernels, the paper's and gemm-model's, have none).
sol is a bound either way: sharing K among CTAs changes neither the FLOPs nor the DRAM
bytes (the partial tiles stay in L2). Every model takes C's bytes from ``out_dtype``
(fp8 writes bf16).

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
