"""evaluate()'s inputs as one typed object: arrays of one shape, constants, switches, grid."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ...errors import UserError
from .constants import CONSTANTS, PipelinedConstants
from .geometry import Grid


@dataclass(frozen=True)
class Switches:
    """One switch per effect function of effects.py, epilogue.py and kshare.py, all on by default; off, an effect
    falls back to the plain ws-stage / ws-persistent assumption so its contribution shows."""

    pipelining: bool = True
    bandwidth_sharing: bool = True
    l2_reuse: bool = True
    smem_limit: bool = True
    padding: bool = True
    sm_load_cap: bool = True
    row_alignment: bool = True
    ring_latency: bool = True
    boundary_fill: bool = True
    coalesced_reads: bool = True
    consumer_warpgroups: bool = True
    tma_store: bool = True
    pingpong_overlap: bool = True
    split_k_fixup: bool = True
    stream_k_fixup: bool = True
    cluster_lockstep: bool = True
    cluster_sync: bool = True
    ring_jitter: bool = True
    epilogue_threads: bool = True
    split_k_overlap: bool = True
    stream_k_offsets: bool = True
    oob_multicast: bool = True
    dram_writes: bool = True
    multicast_reads: bool = True
    stream_k_lookup: bool = True
    ring_queue: bool = True
    split_row_latency: bool = True
    store_exit: bool = True
    slot_release: bool = True
    ring_saturation: bool = True
    partial_stores: bool = True
    issue_wait: bool = True
    fixup_batches: bool = True
    k_tail_fill: bool = True
    hit_latency: bool = True
    second_warpgroup: bool = True
    power_clock: bool = True
    shared_sectors: bool = True
    tma_engine: bool = True
    stream_k_ceiling: bool = True
    engine_rows: bool = True

    @classmethod
    def of(cls, *sources) -> Switches:
        """Switches from mappings of effect name -> bool (later ones win); unknown names fail."""
        on = {}
        for source in sources:
            for name, value in (source or {}).items():
                if name not in EFFECTS:
                    raise UserError(f"ws-pipelined: unknown effect {name!r}; known: {', '.join(EFFECTS)}")
                on[name] = bool(value)
        return cls(**on)


EFFECTS = tuple(f.name for f in dataclasses.fields(Switches))
INT_INPUTS = ("m", "n", "k", "tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n", "group_m",
              "persistent_ctas", "cluster_ctas", "epilogue", "schedule", "split_k", "stream_k")
# the integer codes of the ``epilogue`` and ``schedule`` inputs
EPILOGUE_CODES = {"direct": 0, "tma": 1}
SCHEDULE_CODES = {"cooperative": 0, "pingpong": 1}


def consumer_warpgroups(tile_m, schedule):
    """``Inputs.consumer_warpgroups`` of arrays (schedule 1: ping-pong), as the kernel
    launches them (kernels/hopper.py, ``WsHopper.consumer_warpgroups``)."""
    return np.where((schedule == 1) | (tile_m >= 128), 2, 1)


def accumulators(tile_m, tile_n, schedule):
    """``Inputs.accumulators`` of arrays (schedule 1: ping-pong): a cooperative tile's
    rows are shared by its consumer warpgroups, a ping-pong warpgroup holds a whole tile."""
    sharing = np.where(schedule == 1, 1, consumer_warpgroups(tile_m, schedule))
    return tile_m / sharing * tile_n / 128.0


@dataclass(frozen=True)
class Inputs:
    """One element per configuration row; every array has the same shape."""

    m: np.ndarray
    n: np.ndarray
    k: np.ndarray
    tile_m: np.ndarray
    tile_n: np.ndarray
    tile_k: np.ndarray
    stages: np.ndarray  # ring depth B
    cluster_m: np.ndarray
    cluster_n: np.ndarray
    group_m: np.ndarray  # tile (unit) rows per group of the grouped raster
    persistent_ctas: np.ndarray  # cap on a persistent grid (0: none)
    cluster_ctas: np.ndarray  # CTAs that fit at once in clusters of this size (GPU.ctas_in_clusters)
    epilogue: np.ndarray  # EPILOGUE_CODES
    schedule: np.ndarray  # SCHEDULE_CODES
    split_k: np.ndarray  # K splits per tile (1: none)
    stream_k: np.ndarray  # 1: stream-K (persistent CTAs share the (unit, k-block) iterations), else 0
    persistent: np.ndarray  # bool
    raster: np.ndarray  # geometry.RASTER_IDS code
    in_bytes: np.ndarray
    out_bytes: np.ndarray
    sf_bytes_per_elem: np.ndarray  # block-scale bytes per input element
    sms: np.ndarray
    l2_bytes: np.ndarray
    t_init_us: np.ndarray
    t_epilogue_us: np.ndarray
    load_bytes_per_us: np.ndarray
    load_latency_us: np.ndarray
    math_flops_per_us: np.ndarray
    math_latency_us: np.ndarray
    l2_hit_rate: np.ndarray
    c: PipelinedConstants
    on: Switches
    grid: Grid

    @property
    def shape(self) -> tuple[int, ...]:
        return np.shape(self.m)

    @property
    def consumer_warpgroups(self) -> np.ndarray:
        """Consumer warpgroups in a CTA: two for ping-pong (each takes whole tiles in turn)
        and for a cooperative tile of 128 rows or more (the two share it), one for a
        cooperative 64-row tile."""
        return consumer_warpgroups(self.tile_m, self.schedule)

    @property
    def accumulators(self) -> np.ndarray:
        """fp32 accumulators a consumer thread holds, WG_M * TN / 128: WG_M the rows one
        consumer warpgroup holds, TM / 2 for a cooperative 128- or 256-row tile (two
        warpgroups), TM for a 64-row tile (one) and for ping-pong (each a whole tile)."""
        return accumulators(self.tile_m, self.tile_n, self.schedule)

    @classmethod
    def of(cls, named: dict, on: Switches, grid: Grid | None = None) -> Inputs:
        """From the arrays of INPUTS by name (numpy, broadcast together) and the switches;
        ``grid``: ``grid_of`` the same arrays (None: computed here)."""
        missing = [name for name in INPUTS if name not in named]
        if missing:
            raise TypeError(f"ws-pipelined evaluate(): missing input(s) {', '.join(missing)}")
        values = dict(zip(INPUTS, np.broadcast_arrays(*(np.asarray(named[name]) for name in INPUTS))))
        for name in INT_INPUTS + ("raster", "sms"):
            values[name] = values[name].astype(np.int64)
        values["persistent"] = values["persistent"].astype(bool)
        c = PipelinedConstants(**{name: values.pop(name) for name in CONSTANTS})
        if grid is None:
            grid = Grid.of(values)
        elif np.shape(grid.tiles) != np.shape(values["m"]):
            raise ValueError(f"ws-pipelined evaluate(): grid of shape {np.shape(grid.tiles)} for inputs of "
                             f"shape {np.shape(values['m'])}")
        return cls(**values, c=c, on=on, grid=grid)


def grid_of(named: dict) -> Grid:
    """The tile grid, wave panels and request bytes of evaluate()'s named input arrays:
    sizes, tiling, raster, SMs, element bytes, no parameter, so one grid serves every
    evaluation that varies the parameters (a fit)."""
    return Inputs.of(named, Switches()).grid


ARRAYS = tuple(f.name for f in dataclasses.fields(Inputs) if f.name not in ("c", "on", "grid"))
INPUTS = ARRAYS + CONSTANTS
