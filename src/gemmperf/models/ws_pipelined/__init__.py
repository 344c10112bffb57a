"""ws-pipelined: the warp-specialized kernel with its K loop pipelined through the ring.

Persistent or not, one CTA per SM; each CTA runs work items: whole output tiles, or
with split-K and stream-K parts of a tile's K loop, whose fp32 partials it reduces. Beyond
``ws-persistent`` (gemm-model's phases) this model follows the ws-hopper kernel as it is
written: a producer issues TMA loads of A and B k-blocks into a ring of B = ``stages``
buffers; the consumer warpgroups run wgmma on them and, for the same tile, the epilogue
(registers -> global stores, or through shared memory and TMA stores). Clusters of
cm x cn CTAs take units of cm x cn tiles and multicast the operand tiles they share;
a wave holds the CTAs that fit at once in such clusters (``GPU.ctas_in_clusters``),
capped by ``persistent_ctas`` on a persistent grid (geometry.py). Split-K (``split_k`` =
Sk > 1) makes Sk work items of every tile, each of ceil(KT/Sk) k-blocks, in waves like
tiles; stream-K (``stream_k``) gives each of Wc persistent workers an equal range of
I = ceil(U*KT/Wc) (unit, k-block) iterations, one wave of I k-blocks (geometry.py).
fp8 (e4m3) is a dtype: 1-byte A and B, tile K 128, C written in bf16 (``out_dtype``),
the tensor cores at the GPU's fp8 rate (the parameters of the (family, fp8) entry).

Modules: ``geometry`` (tiles, waves, the panels a wave reads, L2 hit rates: the
``Grid``, integer inputs only, which a fit computes once with ``grid_of``),
``effects`` (one function per effect; ``epilogue`` those of the epilogue, ``kshare``
those of split-K and stream-K),
``compose`` (``evaluate``: stage terms, waves, kernel time, limiter), ``constants`` (the
typed ``PipelinedConstants``), ``inputs`` (evaluate's typed inputs and the effects'
``Switches``), ``table`` (polars in and out).

Effects (``EFFECTS``; each a function in effects.py, for the epilogue in epilogue.py, for
split-K and stream-K in kshare.py, whose docstring has its equation, and a switch:
keyword flags of ``evaluate`` / ``predict``, or ``model_options={...}``; switched off, an
effect falls back to the plain ``ws-stage`` / ``ws-persistent`` assumption so its
contribution shows):

- ``l2_reuse``: the L2 hit rate of a wave from the raster order and the L2 size.
- ``bandwidth_sharing``: the CTAs of a wave share DRAM and L2 bandwidth.
- ``smem_limit``: shared-memory bandwidth bounds the consumer's stage time.
- ``pipelining``: the K loop runs at the ring's max-plus cycle mean.
- ``padding``: whole tiles are computed, but TMA moves only the bytes inside the
  matrices (C's rows are padded to 16 bytes: the epilogue's stores stay 16-byte).
- ``sm_load_cap``: one SM's TMA path moves whole boxes.
- ``row_alignment``: rows whose pitch is off the 128-byte line cost extra L2 requests.
- ``ring_latency``: a ring slot's round trip is longer than the load latency.
- ``hit_latency``: the round trip's extra beyond the load latency is shorter where the L2
  serves the slot's load than where DRAM does: (1 - h_L2) * ring_extra_latency_us +
  h_L2 * hit_extra_latency_us, h_L2 the wave's hit rate (``l2_reuse``).
- ``boundary_fill``: boxes that overhang M or N (or K: ``k_tail_fill``) take TMA's
  zero-fill path, whose queue the whole GPU shares: its latency follows the zero-filled
  rows in flight.
- ``coalesced_reads``: CTAs close in launch order read a shared panel once.
- ``consumer_warpgroups``: one consumer warpgroup (64-row tiles) leaves the tensor
  cores partly idle.
- ``tma_store``: the TMA-store epilogue exposes its own fixed cost and the staging
  writes to shared memory; the stores drain behind the next tile (the last tile's at
  the end).
- ``pingpong_overlap``: ping-pong consumers on a persistent grid hide a tile's epilogue
  (half of what it outlasts the other warpgroup's S*Tc: both may store at once) and
  the next fill.
- ``split_k_fixup``: split-K's reduction on each wave's critical path: the partial
  written, the arrival, the last arriver reading all Sk partials back from L2.
- ``stream_k_fixup``: stream-K's tile boundaries inside a worker's range (segment ends,
  epilogues, exposed fills) and its partial tiles' fix-up.
- ``cluster_lockstep``: the CTAs of a cluster share every multicast ring slot, so each
  k-block takes the slowest of their periods.
- ``cluster_sync``: a cluster's CTAs start and leave together (its launch, the cluster
  barriers, the first k-block waiting for every peer's multicast slice): once on a
  persistent grid, once per wave otherwise (in ``overhead_us``).
- ``ring_jitter``: a k-block's times vary, so the ring's period is a p-norm of its
  terms, slower than the slowest where two are close.
- ``epilogue_threads``: the direct epilogue is each consumer thread's own work on its
  accumulators, so a tile one warpgroup holds (64-row tiles, ping-pong) takes longer
  than the same bytes split over two.
- ``split_k_overlap``: only the last of a tile's Sk CTAs reads the partials back and runs
  the epilogue; the others leave, so a split-K wave before the last costs its SMs that
  work over Sk, not whole.
- ``stream_k_offsets``: stream-K's workers start inside tiles, so the workers on one
  panel run at k offsets far apart; a read hits L2 only if a worker ahead read that
  k-block within the L2's hold (the lags tabulated from the workers' positions).
- ``stream_k_ceiling``: that rate is at most the one of a wave whose CTAs read in step:
  the workers' tile boundaries and fix-ups shift them against each other.
- ``oob_multicast``: a multicast slice wholly past M or N still costs its cluster the
  writes of its zeros once per k-block, on a path the whole GPU shares: a term of the
  period of its own, where a lone box past the edge is skipped.
- ``dram_writes``: C's stores reach DRAM at the GPU's write rate; they drain behind the
  next tile's K loop and into the L2's buffer, so only what outlasts both is exposed,
  with either epilogue and schedule (off: each wave's stores at the load rate, none
  hidden, in the direct epilogue only).
- ``multicast_reads``: the L2 hit rate is the share of the reads the L2 sees after
  cluster multicast that hit, so a cluster's DRAM bytes are its misses, never below its
  unique bytes (off: the share among every CTA's reads, applied to the multicast-reduced
  requests: multicast counted twice).
- ``stream_k_lookup``: stream-K's read-back finds each partial's workspace slot (an
  integer division, a 64-bit address a load) before the partial's loads issue; split-K's
  slots sit at offsets fixed when the kernel is compiled.
- ``ring_queue``: a ring slot's round trip waits behind the ring slots in flight on the
  GPU (each CTA of the wave keeps B slots of its A and B boxes in flight; a slot the L2
  serves waits in a share of that queue), so a latency-bound ring slows as the wave's
  CTAs and its depth grow, less where the L2 holds its problem.
- ``split_row_latency``: a slot's boxes pass through its SM's TMA path, which issues the
  extra requests of rows off their line and sector (``row_alignment``) before the slot
  is full, so a misaligned pitch lengthens a slot's round trip, not only the L2's work.
- ``store_exit``: a TMA-store CTA exits only once its staging buffers are read, so each
  wave of a non-persistent grid waits for its tiles' drain from shared memory, which a
  persistent grid pays once.
- ``slot_release``: the consumer frees a k-block's slot only once the next k-block's
  multiply is issued, so h of the B slots are held (B - h rotate), and a slot's round trip
  is its load's latency and its multiply (its share of the bandwidth is ring_queue's wait
  and the period's x term); a 64-row tile, whose multiply is short, holds a share of its
  own (``short_tile_held_slots``).
- ``ring_saturation``: each slot a CTA keeps in flight lengthens its own slots' round trip,
  so a deeper ring gains less than 1 / (B - h).
- ``partial_stores``: the epilogue stores only a tile's part inside C (predicated direct
  stores, clipped TMA boxes): a wave's fullest tile stores min(TM, M) x min(TN, N16), its
  DRAM writes are the in-bounds share of its tiles; the staging stays the whole tile.
- ``issue_wait``: a consumer frees a slot only after issuing the next k-block's wgmmas; a
  256-row tile's 16 a tensor-core sub-partition wait for half its multiply (a queue of 8),
  which a two-stage ring's one slot in flight waits for too.
- ``fixup_batches``: the fix-up's read-back loads a partial FIXUP_BATCH values a thread at
  a time, so a tile whose consumer threads hold 128 accumulators (64x256, 128x256,
  256x128) waits two L2 round trips a partial.
- ``k_tail_fill``: where K is not a multiple of TK, the rows of a tile's last k-block's
  boxes overhang K and join ``boundary_fill``'s zero-filled rows in flight.
- ``second_warpgroup``: a consumer thread's direct stores take ``second_warpgroup_factor``
  (measured, 1.19) as long in a CTA of two consumer warpgroups as in one of one.
- ``shared_sectors``: where C's rows start off their 32-byte sector, a tile's row ends in a
  sector its neighbour's begins, whose halves the L2 merges by reading it back: C's writes
  that leave the L2 take 1 + c_sector_off * ``shared_sector_cost`` (measured, 1.2) their
  plain time.
- ``tma_engine``: one SM's TMA engine issues the loads and the TMA stores in turn, so
  ping-pong warpgroups with TMA stores do not overlap their epilogues, and a tile holds
  the engine for its epilogue and its k-blocks' boxes.
- ``engine_rows``: that engine issues the extra requests of a box row off its 32-byte
  sector one after another, ``split_row_engine_us`` (measured, 3 clocks) a row, which a
  tile's first slot waits for: in the fill, and once a tile in ``tma_engine``'s hold
  (later slots' rows are issued under the multiply; the shared L2's share stays in
  ``row_alignment`` and ``split_row_latency``).

One tile in a wave of a CTAs, with x(a) the per-k-block transfer time
(``bandwidth_sharing``), Tc = max(T_MATH, T_SMEM) the consumer's stage time and
Pk(a) = max(Tc, x, z_mc, (lat_ring + lat_oob + lat_q + lat_s + Tc + w) * (1/(B - h) + 1/B_sat))
the steady period (a p-norm with ``ring_jitter``; h the held slots, ``slot_release``; B_sat
the slots in flight that double a round trip, ``ring_saturation``; lat_oob the zero fill's latency, ``boundary_fill``;
lat_q the queue of slots in flight, ``ring_queue``; lat_s the split rows' extra requests,
``split_row_latency``; w the wait to issue the next k-block, ``issue_wait``; z_mc the wholly
out-of-bounds multicast slices, ``oob_multicast``):
    fill(a) = load_latency_us + lat_oob(a) + z_mc(a) + x1(a),   Lk(a) = (S - 1)*Pk(a) + Tc
    (x1 = max(x, Bs/sm_load_bytes_per_us + the first slot's split rows), ``engine_rows``)
    E(a)    = the epilogue (compose.epilogue) + split-K's fix-up F_split(a) (0 otherwise)
Whole kernel, W = F + [R > 0] waves of work items (F full waves with a = P, then R CTAs;
S the k-blocks of an item):
  persistent (grid = min(items, P)): the producer prefetches the next item's ring during
  the epilogue, so only the part of the next fill longer than the epilogue is exposed:
      t = t_init + fill(a1) + sum over waves [Lk(a) + E(a) + tile_overhead_us]
            + (W - 1) * max(fill - E, 0)
  non-persistent (grid = items): each wave's CTAs start cold:
      t = t_init + sum over waves [cta_launch_us + fill(a) + Lk(a) + E(a)]
  clusters (cs > 1) add ``cluster_sync_us`` once (persistent) or per wave (not).
  stream-K (one wave of Wc workers, S = I): the persistent t, plus for a worker's n_seg
  tile segments (n_seg - 1)*(Tc - Pk + max(fill - E, 0) + tile_overhead_us), the
  epilogues beyond the first and its partials' fix-up (kshare.stream_k_fixup).
  every kernel: the power cap's clock drop on its tensor cores' busy time Tb
  (effects.power_clock), power_clock_drop * Tb * (1 - exp(-Tb / power_time_constant_us)).

Constants beyond ``params.PARAM_NAMES`` (``CONSTANTS``) are the fields of
``PipelinedConstants`` (units, meaning and plausible range in its field metadata):
values stored in ``Params.constants`` over the descriptor defaults (``constants_for``).

Limiter (``Limiter``; the column holds its lower-case name) of the first wave's steady
state: "load" (x, DRAM term), "l2" (x, L2 term), "math", "smem", "latency" (the
ring's round trip over its free slots), "epilogue" (E exceeds the loop), "writes" (E exceeds the loop
for the DRAM writes of C it waits on, dram_writes' backlog).
Columns: predicted_us, limiter, init_us, fill_us, mainloop_us, epilogue_us,
reduction_us (split-K's and stream-K's partial writes, arrivals and fix-up reads),
overhead_us, power_us (the power cap's clock drop on a long run; predicted_us is their sum),
full_periods and last_periods (the K loops'
steady periods on the critical path, of the full waves and of the last one), ring_us
(their time: the part of the main loop the ring depth B changes),
stage_load_us, stage_math_us, stage_smem_us, stage_period_us (first wave),
full_wave_period_us (a full wave's, averaged over the waves' L2 hit rates),
l2_hit_rate_est, padding_waste, tiles (T), work_items (CTAs' worth of work items),
wave_ctas, waves (of work items), last_wave_sms, k_stages (k-blocks of a work item).
How each effect was found and what it fixed: benchmarks/MODEL_ACCURACY.md.
"""

from __future__ import annotations

from .compose import LIMITERS, Limiter, evaluate
from .constants import (CONSTANTS, FITTED, RETIRED, PipelinedConstants, constants_for, default_constants, ranges,
                        rows_of, scales_with)
from .effects import line_factor
from .geometry import reuse_distance, take, wave_hit_rate, wave_panels
from .inputs import EFFECTS, INPUTS, Switches, grid_of
from .table import RASTER_CODES, finish, predict, prepare

NAME = "ws-pipelined"

__all__ = ["CONSTANTS", "EFFECTS", "FITTED", "INPUTS", "LIMITERS", "NAME", "RASTER_CODES", "Limiter",
           "PipelinedConstants", "RETIRED", "Switches", "constants_for", "default_constants", "evaluate", "finish",
           "grid_of", "line_factor", "predict", "prepare", "ranges", "reuse_distance", "rows_of", "scales_with",
           "take", "wave_hit_rate", "wave_panels"]
