"""Where the tiles are: waves, the panels a wave reads, and how far apart their users run.

Notation: TM, TN, TK tile; S = ceil(K/TK) k-blocks; tiles_m = ceil(M/TM), tiles_n =
ceil(N/TN); clusters of cm x cn CTAs (cs = cm*cn) take a unit of cm x cn tiles, units_m =
ceil(tiles_m/cm), units_n = ceil(tiles_n/cn); T = units_m*units_n*cs CTAs' worth of
tiles (= tiles without clusters; a cluster's CTAs past the edge compute a padding tile);
P = CTAs per wave: the CTAs that fit at once in clusters of cs (the GPU's
``ctas_in_clusters``: SMs without clusters), capped by ``persistent_ctas`` on a
persistent grid; full waves F = T // P, remainder R = T % P; a wave has ``a`` active
CTAs (P, or R for the last one).

A tile index t maps to a tile (row, column) by the kernel's raster (kernels/source.py),
over units with clusters: row t -> (t // tiles_n, t % tiles_n); column t -> (t % tiles_m,
t // tiles_m); grouped: groups of ``group_m`` tile (unit) rows, each walked column by
column. A wave's panels are counted on the unit grid and scaled by cm (A) and cn (B).

Work items. The waves are waves of work items, one CTA's each; without split-K or
stream-K an item is a tile (T items of KT = ceil(K/TK) k-blocks). Split-K (``split_k`` =
Sk > 1) makes Sk items of each tile, the splits of one unit next to each other in
launch order (item u*Sk + s), item s taking k-blocks [s*KT/Sk, (s+1)*KT/Sk): T*Sk items
of S = ceil(KT/Sk) k-blocks (the longest split). Stream-K: U = T/cs units, U*KT
(unit, k-block) iterations shared by the Wc = min(P/cs, U*KT) persistent clusters,
I = ceil(U*KT/Wc) iterations each: Wc*cs items (one wave) of S = I k-blocks. A worker's
range crosses tiles: n_seg = 1 + ceil((I - 1)/KT) tile segments at most, and a tile is
shared by at most parts = min(1 + ceil((KT - 1)/I), Wc) workers; where every range starts
and ends on a tile (Wc divides U*KT and KT divides I) no tile is shared (n_seg = I/KT).
A wave's panels are those of the tiles its items work on: CTAs t0 .. t0+a-1 are tiles
t0 // mult .. on ceil(a/mult) tiles, mult the CTAs in flight per tile (Sk; stream-K
ceil(Wc/U); else 1), each tile's panels read as mult K segments, and the launch-order
distance between users of one panel segment is mult times the tiles' (reuse_distance).
Stream-K's workers are spread over the tiles, each at its own k-block: their panels are
approximated by those of the first ceil(a/mult) tiles, and where ranges start inside tiles
``stream_k_reuse`` tabulates how far ahead the nearest other reader of each panel runs
(effects.stream_k_offsets turns it into the wave's hit rate).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import numpy as np

from ...kernels.family import K_ALIGN_ELEMS
from ...problem import DEFAULT_GROUP_M
from ...kernels.source import RASTER_IDS
from ..columns import ceil_div

ROW, COLUMN = RASTER_IDS["row"], RASTER_IDS["column"]


@dataclass(frozen=True)
class Span:
    """The wave of tiles t0 .. t0+a-1 and the panels it and the wave before it read
    (integer arrays; ``wave_panels`` counts them)."""

    t0: np.ndarray
    a: np.ndarray  # active CTAs as given (0 for no wave)
    a1: np.ndarray  # max(a, 1)
    r_m: np.ndarray  # distinct A row panels of the wave's tiles
    r_n: np.ndarray  # distinct B column panels of the wave's tiles
    prev: np.ndarray  # a wave of a1 CTAs ran before it (t0 >= a1)
    p_m: np.ndarray  # panels of that previous wave
    p_n: np.ndarray
    u_m: np.ndarray  # panels of both waves together
    u_n: np.ndarray
    mult: np.ndarray | int = 1  # CTAs in flight per tile, each on its own K segment (split-K, stream-K)
    bytes: WaveBytes | None = None  # the panels' rows and bytes (``with_bytes``)
    cm: np.ndarray | int = 1  # a cluster's CTAs along M (B is multicast to them)
    cn: np.ndarray | int = 1  # and along N (A is multicast to them)

    @classmethod
    def of(cls, t0, a, tiles_m, tiles_n, raster, group, cm=1, cn=1, mult=1) -> Span:
        """The wave of CTAs t0 .. t0+a-1; with clusters (cm x cn) its panels are counted
        on the unit grid and scaled to tiles (``cluster_panels``); with ``mult`` CTAs per
        tile (split-K), on the tiles t0 // mult .. of ceil(a/mult) CTAs' worth."""
        a1 = np.maximum(a, 1)
        t, at = t0 // mult, ceil_div(a1, mult)
        r_m, r_n = cluster_panels(t, at, tiles_m, tiles_n, raster, group, cm, cn)
        before = np.maximum(t0 - a1, 0) // mult
        u_m, u_n = cluster_panels(before, 2 * at, tiles_m, tiles_n, raster, group, cm, cn)
        p_m, p_n = cluster_panels(before, at, tiles_m, tiles_n, raster, group, cm, cn)
        return cls(t0=t0, a=a, a1=a1, r_m=r_m, r_n=r_n, prev=t0 >= a1, p_m=p_m, p_n=p_n, u_m=u_m, u_n=u_n,
                   mult=mult, cm=cm, cn=cn)

    def with_bytes(self, *sizes) -> Span:
        """This span with ``bytes`` = WaveBytes.of(self, *sizes)."""
        return dataclasses.replace(self, bytes=WaveBytes.of(self, *sizes))


