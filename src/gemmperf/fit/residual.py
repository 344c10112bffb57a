"""Residual correction: learn log(measured / predicted) of the analytical model.

Features (``FEATURES``, polars expressions over whole columns of a ws-pipelined
prediction table, see ``features``) have a physical meaning:
  log_ai            log2 arithmetic intensity 2MNK / ((MK + NK + MN) * bytes)
  log_flops         log2 of 2MNK
  log_k_stages      log2 ceil(K / TK)
  waves             waves of CTAs (ceil(tiles / SMs))
  last_wave_fill    active CTAs of the last wave / SMs
  log_tiles_per_sm  log2 (tiles / SMs)
  padding_waste     1 - useful / padded work (the PA2 dips)
  pad_m, pad_n, pad_k   overhang fraction of the last tile along M, N, K
  n_vec8            1 when N % 8 == 0 (16-byte epilogue stores)
  l2_hit            the model's L2 hit-rate estimate for the first wave
  mainloop_share, epilogue_share, fill_share   phases over the predicted total
  log_tile_m, log_tile_n, stages, persistent, raster_row/column/grouped
  limiter_<name>    one-hot of the model's limiter
  log_pred          log2 predicted time
  log_m, log_n, log_k, log_tiles_m, log_tiles_n   problem and tile-grid extents
  load_over_math    log2 of the model's per-k-block transfer over multiply time
  period_over_math, period_over_load   log2 of the ring's steady period over the
                    multiply and over the transfer of a k-block: how far the latency term
                    (or the p-norm of close terms) holds the loop above either
  log_wave_bytes    log2 of the padded A + B bytes (against the L2 size)
  log_flop_rate     log2 of padded flops over the predicted time (power draw; with
                    log_pred, what the power limit's clock drops follow)
  epilogue_tma, pingpong, log_cluster_m, log_cluster_n, log_split_k, stream_k
                    the configuration's epilogue, schedule, cluster and K split
  reduction_share   split-K's / stream-K's partial writes and fix-up over the total
  ab_line_off, ab_sector_off   share of A's and B's rows off their 128-byte line and their
                    32-byte sector (K's padded pitch; the model's ``geometry.line_shares``)
  c_sector_off      share of C's rows off their 32-byte sector (N's pitch): where the
                    model's split requests and shared sectors price rows off their sector
                    at a fraction of what the short-K probe measured (step 37)

Estimator: ``ResidualRegressor``, gradient-boosted regression trees of 63 leaves grown
best split first, squared loss, split points among 255 quantile bins per feature
(sklearn's HistGradientBoostingRegressor), no row or feature subsampling: the fit is
deterministic. ``splits="exact"`` grows them on every split point instead, with Huber loss
(GradientBoostingRegressor, the estimator until issue 17's step 43: as accurate
leave-one-testlist-out and ~3x slower, benchmarks/MODEL_ACCURACY.md).
Serialization without pickle: after fitting, every tree is copied into plain arrays
(feature, threshold, left, right, value);
``predict`` walks those arrays itself, vectorized over rows and trees, and ``to_dict``/``from_dict``
round-trip them through JSON exactly. Why this choice: boosted trees capture the
piecewise behaviour of GEMM residuals (wave quantization, limiter changes) that a ridge
on smooth features misses, and owning the arrays removes any dependence on pickle or on
sklearn's private layout at load time (loading needs numpy only).

``predict --corrected`` uses ``load_correction(results_dir, gpu_slug)``, which returns
``correct(predictions) -> predictions`` adding ``corrected_us`` and ``correction``.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import numpy as np
import polars as pl
from sklearn.base import BaseEstimator, RegressorMixin

from ..errors import UserError
from ..models import ws_pipelined
from ..models.ws_pipelined.geometry import line_shares
from ..problem import DTYPE_BYTES, OUT_DTYPES
from ..progress import bar
from ..tables import canonical_order

FORMAT = "gemmperf-residual-1"
BASE_MODEL = ws_pipelined.NAME
# a kernel bound by its DRAM writes of C counts as epilogue-bound here, as before that
# limiter had a name of its own (the correction's features did not change with it)
LIMITER_NAMES = tuple(name for name in ws_pipelined.LIMITERS if name != "writes")
LIMITER_AS = {"writes": "epilogue"}

_LOG2 = lambda e: e.cast(pl.Float64).log(2)  # noqa: E731


def _bytes(dtype=pl.col("dtype")):
    return dtype.replace_strict({d: float(b) for d, b in DTYPE_BYTES.items()}, default=2.0, return_dtype=pl.Float64)


ROW_SHARES = ("ab_line_off", "ab_sector_off", "c_sector_off")


def feature_exprs(sms: int) -> dict[str, pl.Expr]:
    m, n, k = (pl.col(c).cast(pl.Float64) for c in ("m", "n", "k"))
    tm, tn, tk = (pl.col(c).cast(pl.Float64) for c in ("tile_m", "tile_n", "tile_k"))
    total = pl.col("predicted_us")
    ceil = lambda a, b: (a / b).ceil()  # noqa: E731
    exprs = {
        "log_ai": (2 * m * n * k / ((m * k + n * k + m * n) * _bytes())).log(2),
        "log_flops": (2 * m * n * k).log(2),
        "log_k_stages": _LOG2(pl.col("k_stages")),
        "waves": pl.col("waves").cast(pl.Float64),
        "last_wave_fill": pl.col("last_wave_sms").cast(pl.Float64) / sms,
        "log_tiles_per_sm": (pl.col("tiles").cast(pl.Float64) / sms).log(2),
        "padding_waste": pl.col("padding_waste"),
        "pad_m": 1 - m / (ceil(m, tm) * tm),
        "pad_n": 1 - n / (ceil(n, tn) * tn),
        "pad_k": 1 - k / (ceil(k, tk) * tk),
        "n_vec8": (pl.col("n") % 8 == 0).cast(pl.Float64),
        "l2_hit": pl.col("l2_hit_rate_est"),
        "mainloop_share": pl.col("mainloop_us") / total,
        "epilogue_share": pl.col("epilogue_us") / total,
        "fill_share": pl.col("fill_us") / total,
        "log_tile_m": _LOG2(pl.col("tile_m")),
        "log_tile_n": _LOG2(pl.col("tile_n")),
        "stages": pl.col("stages").cast(pl.Float64),
        "persistent": pl.col("persistent").cast(pl.Float64),
        **{f"raster_{r}": (pl.col("raster") == r).cast(pl.Float64) for r in ("row", "column", "grouped")},
        **{f"limiter_{name}": pl.col("limiter").replace(LIMITER_AS).eq(name).cast(pl.Float64)
           for name in LIMITER_NAMES},
        "log_pred": total.log(2),
        "log_m": m.log(2), "log_n": n.log(2), "log_k": k.log(2),
        "log_tiles_m": ceil(m, tm).log(2), "log_tiles_n": ceil(n, tn).log(2),
        "load_over_math": (pl.col("stage_load_us") / pl.col("stage_math_us")).log(2),
        # where the ring's period sits above its multiply and its transfer: the latency-bound
        # rows (59% of the fitted model's error in sample) told apart by how far
        "period_over_math": (pl.col("stage_period_us") / pl.col("stage_math_us")).log(2),
        "period_over_load": (pl.col("stage_period_us") / pl.col("stage_load_us")).log(2),
        "log_wave_bytes": ((ceil(m, tm) * tm * k + ceil(n, tn) * tn * k) * _bytes()).log(2),
        # sustained tensor-core rate the model predicts: long runs at a high rate hit the
        # power limit and the SM clock drops (recorded per row, unknown at prediction time)
        "log_flop_rate": (2 * ceil(m, tm) * tm * ceil(n, tn) * tn * k / total).log(2),
        # the configuration dimensions of issue 16's kernels: where the analytical model's
        # epilogue, cluster, schedule and split-K / stream-K terms are off, by how much
        "epilogue_tma": (pl.col("epilogue") == "tma").cast(pl.Float64),
        "pingpong": (pl.col("schedule") == "pingpong").cast(pl.Float64),
        "log_cluster_m": _LOG2(pl.col("cluster_m")),
        "log_cluster_n": _LOG2(pl.col("cluster_n")),
        "log_split_k": _LOG2(pl.col("split_k")),
        "stream_k": pl.col("stream_k").cast(pl.Float64),
        "reduction_share": pl.col("reduction_us") / total,
        # rows off their line and sector (``row_shares``' columns): the TMA engine's time per
        # request, which the model's row_alignment and split_row_latency underprice (step 37)
        **{name: pl.col(f"_{name}") for name in ROW_SHARES},
    }
    return exprs


def row_shares(pred: pl.DataFrame) -> pl.DataFrame:
    """``pred`` with ``_ab_line_off``, ``_ab_sector_off`` and ``_c_sector_off``: the model's
    ``line_shares`` of K's pitch in the input's bytes and of N's in the output's."""
    out_dtype = pl.col("out_dtype") if "out_dtype" in pred.columns else pl.lit(None, pl.String)
    out_dtype = out_dtype.fill_null(pl.col("dtype").replace(OUT_DTYPES))
    nbytes = pred.select(_bytes().alias("in"), _bytes(out_dtype).alias("out"))
    line_off, sector_off = line_shares(pred.get_column("k").to_numpy(), nbytes.get_column("in").to_numpy())
    c_sector_off = line_shares(pred.get_column("n").to_numpy(), nbytes.get_column("out").to_numpy())[1]
    return pred.with_columns(pl.Series("_ab_line_off", line_off), pl.Series("_ab_sector_off", sector_off),
                             pl.Series("_c_sector_off", c_sector_off))


FEATURES = tuple(feature_exprs(1))


def features(pred: pl.DataFrame, sms: int) -> pl.DataFrame:
    """The FEATURES columns of a ws-pipelined prediction table (same row order)."""
    need = {"m", "n", "k", "tile_m", "tile_n", "tile_k", "stages", "persistent", "raster", "dtype",
            "predicted_us", "limiter", "k_stages", "waves", "last_wave_sms", "tiles", "padding_waste",
            "l2_hit_rate_est", "mainloop_us", "epilogue_us", "fill_us", "stage_load_us", "stage_math_us",
            "stage_period_us", "epilogue", "schedule", "cluster_m", "cluster_n", "split_k", "stream_k", "reduction_us"}
    missing = sorted(need - set(pred.columns))
    if missing:
        raise UserError(f"residual features need a {BASE_MODEL} prediction table; missing {', '.join(missing)}")
    exprs = feature_exprs(sms)
    return row_shares(pred).select(e.alias(name) for name, e in exprs.items()).fill_nan(0.0).fill_null(0.0)


def target(pred: pl.DataFrame, measured: str = "time_us") -> np.ndarray:
    """log(measured / predicted) per row."""
    return np.log(pred.get_column(measured).to_numpy() / pred.get_column("predicted_us").to_numpy())


# ------------------------------------------------------------------ estimator


class ResidualRegressor(RegressorMixin, BaseEstimator):
    """Boosted regression trees whose fitted state is plain arrays (JSON-serializable).

    2700 trees at a learning rate of 0.025, each grown best split first to 63 leaves of
    at least 32 rows: a correction learned from many configurations carries to testlists
    the fit never saw, one from a few does not (issue 17 step 16), and a tree that spends
    its splits where the error is, rather than on every branch to depth 4, can follow an
    interaction of more than four terms down one branch (step 22). Split points among
    quantile bins (step 43): the fits of the workflow's 18,000-row corrections ~3x
    faster than exact splits at 600 trees, as accurate. 3600 trees where step 43 grew
    2400, once the H100's corrections learned from 25,000 rows (step 46); 5400 once they
    learned from 70,747 (step 52); half as many of twice the leaves once they learned from
    79,223 (step 53: the same splits a correction, each tree one more level of
    interaction). All chosen
    leave-one-testlist-out on the development data (benchmarks/MODEL_ACCURACY.md)."""

    def __init__(self, n_estimators=2700, learning_rate=0.025, max_depth=None, min_samples_leaf=32,
                 loss="squared_error", alpha=0.9, subsample=1.0, max_features=None, random_state=0,
                 max_leaf_nodes=63, splits="binned"):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth  # None: as deep as max_leaf_nodes lets a tree grow
        self.max_leaf_nodes = max_leaf_nodes  # set: each tree grows best split first to this many leaves
        self.min_samples_leaf = min_samples_leaf
        self.loss = loss
        self.alpha = alpha
        self.subsample = subsample  # share of rows each tree sees (1.0: all; below: stochastic boosting)
        self.max_features = max_features  # share of features a split weighs (None: all)
        self.random_state = random_state
        # "binned": split points among 255 quantile bins per feature (HistGradientBoostingRegressor;
        # losses squared_error, absolute_error); "exact": every split point of every feature
        # (GradientBoostingRegressor; its losses, huber with alpha among them, and subsample)
        self.splits = splits

    def fit(self, X, y, progress: bool = False):
        """Fit on X (rows x FEATURES) and y; ``progress``: a bar of the trees."""
        from sklearn.ensemble import GradientBoostingRegressor

        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != y.shape[0] or X.shape[0] == 0:
            raise UserError(f"ResidualRegressor.fit: X {X.shape} and y {y.shape} do not match")
        if self.splits == "binned":
            return self._fit_binned(X, y, progress)
        if self.splits != "exact":
            raise UserError(f"ResidualRegressor: splits {self.splits!r} is neither 'exact' nor 'binned'")
        gb = GradientBoostingRegressor(
            n_estimators=self.n_estimators, learning_rate=self.learning_rate, max_depth=self.max_depth,
            max_leaf_nodes=self.max_leaf_nodes,
            min_samples_leaf=self.min_samples_leaf, loss=self.loss, alpha=self.alpha, subsample=self.subsample,
            max_features=self.max_features, random_state=self.random_state)
        if progress:
            trees = bar(total=self.n_estimators, desc="residual correction", unit="tree")
            def monitor(*_) -> bool:  # sklearn calls it after each tree; False: go on (same fit)
                trees.update()
                return False

            with trees:
                gb.fit(X, y, monitor=monitor)
        else:
            gb.fit(X, y)
        self.n_features_in_ = X.shape[1]
        self.init_ = float(gb.init_.predict(X[:1]).ravel()[0]) if hasattr(gb.init_, "predict") else 0.0
        self.trees_ = []
        for est in gb.estimators_[:, 0]:
            t = est.tree_
            self.trees_.append({
                "feature": t.feature.astype(np.int64), "threshold": t.threshold.astype(np.float64),
                "left": t.children_left.astype(np.int64), "right": t.children_right.astype(np.int64),
                "value": t.value[:, 0, 0].astype(np.float64)})
        self.depth_ = int(max((e.get_depth() for e in gb.estimators_[:, 0]), default=0))
        self.scale_ = self.learning_rate  # a tree's step: its leaf value times the learning rate
        return self

    BINNED_STEPS = 8  # warm-started calls of the binned fit while a progress bar shows (each re-bins the rows)

    def _fit_binned(self, X, y, progress: bool):
        """The binned fit, its trees copied into the same arrays. The copy reads the
        fitted estimator's ``_predictors`` and ``_baseline_prediction`` (sklearn's own
        layout, not public): it is checked against sklearn's predict on training rows.
        One OpenMP thread: the histograms' sums then do not depend on the machine's cores
        (the same trees everywhere), and the workflow's jobs already fill the cores (on 2
        cores beside another job, two threads took 4x one's time)."""
        from sklearn.ensemble import HistGradientBoostingRegressor
        from threadpoolctl import threadpool_limits

        if self.loss not in ("squared_error", "absolute_error") or self.subsample != 1.0:
            raise UserError(f"ResidualRegressor: the binned fit takes loss squared_error or absolute_error and no "
                            f"row subsampling (loss {self.loss!r}, subsample {self.subsample}); splits='exact' does")
        gb = HistGradientBoostingRegressor(
            loss=self.loss, learning_rate=self.learning_rate, max_iter=0, max_leaf_nodes=self.max_leaf_nodes,
            max_depth=self.max_depth, min_samples_leaf=self.min_samples_leaf, l2_regularization=0.0,
            max_features=1.0 if self.max_features is None else self.max_features, early_stopping=False,
            warm_start=True, random_state=self.random_state)
        trees = bar(total=self.n_estimators, desc="residual correction", unit="tree") if progress else None
        # warm-started in steps where a bar shows (the same trees as one call, ~35% slower)
        steps = self.BINNED_STEPS if trees is not None and not getattr(trees, "disable", True) else 1
        with trees or contextlib.nullcontext(), threadpool_limits(limits=1, user_api="openmp"):
            for i in range(1, steps + 1):
                grown = gb.max_iter
                gb.max_iter = self.n_estimators * i // steps
                gb.fit(X, y)
                if trees is not None:
                    trees.update(gb.max_iter - grown)
        self.n_features_in_ = X.shape[1]
        self.init_ = float(np.asarray(gb._baseline_prediction).ravel()[0])
        self.trees_ = []
        for (tree,) in gb._predictors:
            nodes = tree.nodes
            leaf = nodes["is_leaf"].astype(bool)
            idx = lambda name, at_leaf: np.where(leaf, at_leaf, nodes[name].astype(np.int64))  # noqa: E731 (unsigned)
            self.trees_.append({
                "feature": idx("feature_idx", -2), "left": idx("left", -1), "right": idx("right", -1),
                "threshold": np.where(leaf, -2.0, nodes["num_threshold"]).astype(np.float64),
                "value": nodes["value"].astype(np.float64)})
        self.depth_ = int(max((int(t.nodes["depth"].max()) for (t,) in gb._predictors), default=0))
        self.scale_ = 1.0  # the binned fit's leaf values carry the learning rate already
        probe = X[:: max(1, X.shape[0] // 2000)]  # a layout check: 2000 of the rows tell
        if not np.allclose(self.predict(probe), gb.predict(probe), rtol=0, atol=1e-9):
            raise UserError("ResidualRegressor: the binned trees copied from sklearn do not predict as sklearn "
                            "does (its layout changed); fit with splits='exact'")
        return self

    # rows x trees walked at once (a chunk of rows at a time, this many nodes in flight)
    PREDICT_NODES = 1 << 18

    def _forest(self) -> dict:
        """Every tree's arrays in one, children as indices into it (-1 at a leaf), and each
        tree's root: the forest walked in one pass rather than tree by tree."""
        if getattr(self, "_forest_of", None) is not self.trees_:
            roots = np.cumsum([0] + [len(t["left"]) for t in self.trees_[:-1]])
            glue = lambda name: np.concatenate([t[name] for t in self.trees_])  # noqa: E731
            child = lambda name: np.concatenate(  # noqa: E731
                [np.where(t[name] < 0, -1, t[name] + r) for t, r in zip(self.trees_, roots)])
            self._forest_cache = {"roots": roots, "feature": np.maximum(glue("feature"), 0),
                                  "threshold": glue("threshold"), "left": child("left"), "right": child("right"),
                                  "value": glue("value")}
            self._forest_of = self.trees_
        return self._forest_cache

    def predict(self, X):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_features_in_:
            raise UserError(f"ResidualRegressor.predict: expected {self.n_features_in_} features, got {X.shape}")
        f = self._forest()
        out = np.full(X.shape[0], self.init_)
        step = max(1, self.PREDICT_NODES // max(1, len(self.trees_)))
        for lo in range(0, X.shape[0], step):
            x = X[lo:lo + step]
            rows = np.arange(x.shape[0])[:, None]
            node = np.broadcast_to(f["roots"], (x.shape[0], len(f["roots"]))).copy()
            for _ in range(self.depth_):
                left = f["left"][node]
                leaf = left < 0
                if leaf.all():  # every tree at a leaf for these rows (most trees are shallower than depth_)
                    break
                go_left = x[rows, f["feature"][node]] <= f["threshold"][node]
                node = np.where(leaf, node, np.where(go_left, left, f["right"][node]))
            # the trees' steps summed in order, as one tree at a time would (cumsum is sequential)
            steps = np.concatenate([out[lo:lo + step, None], self.scale_ * f["value"][node]], axis=1)
            out[lo:lo + step] = np.cumsum(steps, axis=1)[:, -1]
        return out

    def to_dict(self) -> dict:
        return {"params": self.get_params(), "n_features_in": self.n_features_in_, "init": self.init_,
                "depth": self.depth_, "scale": self.scale_,
                "trees": [{k: v.tolist() for k, v in t.items()} for t in self.trees_]}

    @classmethod
    def from_dict(cls, data: dict) -> ResidualRegressor:
        est = cls(**data["params"])
        est.n_features_in_ = int(data["n_features_in"])
        est.init_ = float(data["init"])
        est.depth_ = int(data["depth"])
        est.scale_ = float(data.get("scale", est.learning_rate))
        types = {"feature": np.int64, "threshold": np.float64, "left": np.int64, "right": np.int64,
                 "value": np.float64}
        est.trees_ = [{k: np.asarray(t[k], dtype=types[k]) for k in types} for t in data["trees"]]
        return est


# ------------------------------------------------------------------ correction


class Correction:
    """A fitted residual model plus what it needs to apply itself to predictions."""

    def __init__(self, estimator: ResidualRegressor, sms: int, meta: dict | None = None):
        self.estimator = estimator
        self.sms = int(sms)
        self.meta = dict(meta or {})

    @classmethod
    def fit(cls, pred: pl.DataFrame, sms: int, measured: str = "time_us", meta: dict | None = None,
            progress: bool = False, **estimator_params) -> Correction:
        # the trees' tied splits and float sums follow row order: fit in a canonical one
        pred = canonical_order(pred)
        X = features(pred, sms).to_numpy()
        y = target(pred, measured)
        ok = np.isfinite(y)
        est = ResidualRegressor(**estimator_params).fit(X[ok], y[ok], progress=progress)
        return cls(est, sms, {**(meta or {}), "n_train": int(ok.sum())})

    def onto(self, sms: int) -> Correction:
        """The same trees applied on a GPU of ``sms`` SMs (a correction carried to another GPU
        with the fit, ``fit.transfer``): the features in SMs (``last_wave_fill``,
        ``log_tiles_per_sm``) count the target's."""
        trained_on = self.meta.get("trained_on_sms", self.sms)
        return Correction(self.estimator, sms, {**self.meta, "trained_on_sms": trained_on})

    def factor(self, pred: pl.DataFrame) -> np.ndarray:
        return np.exp(self.estimator.predict(features(pred, self.sms).to_numpy()))

    def __call__(self, pred: pl.DataFrame) -> pl.DataFrame:
        """``pred`` (a ws-pipelined table) with corrected_us and correction columns."""
        f = self.factor(pred)
        return pred.with_columns(pl.Series("correction", f),
                                 (pl.col("predicted_us") * pl.Series(f)).alias("corrected_us"))

    def to_dict(self) -> dict:
        return {"format": FORMAT, "base_model": BASE_MODEL, "features": list(FEATURES), "sms": self.sms,
                "meta": self.meta, "estimator": self.estimator.to_dict()}

    @classmethod
    def from_dict(cls, data: dict, origin: str = "correction") -> Correction:
        if data.get("format") != FORMAT:
            raise UserError(f"{origin}: not a {FORMAT} file (format {data.get('format')!r})")
        if list(data.get("features", [])) != list(FEATURES):
            raise UserError(f"{origin}: written with other features; refit it (gemmperf accuracy)")
        return cls(ResidualRegressor.from_dict(data["estimator"]), data["sms"], data.get("meta"))

    def save(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_dict()) + "\n")

    @classmethod
    def load(cls, path: str | Path) -> Correction:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as err:
            raise UserError(f"{path}: cannot read the residual correction ({err})") from None
        return cls.from_dict(data, str(path))


def correction_path(results_dir: str | Path, gpu: str) -> Path:
    return Path(results_dir) / gpu / "correction.json"


def load_correction(results_dir: str | Path, gpu: str):
    """``correct(predictions) -> predictions`` for GPU slug ``gpu``, from results/<gpu>/correction.json.

    ``predictions`` must be a ws-pipelined table (models.predict(configs, pset, "ws-pipelined"))
    made with the same GPU's fitted params.json; it gains ``correction`` and ``corrected_us``.
    """
    path = correction_path(results_dir, gpu)
    if not path.is_file():
        raise UserError(f"{path}: no residual correction for {gpu}; run `gemmperf accuracy` (the residual rule) first")
    return Correction.load(path)
