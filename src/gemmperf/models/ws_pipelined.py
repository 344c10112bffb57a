"""ws-pipelined: the warp-specialized kernel with its K loop pipelined through the ring.

Persistent or not, one CTA per SM; each CTA runs whole output tiles. Beyond
``ws-persistent`` (gemm-model's phases) this model follows the ws-hopper kernel as it is
written: a producer issues TMA loads of A and B k-blocks into a ring of B = ``stages``
buffers; the consumer warpgroups run wgmma on them and, for the same tile, the epilogue
(registers -> global stores). Eleven effects, each with a switch (keyword flags of
``evaluate`` / ``predict``, or ``model_options={...}``); switched off, an effect falls
back to the plain ``ws-stage`` / ``ws-persistent`` assumption so its contribution shows.

Notation: TM, TN, TK tile; b, ob input/output bytes; S = ceil(K/TK); tiles_m =
ceil(M/TM), tiles_n = ceil(N/TN); T = tiles; P = SMs (CTAs per wave); full waves
F = T // P, remainder R = T % P; a wave has ``a`` active CTAs (P, or R for the last).
Per-k-block bytes a CTA requests: Bs = (TM/cn + TN/cm)*TK*b (cluster multicast).

1. ``l2_reuse`` -- L2 hit rate h of a wave from the raster order. The a consecutive tile
   indices of a wave cover r_m distinct A row panels and r_n distinct B column panels
   (row raster: r_n = min(a, tiles_n), r_m = rows spanned; column: transposed; grouped:
   GROUP_M = 8 rows of tiles walked column by column). Ideal hit rate
       h0 = 1 - (r_m*TM + r_n*TN) / (a*(TM + TN))
   kept only while the wave's live window fits the effective L2:
       W2 = (r_m*TM + r_n*TN) * TK * b * l2_window_kblocks,   L2e = l2_effective_fraction * L2
       h  = h0 * min(1, L2e / W2)
   The first reads of panels the previous wave also read (p + r - u of them, with p, r, u
   the panels of the previous wave, this wave and both) hit with the share
   min(1, L2e / (u_m*TM + u_n*TN)*K*b): everything the two waves stream over K must fit
   (measured: non-persistent row raster at K = 1536 re-reads B from L2, not DRAM; full
   waves average the first, which has no predecessor, with the later ones);
   and when A and B fit L2e together, at least the compulsory-only rate
       h >= 1 - (M + N)*K*b / (T*(TM + TN)*S*TK*b).
   Off: h = ``l2_hit_rate`` (the global knob, 0 by default).
2. ``bandwidth_sharing`` -- DRAM and L2 bandwidth are shared by the a CTAs of the wave:
       x(a) = max(a*Bs*(1 - h) / dram_eff_bytes_per_us, L2w(a) / l2_bytes_per_us)
   with L2w(a) = a*Bs the bytes the L2 serves per k-block (effect 10 lowers it; effect 7
   adds the split rows' requests)
   Off: x = Bs / load_bytes_per_us (each CTA has its own fitted share, as in ws-stage).
3. ``smem_limit`` -- shared-memory bandwidth (the DPP note's request counting). Per
   k-block the ring is written by TMA, (TM + TN)*TK*b bytes, and read by wgmma: each
   m64nTNk16 instruction reads its 64 x 16 A slice and the whole TN x 16 B slice, so
   B is read TM/64 times: reads = TM*TK*b + (TM/64)*TN*TK*b. Requests are 128-byte
   wavefronts; the SM serves ``smem_bytes_per_us`` bytes (128 B/clk by default):
       T_SMEM = (writes + reads) / smem_bytes_per_us
   The consumer's stage time is Tc = max(T_MATH, T_SMEM) with
   T_MATH = 2*TM*TN*TK / math_flops_per_us + math_latency_us. Off: Tc = T_MATH.
4. ``pipelining`` -- the K loop of a tile through the ring. A buffer's cycle is load
   latency + transfer + multiply, and B buffers rotate, so the steady period is the
   max-plus cycle mean
       Pk = max(Tc, x, (lat_ring + x + Tc) / B)   (lat_ring: effect 8)
   and the loop of one tile takes fill + (S - 1)*Pk + Tc with fill = load_latency_us + x.
   Off: the whole K extent is one block (gemm-model): loop = fill + max(S*x, S*Tc).
5. ``padding`` -- sizes that are not tile multiples. The kernel computes whole tiles:
   wgmma and shared memory work on padded tiles (S = ceil(K/TK) and full-tile stage
   times), while TMA skips out-of-bounds bytes, so a CTA's requested bytes scale by the
   useful share u_ab = (M/(tiles_m*TM)*TM + N/(tiles_n*TN)*TN)/(TM + TN) * K/(S*TK);
   and when N % 8 != 0 the epilogue falls back to 2-byte stores: store time x
   ``scalar_store_factor`` per SM, and at least a*TM*TN*ob / ``scalar_l2_bytes_per_us``
   for the wave (partial-sector writes share the L2's request rate; measured 2047^3 vs
   2048^3, 128x256 tiles: 32 CTAs add 14 us per tile, 128 CTAs 28 us).
   Off: fill and K loop scale by the useful fraction
   u = M*N*K / (tiles_m*TM * tiles_n*TN * S*TK) (an idealized kernel that wastes
   nothing), bytes are not reduced, the epilogue is always vectorized.
   ``padding_waste`` = 1 - u.

6. ``sm_load_cap`` -- one SM's TMA path moves whole boxes (zero-fill included):
   x >= Bs / sm_load_bytes_per_us.
7. ``row_alignment`` -- A and B rows are pad_k(K) = ceil(K/8)*8 elements apart; when that
   pitch is not a multiple of the 128-byte line, a box row straddles two lines for all
   but a share gcd(pitch, 128)/128 of the rows, and off its 32-byte sectors for all but
   a share gcd(pitch, 32)/32, so the shared L2's request-bound term (the L2 term of 2;
   not one SM's TMA path of 6: 1000^3 with 64 tiles was 1.4x too slow that way) counts,
   per box row,
       lines = 1 + line_split_cost*(1 - gcd(p,128)/128) + sector_split_cost*(1 - gcd(p,32)/32)
   (both fitted, ~0.4 and ~1.5: K = 3000, pitch 16 mod 32, 1.8x; K = 2000, 32-byte
   aligned, 1.3x; K = 4096 or 2047, padded to 2048, 1). Off: lines = 1.
8. ``ring_latency`` -- a ring slot's round trip (consumer releases, the producer's
   mbarrier wait wakes, TMA issues, the load crosses a loaded L2/NoC, complete_tx wakes
   the consumer) is longer than the microbenchmarks' load latency: the latency term of
   the steady period uses lat_ring = load_latency_us + ring_extra_latency_us (fitted,
   default 0.5 us), Pk = max(Tc, x, (lat_ring + x + Tc)/B); the fill keeps
   load_latency_us. This is what makes 6 stages beat 4 on load-bound 64-row tiles
   (6144^3 64x64 persistent: 1279 vs 1623 us). Off: lat_ring = load_latency_us.
9. ``boundary_fill`` -- a TMA box that overhangs M or N takes the boundary-check path,
   zero-filling its out-of-bounds rows slowly (DeepGEMM issue #35 reports the same on
   H800). Measured (decode shapes, M = 1..64): at M = 1 a 256-row tile runs ~2x slower
   per k-block than a 64-row one although both load the same useful bytes, deeper rings
   help, and the extra round trip follows the wave's zero-filled rows in flight (128
   CTAs x 63 rows and 64 CTAs x 127 rows both add ~1.25 us). With o = the tile-average
   overhanging rows of a CTA's A and B boxes per k-block,
       lat_oob(a) = r * oob_row_us / (1 + r / oob_sat_rows),   r = a * o
   (both fitted: ~1.8e-4 us per row, levelling off past ~4e4 rows, about a full wave of
   256-row tiles at M = 1: with the linear form, decode shapes with 256x64 tiles over
   two waves were predicted 1.26x too slow) is added to the fill and to the latency
   term of the period:
       Pk = max(Tc, x, (lat_ring + lat_oob + x + Tc) / B).
   Off: lat_oob = 0.

10. ``coalesced_reads`` -- reads of one panel k-block that CTAs close in launch order
   issue at the same time are served once by the L2; panels shared only by CTAs far
   apart in launch order are read by each. With d_m, d_n the launch-order distance
   between consecutive users of an A / B panel (row raster: A 1, B tiles_n; column:
   transposed; grouped: B 1, A GROUP_M), c = exp(-(d - 1) / coalesce_distance), and
   r_m, r_n the wave's distinct panels:
       L2w(a) = [(c_m*r_m + (1 - c_m)*a)*TM/cn + (c_n*r_n + (1 - c_n)*a)*TN/cm]*TK*b*u_ab
              + a*Bs*u_ab*(lines - 1)         (split rows: each CTA's own requests)
   Measured (benchmarks/raster_probe.py, 6144^3): 256x64 tiles run 871 us in row
   raster (the 256-row A panel read together by neighbours) and 1095-1454 us in grouped
   and column raster (A shared only 8 or 24 CTAs apart); 64x256 the reverse (723-851
   vs 1217-1368). Fitted on every development row: coalesce_distance 2.6, and the L2
   rate falls from an implausible ~14 TB/s (every request counted) to 6.8 TB/s.
   Off: L2w(a) = a*Bs*lines.
11. ``consumer_warpgroups`` -- a 64-row tile has one consumer warpgroup, which keeps the
   tensor cores busy only ``one_wg_math_share`` of the time (fitted ~0.73; 128- and
   256-row tiles have two): T_MATH = 2*TM*TN*TK / (math_flops_per_us * share). Small
   shapes run 64x128 tiles ~9% slower than 128x64 (same work, same bytes); without it
   the two tie, and the per-shape rank correlation (grouped CV) is 0.85, with it 0.98.
   Off: share 1.

Epilogue of one tile (consumer warps, after the tile's last multiply):
    E(a) = t_epilogue_us + max(TM*TN*ob*f / store_bytes_per_us, a*TM*TN*ob / dram_eff_bytes_per_us,
                               [N % 8] a*TM*TN*ob / scalar_l2_bytes_per_us)
with f = scalar_store_factor if N % 8 else 1.

Whole kernel, with Lk(a) = (S-1)*Pk(a) + Tc (the loop after its fill):
  persistent (grid = min(T, P)): the producer prefetches the next tile's ring during the
  epilogue, so only the part of the next fill longer than the epilogue is exposed:
      t = t_init + fill(a1) + sum over waves [Lk(a) + E(a) + tile_overhead_us]
            + (W - 1) * max(fill - E, 0)
  non-persistent (grid = T): each wave's CTAs start cold:
      t = t_init + sum over waves [cta_launch_us + fill(a) + Lk(a) + E(a)]
  with W = F + [R > 0] waves (F full waves with a = P, then R CTAs).

Constants beyond ``params.PARAM_NAMES`` (``CONSTANTS``) come from ``Params.extra`` when
present, else descriptor defaults (``default_constants``): dram_eff_bytes_per_us (0.9 x the
datasheet), l2_bytes_per_us (2 x DRAM datasheet), smem_bytes_per_us (128 B/clk),
store_bytes_per_us (64 B/clk), l2_effective_fraction (0.5: one L2 partition),
l2_window_kblocks (16), scalar_store_factor (4), tile_overhead_us (0.05),
cta_launch_us (0.5), sm_load_bytes_per_us (48 B/clk), l2_skew_kblocks (1),
line_split_cost (1), sector_split_cost (1), ring_extra_latency_us (0.5), oob_row_us (1.5e-4),
scalar_l2_bytes_per_us (128 B/clk), oob_sat_rows (3e4), coalesce_distance (2),
one_wg_math_share (0.9).

Limiter of the first wave's steady state: "load" (x), "l2" (x from the L2 term),
"math", "smem", "latency" (the (lat + x + Tc)/B term), "epilogue" (E exceeds the loop).
Columns: predicted_us, limiter, init_us, fill_us, mainloop_us, epilogue_us,
overhead_us, stage_load_us, stage_math_us, stage_smem_us, stage_period_us (first wave),
full_wave_period_us (a full wave's, averaged over the waves' L2 hit rates),
l2_hit_rate_est, padding_waste, tiles, waves, last_wave_sms, k_stages.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from ..errors import UserError
from ..params import ParamSet
from . import columns

NAME = "ws-pipelined"
LIMITERS = ("load", "l2", "math", "smem", "latency", "epilogue")
EFFECTS = ("pipelining", "bandwidth_sharing", "l2_reuse", "smem_limit", "padding", "sm_load_cap", "row_alignment",
           "ring_latency", "boundary_fill", "coalesced_reads", "consumer_warpgroups")
RASTER_CODES = {"row": 0, "column": 1, "grouped": 2}
GROUP_M = 8  # kernels/columns.py GROUP_M
CONSTANTS = ("dram_eff_bytes_per_us", "l2_bytes_per_us", "smem_bytes_per_us", "store_bytes_per_us",
             "l2_effective_fraction", "l2_window_kblocks", "scalar_store_factor",
             "tile_overhead_us", "cta_launch_us", "sm_load_bytes_per_us", "l2_skew_kblocks",
             "line_split_cost", "sector_split_cost", "ring_extra_latency_us", "oob_row_us",
             "scalar_l2_bytes_per_us", "oob_sat_rows", "coalesce_distance", "one_wg_math_share")
INPUTS = ("m", "n", "k", "tile_m", "tile_n", "tile_k", "stages", "cluster_m", "cluster_n",
          "persistent", "raster", "in_bytes", "out_bytes", "sf_bytes_per_elem", "sms", "l2_bytes",
          "t_init_us", "t_epilogue_us", "load_bytes_per_us", "load_latency_us",
          "math_flops_per_us", "math_latency_us", "l2_hit_rate") + CONSTANTS


def default_constants(gpu) -> dict[str, float]:
    """Descriptor-derived values of the extra constants (to be fitted on training folds)."""
    clock = gpu.sm_clock_mhz
    dram = gpu.dram_bytes_per_s / 1e6
    return {
        "dram_eff_bytes_per_us": 0.9 * dram,  # achievable share of the datasheet HBM rate
        "l2_bytes_per_us": 2.0 * dram,  # ~6.7 TB/s on H100 (gemmperf microbench copy: 4.3 read + written)
        "smem_bytes_per_us": 128.0 * clock,  # 32 banks x 4 B per clock
        "store_bytes_per_us": 64.0 * clock,  # one SM's global store issue rate
        "l2_effective_fraction": 0.5,  # one L2 partition holds a CTA's near data
        "l2_window_kblocks": 16.0,  # k-blocks of skew between the CTAs of a wave
        "scalar_store_factor": 4.0,  # 2-byte stores instead of 16-byte ones
        "tile_overhead_us": 0.05,  # persistent: per-tile scheduling and zeroing
        "cta_launch_us": 0.5,  # non-persistent: CTA start, barrier init, tensormap prefetch
        "sm_load_bytes_per_us": 48.0 * clock,  # one SM's TMA box rate (L2 -> SM), zero-fill included
        "l2_skew_kblocks": 1.0,  # k-blocks of lag per CTA of launch-order distance
        "line_split_cost": 1.0,  # extra requests of a box row straddling two 128-byte lines
        "sector_split_cost": 1.0,  # extra requests of a box row not on a 32-byte sector
        "ring_extra_latency_us": 0.5,  # a ring slot's round trip beyond the load latency (~1000 clk)
        "oob_row_us": 1.5e-4,  # a wave's zero-filled box row in flight: round-trip latency it adds
        "scalar_l2_bytes_per_us": 128.0 * clock,  # all SMs' 2-byte stores: partial-sector L2 writes
        "coalesce_distance": 2.0,  # launch-order distance over which simultaneous reads merge
        "one_wg_math_share": 0.9,  # tensor-core share one consumer warpgroup sustains
        "oob_sat_rows": 3.0e4,  # zero-filled rows in flight where their added latency levels off
    }


def _options(model_options, flags) -> dict[str, bool]:
    opts = {e: True for e in EFFECTS}
    for source in (model_options or {}, flags):
        for name, value in source.items():
            if name not in EFFECTS:
                raise UserError(f"ws-pipelined: unknown effect {name!r}; known: {', '.join(EFFECTS)}")
            opts[name] = bool(value)
    return opts


# ------------------------------------------------------------------ L2 reuse


def wave_panels(t0, a, tiles_m, tiles_n, raster):
    """Distinct A row panels r_m and B column panels r_n that tiles t0 .. t0+a-1 touch."""
    a = np.maximum(a, 1)
    last = t0 + a - 1
    # row raster: t -> (t // tiles_n, t % tiles_n)
    row_m = last // tiles_n - t0 // tiles_n + 1
    row_n = np.minimum(a, tiles_n)
    # column raster: t -> (t % tiles_m, t // tiles_m)
    col_n = last // tiles_m - t0 // tiles_m + 1
    col_m = np.minimum(a, tiles_m)
    # grouped: groups of GROUP_M tile rows walked column by column
    per_group = GROUP_M * tiles_n
    g0, g1 = t0 // per_group, last // per_group
    rows_g = np.maximum(np.minimum(GROUP_M, tiles_m - g0 * GROUP_M), 1)
    r = t0 - g0 * per_group
    one_m = np.minimum(a, rows_g)
    one_n = (r + a - 1) // rows_g - r // rows_g + 1
    many_m = np.minimum(tiles_m - g0 * GROUP_M, (g1 - g0 + 1) * GROUP_M)
    grp_m = np.where(g1 == g0, one_m, many_m)
    grp_n = np.where(g1 == g0, one_n, tiles_n)
    r_m = np.select([raster == 0, raster == 1], [row_m, col_m], grp_m)
    r_n = np.select([raster == 0, raster == 1], [row_n, col_n], grp_n)
    return np.minimum(r_m, tiles_m), np.minimum(r_n, tiles_n)


def reuse_distance(tiles_m, tiles_n, raster):
    """Launch-order distance between consecutive users of one A panel (d_m) and one B panel (d_n).

    row raster: A shared by neighbours (1), B by the next tile row (tiles_n); column:
    transposed; grouped: B by neighbours in a group column (1), A by the next column of
    the group (rows of the group, <= GROUP_M)."""
    grp = np.maximum(np.minimum(GROUP_M, tiles_m), 1)
    d_m = np.select([raster == 0, raster == 1], [np.ones_like(tiles_m), tiles_m], grp)
    d_n = np.select([raster == 0, raster == 1], [tiles_n, np.ones_like(tiles_n)], np.ones_like(tiles_n))
    return d_m, d_n


def wave_hit_rate(t0, a, tiles_m, tiles_n, raster, tile_m, tile_n, tile_k, in_bytes, l2e,
                  window_kblocks, m, n, k, s, skew_kblocks=0.0):
    """The wave's estimated L2 hit rate (effect 1).

    Per operand: a wave of a CTAs touching r distinct panels hits on a - r of its a panel
    reads, provided the panel's k-block is still in L2 when the next user asks for it.
    Users d CTAs apart in launch order run skew_kblocks * d k-blocks apart, during which
    the wave streams its unique bytes per k-block; the hit share decays as
        f(d) = min(1, L2e / (unique * TK * b * (window_kblocks + skew_kblocks * d))).
    With skew_kblocks = 0 both operands share the plain window (the original estimate).
    Panels count their useful rows only: TMA never loads the padding rows of a tile
    taller than the matrix (M = 1 with TM = 64), so those can be no L2 hits."""
    tile_m = np.minimum(tile_m, m / np.maximum(tiles_m, 1))
    tile_n = np.minimum(tile_n, n / np.maximum(tiles_n, 1))
    r_m, r_n = wave_panels(t0, a, tiles_m, tiles_n, raster)
    a1 = np.maximum(a, 1)
    unique = r_m * tile_m + r_n * tile_n
    per_kblock = unique * tile_k * in_bytes
    d_m, d_n = reuse_distance(tiles_m, tiles_n, raster)
    f_m = np.minimum(1.0, l2e / (per_kblock * (window_kblocks + skew_kblocks * d_m)))
    f_n = np.minimum(1.0, l2e / (per_kblock * (window_kblocks + skew_kblocks * d_n)))
    hits = (a1 - r_m) * tile_m * f_m + (a1 - r_n) * tile_n * f_n
    # the first read of a panel the previous wave (tiles t0 - a .. t0 - 1) also read hits
    # if everything the two waves stream over the whole K extent fits the effective L2
    prev = t0 >= a1
    u_m, u_n = wave_panels(np.maximum(t0 - a1, 0), 2 * a1, tiles_m, tiles_n, raster)
    p_m, p_n = wave_panels(np.maximum(t0 - a1, 0), a1, tiles_m, tiles_n, raster)
    over_m = np.where(prev, np.maximum(p_m + r_m - u_m, 0), 0)
    over_n = np.where(prev, np.maximum(p_n + r_n - u_n, 0), 0)
    f_x = np.minimum(1.0, l2e / ((u_m * tile_m + u_n * tile_n) * s * tile_k * in_bytes))
    hits = hits + (over_m * tile_m + over_n * tile_n) * f_x
    h = np.clip(hits / (a1 * (tile_m + tile_n)), 0.0, 1.0)
    fits = (m + n) * k * in_bytes <= l2e
    tiles = tiles_m * tiles_n
    compulsory = 1.0 - (m + n) * k / (tiles * (tile_m + tile_n) * s * tile_k)
    return np.where(fits, np.maximum(h, np.clip(compulsory, 0.0, 1.0)), h)


def line_factor(k, in_bytes, line_cost=1.0, sector_cost=0.0, pad_elems=8):
    """Requests per 128-byte box row, relative to an aligned one (effect 7, ``row_alignment``).

    A and B rows are pad_k(K) = ceil(K/8)*8 elements apart (kernels/launch.py), so the
    pitch p = pad_k(K)*b is a multiple of 16 bytes but not always of the 128-byte line:
    row r starts at r*p mod 128, which is 0 for a share gcd(p, 128)/128 of the rows and
    on a 32-byte sector for a share gcd(p, 32)/32. A box row off its line straddles two
    lines (``line_cost`` extra requests); one off its sector also spans 5 sectors and is
    split again (``sector_cost``). Returns
        1 + line_cost * (1 - gcd(p, 128)/128) + sector_cost * (1 - gcd(p, 32)/32)."""
    pitch = ((np.asarray(k, dtype=np.int64) + pad_elems - 1) // pad_elems) * pad_elems \
        * np.asarray(in_bytes).astype(np.int64)
    return 1.0 + line_cost * (1.0 - np.gcd(pitch, 128) / 128.0) + sector_cost * (1.0 - np.gcd(pitch, 32) / 32.0)


# ------------------------------------------------------------------ evaluate


def evaluate(m, n, k, tile_m, tile_n, tile_k, stages, cluster_m, cluster_n, persistent, raster,
             in_bytes, out_bytes, sf_bytes_per_elem, sms, l2_bytes, t_init_us, t_epilogue_us,
             load_bytes_per_us, load_latency_us, math_flops_per_us, math_latency_us, l2_hit_rate,
             dram_eff_bytes_per_us, l2_bytes_per_us, smem_bytes_per_us, store_bytes_per_us,
             l2_effective_fraction, l2_window_kblocks, scalar_store_factor, tile_overhead_us,
             cta_launch_us, sm_load_bytes_per_us, l2_skew_kblocks, line_split_cost, sector_split_cost,
             ring_extra_latency_us, oob_row_us, scalar_l2_bytes_per_us, oob_sat_rows, coalesce_distance,
             one_wg_math_share, model_options=None,
             **flags) -> dict[str, np.ndarray]:
    o = _options(model_options, flags)
    f64 = np.float64
    m, n, k = (np.asarray(x, dtype=np.int64) for x in (m, n, k))
    tile_m, tile_n, tile_k, stages = (np.asarray(x, dtype=np.int64) for x in (tile_m, tile_n, tile_k, stages))
    cm, cn = np.asarray(cluster_m, dtype=np.int64), np.asarray(cluster_n, dtype=np.int64)
    persistent = np.asarray(persistent).astype(bool)
    raster = np.asarray(raster, dtype=np.int64)
    sms = np.asarray(sms, dtype=np.int64)

    s = columns.ceil_div(k, tile_k)
    tiles_m, tiles_n = columns.ceil_div(m, tile_m), columns.ceil_div(n, tile_n)
    tiles = tiles_m * tiles_n
    full_waves, rem = tiles // sms, tiles % sms
    first_a = np.minimum(tiles, sms)
    last_a = np.where(rem > 0, rem, sms)
    n_waves = full_waves + (rem > 0)
    useful = (m * n * k) / (tiles_m * tile_m * tiles_n * tile_n * s * tile_k).astype(f64)
    # useful share of the bytes a CTA requests (TMA skips what overhangs M, N, K)
    useful_ab = ((m / (tiles_m * tile_m)) * tile_m + (n / (tiles_n * tile_n)) * tile_n) / (tile_m + tile_n) \
        * (k / (s * tile_k))

    elem = in_bytes + sf_bytes_per_elem
    a_bytes = (tile_m / cn) * tile_k * elem  # a CTA's A and B bytes per k-block
    b_bytes = (tile_n / cm) * tile_k * elem
    req = a_bytes + b_bytes  # bytes a CTA requests per k-block
    loaded = useful_ab if o["padding"] else 1.0  # share of them TMA actually moves
    req_eff = req * loaded
    # effect 7: rows of A and B (pitch = K rounded up to 8 elements) that do not start on a
    # 128-byte line make each 128-byte box row two L2 requests instead of one
    lines = line_factor(k, in_bytes, line_split_cost, sector_split_cost) if o["row_alignment"] else 1.0

    # -- math and shared memory (effect 3)
    # effect 11: one consumer warpgroup (64-row tiles) keeps the tensor cores less busy
    wg_share = np.where(tile_m < 128, one_wg_math_share, 1.0) if o["consumer_warpgroups"] else 1.0
    t_math = 2.0 * tile_m * tile_n * tile_k / (math_flops_per_us * wg_share) + math_latency_us
    smem_bytes = ((tile_m + tile_n) * tile_k + tile_m * tile_k + (tile_m / 64.0) * tile_n * tile_k) * in_bytes
    t_smem = smem_bytes / smem_bytes_per_us
    t_c = np.maximum(t_math, t_smem) if o["smem_limit"] else t_math + 0.0 * t_smem

    l2e = l2_effective_fraction * l2_bytes

    def hit(t0, a):
        if not o["l2_reuse"]:
            return np.broadcast_to(np.asarray(l2_hit_rate, dtype=f64), np.shape(a)) + 0.0 * a
        return wave_hit_rate(t0, a, tiles_m, tiles_n, raster, tile_m, tile_n, tile_k, in_bytes, l2e,
                              l2_window_kblocks, m, n, k, s, l2_skew_kblocks)

    # effect 10: share of a panel's reads merged with its launch neighbours', per operand
    d_m, d_n = reuse_distance(tiles_m, tiles_n, raster)
    c_m = np.exp(-(d_m - 1) / coalesce_distance)
    c_n = np.exp(-(d_n - 1) / coalesce_distance)

    def l2_bytes_of_wave(t0, a):
        """Bytes the L2 serves per k-block for the wave: a panel read by launch neighbours
        (reuse distance 1) at the same time is served once; panels shared only at a
        distance are read by each CTA (effect 10)."""
        if not o["coalesced_reads"]:
            return a * req_eff
        r_m, r_n = wave_panels(t0, a, tiles_m, tiles_n, raster)
        part_a = (c_m * np.minimum(r_m, a) + (1 - c_m) * a) * a_bytes
        part_b = (c_n * np.minimum(r_n, a) + (1 - c_n) * a) * b_bytes
        return (part_a + part_b) * loaded

    def stage_load(a, h, t0):
        """(per-k-block transfer time of one CTA, whether the L2 term binds)."""
        if not o["bandwidth_sharing"]:
            x = req_eff / load_bytes_per_us
            return x + 0.0 * a, np.zeros(np.shape(x + 0.0 * a), dtype=bool)
        x_dram = a * req_eff * (1.0 - h) / dram_eff_bytes_per_us
        # split rows' extra requests are each CTA's own: never coalesced
        x_l2 = (l2_bytes_of_wave(t0, a) + a * req_eff * (lines - 1.0)) / l2_bytes_per_us
        x = np.maximum(x_dram, x_l2)
        if o["sm_load_cap"]:
            # one SM's TMA path moves the whole box, zero-filled overhang included
            x = np.maximum(x, req / sm_load_bytes_per_us)
        return x, x_l2 > x_dram

    h_first = hit(np.zeros_like(tiles), first_a)
    h_last = hit(full_waves * sms, last_a)
    x_first, l2_first = stage_load(first_a, h_first, np.zeros_like(tiles))
    # full waves: the first one has no predecessor in L2, the others do
    h_full0 = hit(np.zeros_like(tiles), sms)
    h_later = hit(np.where(full_waves > 1, sms, 0) + 0 * tiles, sms)  # the second wave (where there is one)
    h_full = np.where(full_waves > 1, (h_full0 + (full_waves - 1) * h_later) / np.maximum(full_waves, 1), h_full0)
    x_full, _ = stage_load(sms, h_full, np.zeros_like(tiles))
    x_last, _ = stage_load(last_a, h_last, full_waves * sms)

    lat = load_latency_us
    lat_ring = lat + ring_extra_latency_us if o["ring_latency"] else lat
    # effect 9: rows of A and B boxes that overhang M or N, per CTA and k-block (tile average)
    oob_rows = ((tiles_m * tile_m - m) * tiles_n + (tiles_n * tile_n - n) * tiles_m) / tiles.astype(f64)

    def lat_oob(a):
        """Round-trip latency the wave's zero-filled rows add (TMA's boundary-check path)."""
        if not o["boundary_fill"]:
            return 0.0 * a
        r = a * oob_rows
        return r * oob_row_us / (1.0 + r / oob_sat_rows)

    def loop(x, a):
        """(fill, rest of the K loop after the fill, steady period) of one tile in a wave of a CTAs."""
        extra = lat_oob(a)
        fill = lat + extra + x
        if o["pipelining"]:
            period = np.maximum(np.maximum(t_c, x), (lat_ring + extra + x + t_c) / stages)
            return fill, (s - 1) * period + t_c, period
        return fill, np.maximum(s * x, s * t_c) - x, np.maximum(x, t_c)

    scalar = (n % 8 != 0) & o["padding"]
    vec = np.where(scalar, scalar_store_factor, 1.0)
    out_tile = tile_m * tile_n * out_bytes

    def epilogue(a):
        # 2-byte stores are partial-sector L2 writes: one SM's issue rate and, for the
        # wave, the L2's write-request rate bound them (2047^3, 128x256: 32 CTAs add
        # 14 us per tile, 128 CTAs 28 us)
        t_store = np.maximum(out_tile * vec / store_bytes_per_us,
                             np.where(scalar, a * out_tile / scalar_l2_bytes_per_us, 0.0))
        return t_epilogue_us + np.maximum(t_store, a * out_tile / dram_eff_bytes_per_us)

    fill_full, rest_full, per_full = loop(x_full, sms)
    fill_last, rest_last, _ = loop(x_last, last_a)
    fill_first, _, per_first = loop(x_first, first_a)
    e_full, e_last = epilogue(sms), epilogue(last_a)
    scale = 1.0 if o["padding"] else useful  # idealized kernel: no padded work at all
    has_rem = rem > 0

    mainloop = scale * (full_waves * rest_full + has_rem * rest_last)
    epi = full_waves * e_full + has_rem * e_last
    # persistent: first fill exposed, later fills hidden behind the previous epilogue
    exposed_full = np.maximum(fill_full - e_full, 0.0)
    exposed_last = np.maximum(fill_last - e_full, 0.0)
    later_fills = np.where(has_rem, np.maximum(full_waves - 1, 0) * exposed_full
                           + (full_waves > 0) * exposed_last,
                           np.maximum(full_waves - 1, 0) * exposed_full)
    fill_p = scale * (fill_first + later_fills)
    over_p = n_waves * tile_overhead_us
    fill_np = scale * (full_waves * fill_full + has_rem * fill_last)
    over_np = n_waves * cta_launch_us
    fill = np.where(persistent, fill_p, fill_np)
    overhead = np.where(persistent, over_p, over_np)
    init = np.broadcast_to(np.asarray(t_init_us, dtype=f64), np.shape(mainloop)) + 0.0
    total = init + fill + mainloop + epi + overhead

    # limiter of the first wave's steady state
    lat_term = (lat_ring + lat_oob(first_a) + x_first + t_c) / stages if o["pipelining"] \
        else np.zeros_like(x_first)
    x_kind = np.where(l2_first, 1, 0)
    mem_or = np.where(x_first >= np.maximum(t_c, lat_term), x_kind,
                      np.where(t_c >= lat_term, np.where(t_smem > t_math, 3, 2) if o["smem_limit"] else 2, 4))
    loop_first = fill_first + (s - 1) * per_first + t_c
    limiter = np.where(epilogue(first_a) > loop_first, 5, mem_or).astype(np.int8)

    shape = np.shape(total)

    def b(x, dtype=f64):
        return np.broadcast_to(np.asarray(x), shape).astype(dtype)

    return {
        "predicted_us": b(total),
        "limiter": b(limiter, np.int8),
        "init_us": b(init),
        "fill_us": b(fill),
        "mainloop_us": b(mainloop),
        "epilogue_us": b(epi),
        "overhead_us": b(overhead),
        "stage_load_us": b(x_first),
        "stage_math_us": b(t_math),
        "stage_smem_us": b(t_smem),
        "stage_period_us": b(per_first),
        "full_wave_period_us": b(np.where(full_waves > 0, per_full, per_first)),
        "l2_hit_rate_est": b(h_first),
        "padding_waste": b(1.0 - useful),
        "tiles": b(tiles, np.int64),
        "waves": b(n_waves, np.int64),
        "last_wave_sms": b(last_a, np.int64),
        "k_stages": b(s, np.int64),
    }



# ------------------------------------------------------------------ polars side


def constants_for(params: ParamSet, family: str, dtype: str) -> dict[str, float]:
    """The extra constants of one (family, dtype): Params.extra over descriptor defaults."""
    out = default_constants(params.gpu)
    extra = params.get(family, dtype).extra or {}
    out.update({c: float(extra[c]) for c in CONSTANTS if c in extra})
    return out


def prepare(configs: pl.DataFrame, params: ParamSet) -> tuple[pl.DataFrame, dict[str, np.ndarray]]:
    """(filled config table, evaluate()'s input arrays) for every row."""
    df = columns.fill_configs(configs)
    unknown = sorted(set(df.get_column("raster").unique().to_list()) - set(RASTER_CODES))
    if unknown:
        raise UserError(f"configs: raster = {unknown[0]!r} is unknown; known: {', '.join(RASTER_CODES)}")
    pcols = columns.param_columns(df, params)
    pairs = df.select("family", "dtype").unique()
    table = [{"family": f, "dtype": d, **constants_for(params, f, d)} for f, d in pairs.iter_rows()]
    schema = {"family": pl.Utf8, "dtype": pl.Utf8, **{c: pl.Float64 for c in CONSTANTS}}
    consts = df.select("family", "dtype").join(pl.DataFrame(table, schema=schema), on=["family", "dtype"],
                                               how="left", maintain_order="left").drop("family", "dtype")
    work = pl.concat([
        df.select(*columns.INT_COLUMNS, pl.col("persistent").cast(pl.Int8),
                  pl.col("raster").replace_strict(RASTER_CODES, return_dtype=pl.Int64)),
        pcols, consts], how="horizontal")
    work = work.with_columns(pl.lit(float(params.gpu.l2_bytes)).alias("l2_bytes"))
    return df, columns.arrays(work, INPUTS)


def finish(df: pl.DataFrame, out: dict) -> pl.DataFrame:
    return columns.attach(df, out, LIMITERS)


def predict(configs: pl.DataFrame, params: ParamSet, model_options: dict | None = None, **flags) -> pl.DataFrame:
    """Input columns plus predicted_us, limiter and the breakdown columns."""
    df, arr = prepare(configs, params)
    return finish(df, evaluate(**arr, model_options=model_options, **flags))