@dataclass(frozen=True)
class Grid:
    """Tiles, waves and the panels the waves read, for a launch with one CTA per SM (all
    fields are arrays or Spans of arrays). It depends on the sizes, tiling, raster, SMs
    and element bytes only, never on a parameter, so a fit computes it once."""

    k_blocks: np.ndarray  # S: k-blocks of a work item (KT without split-K or stream-K)
    k_tiles: np.ndarray  # KT = ceil(K/TK): k-blocks of a tile
    tiles_m: np.ndarray
    tiles_n: np.ndarray
    units_m: np.ndarray  # ceil(tiles_m / cm): cluster units along M
    units_n: np.ndarray  # ceil(tiles_n / cn)
    tiles: np.ndarray  # T: CTAs' worth of tiles, cluster padding included
    items: np.ndarray  # CTAs' worth of work items: T, T*Sk (split-K), Wc*cs (stream-K)
    mult: np.ndarray  # CTAs in flight per tile (Sk; stream-K ceil(Wc/U); else 1)
    sk_segments: np.ndarray  # stream-K: tile segments n_seg of a worker's range (at most)
    sk_parts: np.ndarray  # stream-K: workers sharing a tile (at most); 1: no tile is shared
    sk_reuse_m: np.ndarray  # stream-K: (rows, HOLDS) share of A reads with a user ahead within a hold
    sk_reuse_n: np.ndarray  # ... of B reads (``stream_k_reuse``; 0 off stream-K rows)
    wave_ctas: np.ndarray  # P
    full_waves: np.ndarray  # F
    rem: np.ndarray  # R
    first_a: np.ndarray  # CTAs of the first wave
    last_a: np.ndarray  # CTAs of the last wave
    n_waves: np.ndarray  # F + [R > 0]
    stores: np.ndarray  # tiles of C a CTA stores: W = n_waves, or a stream-K worker's e (StreamK.stores)
    useful: np.ndarray  # M*N*K over the padded tiles' extent
    useful_ab: np.ndarray  # share of a CTA's A and B box bytes inside the matrices
    stored_tile: np.ndarray  # bytes of C the fullest tile stores inside C (``stored_c``)
    useful_c: np.ndarray  # share of the tiles' bytes of C inside C
    d_m: np.ndarray  # launch-order distance between users of an A panel (reuse_distance)
    d_n: np.ndarray  # ... of a B panel
    first: Span  # the first wave: tiles 0 .. first_a - 1
    full: Span  # a full wave from tile 0 (P CTAs)
    later: Span  # the second full wave where F > 1 (stands for every later one), else ``full``
    last: Span  # the last wave: F*P .. F*P + last_a - 1

    a_bytes: np.ndarray  # A bytes a CTA requests per k-block (``cta_bytes``)
    b_bytes: np.ndarray  # B bytes
    oob_a: np.ndarray  # wholly out-of-bounds multicast A slices of the edge cluster (``oob_slices``)
    oob_b: np.ndarray  # ... B slices
    line_off: np.ndarray  # share of A/B rows off their 128-byte line (``line_shares``)
    sector_off: np.ndarray  # share off their 32-byte sector
    c_sector_off: np.ndarray  # share of C's rows off their 32-byte sector (``line_shares`` of N)

    @classmethod
    def of(cls, v: dict) -> Grid:
        """From evaluate()'s input arrays by name (integers as int64, broadcast together)."""
        m, n, k, tile_m, tile_n, tile_k = (v[name] for name in ("m", "n", "k", "tile_m", "tile_n", "tile_k"))
        raster, in_bytes, group, cm, cn = v["raster"], v["in_bytes"], v["group_m"], v["cluster_m"], v["cluster_n"]
        kt = ceil_div(k, tile_k)
        tiles_m, tiles_n = ceil_div(m, tile_m), ceil_div(n, tile_n)
        units_m, units_n = ceil_div(tiles_m, cm), ceil_div(tiles_n, cn)
        units = units_m * units_n
        tiles = units * (cm * cn)
        sms = wave_ctas(v["cluster_ctas"], v["persistent"], v["persistent_ctas"])
        sk = StreamK.of(units, kt, sms // (cm * cn))
        streamk = v["stream_k"] > 0
        sk_reuse_m, sk_reuse_n = stream_k_reuse(units_m, units_n, kt, sk.workers, raster, group,
                                                streamk & (sk.parts > 1))
        split = v["split_k"]
        items = np.where(streamk, sk.workers * (cm * cn), tiles * split)
        s = np.where(streamk, sk.iters, ceil_div(kt, split))
        mult = np.where(streamk, np.maximum(ceil_div(sk.workers, units), 1), split)
        full_waves, rem = items // sms, items % sms
        n_waves = full_waves + (rem > 0)
        useful = (m * n * k) / (tiles_m * tile_m * tiles_n * tile_n * kt * tile_k).astype(np.float64)
        # TMA skips what overhangs M, N and K; the items' k-blocks (items/cs * S) may exceed
        # the U*KT there are (the longest split stands for all, and split items past KT
        # load nothing): the share of them that load (1 without K sharing)
        loads = (units * kt) / ((items // (cm * cn)) * s)
        useful_ab = ((m / (tiles_m * tile_m)) * tile_m + (n / (tiles_n * tile_n)) * tile_n) \
            / (tile_m + tile_n) * (k / (kt * tile_k)) * loads
        first_a, last_a = np.minimum(items, sms), np.where(rem > 0, rem, sms)
        d_m, d_n = reuse_distance(units_m, units_n, raster, group)
        zero = np.zeros_like(items)

        def span(t0, a):
            return Span.of(t0, a, tiles_m, tiles_n, raster, group, cm, cn, mult).with_bytes(
                tiles_m, tiles_n, tile_m, tile_n, tile_k, in_bytes, m, n, k, kt)

        a_bytes, b_bytes = cta_bytes(tile_m, tile_n, tile_k, v["cluster_m"], v["cluster_n"], in_bytes,
                                     v["sf_bytes_per_elem"])
        line_off, sector_off = line_shares(k, in_bytes)
        c_sector_off = line_shares(n, v["out_bytes"])[1]  # C's rows: pad_n(N), as A's and B's
        oob_a, oob_b = oob_slices(m, n, tile_m, tile_n, cm, cn)
        stored_tile, useful_c = stored_c(m, n, tile_m, tile_n, tiles_m, tiles_n, v["out_bytes"])
        return cls(k_blocks=s, k_tiles=kt, tiles_m=tiles_m, tiles_n=tiles_n, units_m=units_m, units_n=units_n,
                   tiles=tiles, items=items, mult=mult,
                   sk_segments=sk.segments, sk_parts=sk.parts, sk_reuse_m=sk_reuse_m, sk_reuse_n=sk_reuse_n,
                   wave_ctas=sms, full_waves=full_waves,
                   rem=rem, first_a=first_a, last_a=last_a, n_waves=n_waves,
                   stores=np.where(streamk, sk.stores, n_waves), useful=useful,
                   useful_ab=useful_ab, stored_tile=stored_tile, useful_c=useful_c, d_m=d_m * mult, d_n=d_n * mult,
                   first=span(zero, first_a),
                   full=span(zero, sms), later=span(np.where(full_waves > 1, sms, 0), sms),
                   last=span(full_waves * sms, last_a),
                   a_bytes=a_bytes, b_bytes=b_bytes, oob_a=oob_a, oob_b=oob_b, line_off=line_off, sector_off=sector_off,
                   c_sector_off=c_sector_off)


@dataclass(frozen=True)
class StreamK:
    """Stream-K's share of the U*KT (unit, k-block) iterations among its workers (integer
    arrays; see the module doc): Wc workers (clusters) of at most I iterations, each
    crossing at most n_seg tile segments, a tile shared by at most ``parts`` workers."""

    workers: np.ndarray  # Wc = min(clusters per wave, U*KT), at least 1
    iters: np.ndarray  # I = ceil(U*KT / Wc)
    segments: np.ndarray  # n_seg
    parts: np.ndarray  # 1 where every range starts and ends on a tile

    @classmethod
    def of(cls, units, kt, clusters) -> StreamK:
        total = units * kt
        workers = np.maximum(np.minimum(clusters, total), 1)
        iters = ceil_div(total, workers)
        aligned = (total % workers == 0) & (iters % kt == 0)
        segments = np.where(aligned, iters // kt, 1 + ceil_div(np.maximum(iters - 1, 0), kt))
        parts = np.where(aligned, 1, np.minimum(1 + ceil_div(kt - 1, np.maximum(iters, 1)), workers))
        return cls(workers=workers, iters=iters, segments=segments, parts=parts)

    @property
    def stores(self) -> np.ndarray:
        """Tiles of C a worker stores (runs the epilogue of): each of its n_seg segments
        but the first where tiles are shared (that one ends a tile another worker
        finishes: it writes a partial), at least one: e = max(n_seg - 1, 1), else n_seg."""
        return np.where(self.parts > 1, np.maximum(self.segments - 1, 1), self.segments)


# Holds (k-blocks of the wave's stream the L2 keeps) at which ``stream_k_reuse`` tabulates
# its shares: 2^i - 1, so that log2(hold + 1) indexes them; the positions sampled in each
# worker's range
HOLDS = 2.0 ** np.arange(15) - 1.0
SK_SAMPLES = (0.0, 0.25, 0.5, 0.75)


def stream_k_reuse(units_m, units_n, kt, workers, raster, group, on):
    """(A, B): per row, the share of a stream-K wave's panel reads that another read of
    the same k-block precedes by at most h k-blocks, for each hold h of HOLDS (rows x
    len(HOLDS)); zeros where ``on`` is false.

    Worker w runs iterations [w*U*KT/Wc, (w+1)*U*KT/Wc) of the (unit, k-block) space in
    order (the kernel's sk_begin), so at a given time its CTAs are on unit it // KT at k
    offset it % KT, the units mapped to (row, column) by the raster. A read of a panel's
    k-block is an L2 hit if a worker ahead of it on the same panel (a larger offset) read
    that k-block less than the L2's hold ago: the lag is the offset difference to the
    nearest such worker, or KT where the worker itself read it on the unit before. Taken
    at the positions SK_SAMPLES of every range. Depends on the sizes only: a fit computes
    it once; distinct launches are computed once each (cached)."""
    shape = (np.shape(on)[0] if np.ndim(on) else 1, len(HOLDS))
    out_m, out_n = np.zeros(shape), np.zeros(shape)
    on = np.broadcast_to(on, (shape[0],))
    if not on.any():
        return out_m, out_n
    cols = np.stack([np.broadcast_to(np.asarray(c, dtype=np.int64), (shape[0],))[on]
                     for c in (units_m, units_n, kt, workers, raster, group)], axis=1)
    keys, inverse = np.unique(cols, axis=0, return_inverse=True)
    tables = np.array([_stream_k_reuse(*map(int, key)) for key in keys])  # (keys, 2, HOLDS)
    out_m[on], out_n[on] = tables[inverse.reshape(-1), 0], tables[inverse.reshape(-1), 1]
    return out_m, out_n


@functools.lru_cache(maxsize=4096)
def _stream_k_reuse(units_m, units_n, kt, workers, raster, group):
    total = units_m * units_n * kt
    begin = np.arange(workers + 1, dtype=np.int64) * total // workers
    lags_m, lags_n = [], []
    for frac in SK_SAMPLES:
        it = begin[:-1] + np.floor(frac * (begin[1:] - begin[:-1])).astype(np.int64)
        unit, k = it // kt, it % kt
        pm, pn = unit_coords(unit, units_m, units_n, raster, group)
        qm, qn = unit_coords(np.maximum(unit - 1, 0), units_m, units_n, raster, group)
        again = it - kt >= begin[:-1]  # the worker read this k-block on its unit before
        for panel, before, lags in ((pm, qm, lags_m), (pn, qn, lags_n)):
            order = np.lexsort((k, panel))
            p_sorted, k_sorted = panel[order], k[order]
            ahead = np.full(workers, np.inf)
            ahead[:-1] = np.where(p_sorted[1:] == p_sorted[:-1], k_sorted[1:] - k_sorted[:-1], np.inf)
            lag = np.empty(workers)
            lag[order] = ahead
            lags.append(np.where(again & (before == panel), np.minimum(lag, kt), lag))
    share = [(np.concatenate(lags)[:, None] <= HOLDS[None, :]).mean(axis=0) for lags in (lags_m, lags_n)]
    return np.stack(share)


def unit_coords(t, units_m, units_n, raster, group):
    """(row, column) of units ``t`` under the raster (the kernel's tile_coords)."""
    if raster == ROW:
        return t // units_n, t % units_n
    if raster == COLUMN:
        return t % units_m, t // units_m
    per_group = group * units_n
    first = (t // per_group) * group
    rows = np.minimum(units_m - first, group)
    r = t - (t // per_group) * per_group
    return first + r % rows, r // rows


def take(obj, idx):
    """``obj`` (a Grid, Span, WaveBytes or StreamK) at rows ``idx``: every array field
    indexed, nested ones too. The grid is row-wise, so the grid of some rows, taken, is
    the grid of those rows: a caller whose rows repeat (the optimizer's ring depths)
    computes it once per distinct row."""
    if isinstance(obj, np.ndarray):
        return obj[idx] if obj.ndim else obj
    if dataclasses.is_dataclass(obj):
        return dataclasses.replace(obj, **{f.name: take(getattr(obj, f.name), idx) for f in dataclasses.fields(obj)})
    return obj


def wave_ctas(cluster_ctas, persistent, persistent_ctas):
    """P, the CTAs of a full wave: those that fit at once in clusters of the configuration's
    size (``cluster_ctas``, the GPU's ``ctas_in_clusters``; SMs without clusters), capped
    by ``persistent_ctas`` (> 0) on a persistent grid."""
    capped = np.asarray(persistent, dtype=bool) & (persistent_ctas > 0)
    return np.where(capped, np.minimum(cluster_ctas, persistent_ctas), cluster_ctas)


def cta_bytes(tile_m, tile_n, tile_k, cluster_m, cluster_n, in_bytes, sf_bytes_per_elem):
    """(A bytes, B bytes) a CTA requests per k-block, block-scale factors included, after
    cluster multicast: TM/cn * TK * (b + sf) and TN/cm * TK * (b + sf)."""
    elem = in_bytes + sf_bytes_per_elem
    return (tile_m / cluster_n) * tile_k * elem, (tile_n / cluster_m) * tile_k * elem


def stored_c(m, n, tile_m, tile_n, tiles_m, tiles_n, out_bytes):
    """(bytes the fullest tile stores inside C, share of the tiles' bytes of C inside C):
    min(TM, M) * min(TN, N16) * ob and M*N16 / (tiles_m*TM * tiles_n*TN), N16 the N of C's
    rows padded to 16 bytes (``epilogue.partial_stores``)."""
    row_elems = 16 // out_bytes
    n16 = ceil_div(n, row_elems) * row_elems
    tile = np.minimum(tile_m, m) * np.minimum(tile_n, n16) * out_bytes
    return tile, np.minimum(m * n16 / (tiles_m * tile_m * tiles_n * tile_n), 1.0)


def oob_slices(m, n, tile_m, tile_n, cluster_m, cluster_n):
    """(A slices, B slices) of the edge cluster that lie wholly past M / N and are multicast.

    A cluster of cm x cn CTAs loads each tile's A box as cn slices of TM/cn rows, one per
    CTA of the tile's cluster row, multicast to the cn sharers (B: cm slices of TN/cm rows);
    a slice whose first row is at or past M (N) holds nothing of the matrix. Only the
    clusters of the last unit row (A) and column (B) have such slices, a cluster's padding
    tiles past the edge included; counted here for the corner cluster, which has both.
    Clusters of one CTA along a side do not multicast that operand: 0."""
    units_m = ceil_div(ceil_div(m, tile_m), cluster_m)
    units_n = ceil_div(ceil_div(n, tile_n), cluster_n)
    a_out, b_out = np.zeros(np.shape(m), dtype=np.int64), np.zeros(np.shape(m), dtype=np.int64)
    for i in range(int(np.max(cluster_m, initial=1))):
        for j in range(int(np.max(cluster_n, initial=1))):
            inside = (i < cluster_m) & (j < cluster_n)
            row0 = ((units_m - 1) * cluster_m + i) * tile_m + j * (tile_m // np.maximum(cluster_n, 1))
            col0 = ((units_n - 1) * cluster_n + j) * tile_n + i * (tile_n // np.maximum(cluster_m, 1))
            a_out += inside & (cluster_n > 1) & (row0 >= m)
            b_out += inside & (cluster_m > 1) & (col0 >= n)
    return a_out, b_out


def line_shares(k, in_bytes):
    """(share of rows off their 128-byte line, share off their 32-byte sector).

    A and B rows are pad_k(K, b) elements apart, so the pitch p = pad_k(K, b)*b is a multiple
    of 16 bytes but not always of the 128-byte line: row r starts at r*p mod 128, which is
    0 for a share gcd(p, 128)/128 of the rows and on a 32-byte sector for a share
    gcd(p, 32)/32: 1 - gcd(p, 128)/128 and 1 - gcd(p, 32)/32."""
    b = np.asarray(in_bytes, dtype=np.float64)
    align = np.maximum(K_ALIGN_ELEMS, np.ceil(16.0 / b)).astype(np.int64)  # kernels.family.k_align
    k = np.asarray(k, dtype=np.int64)
    pitch = ((k + align - 1) // align * align * b).astype(np.int64)
    return 1.0 - np.gcd(pitch, 128) / 128.0, 1.0 - np.gcd(pitch, 32) / 32.0


def cluster_panels(t0, a, tiles_m, tiles_n, raster, group, cm, cn):
    """``wave_panels`` of the CTAs t0 .. t0+a-1 when clusters of cm x cn CTAs take units of
    cm x cn tiles: the wave's ceil(a/cs) units from unit t0 // cs, counted on the unit grid,
    each unit row holding cm tile rows (A panels) and each unit column cn (B panels)."""
    cs = cm * cn
    units_m, units_n = ceil_div(tiles_m, cm), ceil_div(tiles_n, cn)
    r_m, r_n = wave_panels(t0 // cs, ceil_div(np.maximum(a, 1), cs), units_m, units_n, raster, group)
    return np.minimum(r_m * cm, tiles_m), np.minimum(r_n * cn, tiles_n)


def wave_panels(t0, a, tiles_m, tiles_n, raster, group):
    """Distinct A row panels r_m and B column panels r_n that tiles t0 .. t0+a-1 touch
    (``group``: the grouped raster's rows of tiles per group)."""
    a = np.maximum(a, 1)
    last = t0 + a - 1
    row_m = last // tiles_n - t0 // tiles_n + 1
    row_n = np.minimum(a, tiles_n)
    col_n = last // tiles_m - t0 // tiles_m + 1
    col_m = np.minimum(a, tiles_m)
    per_group = group * tiles_n
    g0, g1 = t0 // per_group, last // per_group
    rows_g = np.maximum(np.minimum(group, tiles_m - g0 * group), 1)
    r = t0 - g0 * per_group
    one_m = np.minimum(a, rows_g)
    one_n = (r + a - 1) // rows_g - r // rows_g + 1
    many_m = np.minimum(tiles_m - g0 * group, (g1 - g0 + 1) * group)
    grp_m = np.where(g1 == g0, one_m, many_m)
    grp_n = np.where(g1 == g0, one_n, tiles_n)
    r_m = np.select([raster == ROW, raster == COLUMN], [row_m, col_m], grp_m)
    r_n = np.select([raster == ROW, raster == COLUMN], [row_n, col_n], grp_n)
    return np.minimum(r_m, tiles_m), np.minimum(r_n, tiles_n)


def reuse_distance(tiles_m, tiles_n, raster, group):
    """Launch-order distance between consecutive users of one A panel (d_m) and one B panel (d_n).

    row raster: A shared by neighbours (1), B by the next tile row (tiles_n); column:
    transposed; grouped: B by neighbours in a group column (1), A by the next column of
    the group (rows of the group, <= ``group``). With clusters: on the unit grid, in units."""
    grp = np.maximum(np.minimum(group, tiles_m), 1)
    d_m = np.select([raster == ROW, raster == COLUMN], [np.ones_like(tiles_m), tiles_m], grp)
    d_n = np.select([raster == ROW, raster == COLUMN], [tiles_n, np.ones_like(tiles_n)], np.ones_like(tiles_n))
    return d_m, d_n


def wave_hit_rate(t0, a, tiles_m, tiles_n, raster, tile_m, tile_n, tile_k, in_bytes, l2e,
                  window_kblocks, m, n, k, s, skew_kblocks=0.0, group=DEFAULT_GROUP_M):
    """The L2 hit rate of the wave of tiles t0 .. t0+a-1 (effect ``l2_reuse``).

    Per operand: a wave touching r distinct panels hits on a - r of its a panel reads,
    provided the panel's k-block is still in L2 when the next user asks for it. Users d
    CTAs apart in launch order run skew_kblocks * d k-blocks apart, during which the wave
    streams its unique bytes per k-block, so the hit share is
        f(d) = min(1, L2e / (unique * TK * b * (window_kblocks + skew_kblocks * d))).
    The first read of a panel the previous wave also read hits with the share
        min(1, L2e / ((u_m*TM + u_n*TN) * K * b))
    (u: the two waves' distinct panels): everything both stream over K must fit. When A
    and B fit L2e together the rate is at least the compulsory-only one
        1 - (M + N)*K / (T * (TM + TN) * S * TK).
    Panels count their useful rows only: TMA never loads the rows of a tile that overhang
    the matrix (M = 1 with TM = 64), so those are no hits."""
    w = WaveBytes.of(Span.of(t0, a, tiles_m, tiles_n, raster, group), tiles_m, tiles_n, tile_m, tile_n, tile_k,
                     in_bytes, m, n, k, s)
    d_m, d_n = reuse_distance(tiles_m, tiles_n, raster, group)
    return span_hit_rate(w, l2e, window_kblocks, skew_kblocks, d_m, d_n)


@dataclass(frozen=True)
class WaveBytes:
    """What ``wave_hit_rate`` needs of a wave besides the L2 constants: its panels' rows
    and bytes (``Span`` over the useful tile extent TM' = min(TM, M/tiles_m), TN' likewise).
    With c = ``mult`` CTAs per tile (split-K) each tile's panels are read as c K segments:
    the segments are the wave's distinct panels (c*r_m, c*r_n)."""

    per_kblock: np.ndarray  # c*(r_m*TM' + r_n*TN') * TK * b: the wave's unique bytes per k-block
    rows_m: np.ndarray  # TM': a tile's useful rows of A
    rows_n: np.ndarray  # TN'
    hit_m: np.ndarray  # (a - c*r_m) * TM': A rows read again
    hit_n: np.ndarray  # (a - c*r_n) * TN'
    over: np.ndarray  # rows of panels the previous wave read too
    both_bytes: np.ndarray  # (u_m*TM' + u_n*TN') * KT * TK * b: what both waves stream over K
    rows: np.ndarray  # a * (TM' + TN'): every row the wave reads
    ab_bytes: np.ndarray  # (M + N) * K * b
    compulsory: np.ndarray  # the compulsory-only hit rate, in [0, 1]
    # the same four counted on the reads the L2 sees after multicast: a cluster row of cn
    # CTAs reads each A box once, a column of cm each B box (a1/cn A reads, a1/cm B reads)
    mc_hit_m: np.ndarray  # (a1/cn - c*r_m) * TM'
    mc_hit_n: np.ndarray  # (a1/cm - c*r_n) * TN'
    mc_rows: np.ndarray  # a1 * (TM'/cn + TN'/cm)
    mc_compulsory: np.ndarray

    @classmethod
    def of(cls, w: Span, tiles_m, tiles_n, tile_m, tile_n, tile_k, in_bytes, m, n, k, s) -> WaveBytes:
        """``s``: the k-blocks of a tile (KT)."""
        tile_m = np.minimum(tile_m, m / np.maximum(tiles_m, 1))
        tile_n = np.minimum(tile_n, n / np.maximum(tiles_n, 1))
        c, a1 = w.mult, w.a1
        r_m, r_n = w.r_m * c, w.r_n * c
        over_m = np.where(w.prev, np.maximum(w.p_m + w.r_m - w.u_m, 0), 0) * c
        over_n = np.where(w.prev, np.maximum(w.p_n + w.r_n - w.u_n, 0), 0) * c

        def compulsory(rows_per_tile):
            """The hit rate with compulsory misses only: every tile reading ``rows_per_tile``
            rows a k-block, the matrices' (M + N) * K elements each missed once."""
            return np.clip(1.0 - (m + n) * k / (tiles_m * tiles_n * rows_per_tile * s * tile_k), 0.0, 1.0)

        reads_m, reads_n = a1 / w.cn, a1 / w.cm
        return cls(per_kblock=(r_m * tile_m + r_n * tile_n) * tile_k * in_bytes, rows_m=tile_m, rows_n=tile_n,
                   hit_m=(a1 - r_m) * tile_m, hit_n=(a1 - r_n) * tile_n, over=over_m * tile_m + over_n * tile_n,
                   both_bytes=(w.u_m * tile_m + w.u_n * tile_n) * s * tile_k * in_bytes,
                   rows=a1 * (tile_m + tile_n), ab_bytes=(m + n) * k * in_bytes,
                   compulsory=compulsory(tile_m + tile_n),
                   mc_hit_m=np.maximum(reads_m - r_m, 0) * tile_m, mc_hit_n=np.maximum(reads_n - r_n, 0) * tile_n,
                   mc_rows=reads_m * tile_m + reads_n * tile_n, mc_compulsory=compulsory(tile_m / w.cn + tile_n / w.cm))


def span_hit_rate(w: WaveBytes, l2e, window_kblocks, skew_kblocks, d_m, d_n, multicast: bool = False):
    """``wave_hit_rate`` of the wave ``w`` (its panels' bytes), with the L2 constants and
    the reuse distances (d_m, d_n) of ``reuse_distance``. ``multicast``: the rate among the
    reads the L2 sees after cluster multicast (``WaveBytes.mc_*``), which is what the
    multicast-reduced requests of ``cta_bytes`` miss; otherwise among every CTA's reads."""
    f_m = np.minimum(1.0, l2e / (w.per_kblock * (window_kblocks + skew_kblocks * d_m)))
    f_n = np.minimum(1.0, l2e / (w.per_kblock * (window_kblocks + skew_kblocks * d_n)))
    hit_m, hit_n, rows, compulsory = ((w.mc_hit_m, w.mc_hit_n, w.mc_rows, w.mc_compulsory) if multicast
                                      else (w.hit_m, w.hit_n, w.rows, w.compulsory))
    f_x = np.minimum(1.0, l2e / w.both_bytes)
    hits = hit_m * f_m + hit_n * f_n + w.over * f_x
    h = np.clip(hits / rows, 0.0, 1.0)
    return np.where(w.ab_bytes <= l2e, np.maximum(h, compulsory), h)
