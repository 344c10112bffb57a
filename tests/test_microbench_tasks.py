"""bench.microbench's runs without a GPU: every kernel run is legal, and the cluster runs
(what running in clusters costs, fit.transfer's "cluster" figure) tile one wave exactly."""

from __future__ import annotations

import pytest

from gemmperf.bench.microbench import CLUSTER_KIND, CLUSTERS, KINDS, kind_of, microbench_tasks
from gemmperf.hardware import get_gpu
from gemmperf.kernels import check_legal
from gemmperf.problem import KernelConfig

H100 = get_gpu("h100-sxm5-80gb")


def _config(task: dict) -> KernelConfig:
    return KernelConfig(**{k: v for k, v in task.items() if k not in ("m", "n", "k")})


@pytest.mark.parametrize("dtype, tile_k", [("bf16", 64), ("fp8", 128)])
def test_ws_hopper_times_its_128x128_tile_alone_and_in_clusters_of_two(dtype, tile_k):
    tasks = microbench_tasks(H100, ["ws-hopper"], dtype)
    assert all(check_legal(_config(t), H100) is None for t in tasks)
    runs = [t for t in tasks if kind_of(t["mode"]) == CLUSTER_KIND]
    assert [(t["cluster_m"], t["cluster_n"]) for t in runs] == list(CLUSTERS)
    for t in runs:
        assert (t["tile_m"], t["tile_n"], t["tile_k"], t["k"]) == (128, 128, tile_k, tile_k)  # one k-block
        assert not t["persistent"]
        tiles_m, tiles_n = t["m"] // 128, t["n"] // 128
        assert tiles_m * tiles_n == H100.sms  # one wave, one CTA per SM
        assert tiles_m % t["cluster_m"] == 0 and tiles_n % t["cluster_n"] == 0
    # every kind is there: the four ablation modes and the cluster runs
    assert {kind_of(t["mode"]) for t in tasks} == {*KINDS.values(), CLUSTER_KIND}


def test_families_without_clusters_have_no_cluster_runs():
    tasks = microbench_tasks(get_gpu("a100-sxm4-80gb"), ["ws-ampere", "simt"], "bf16")
    assert tasks and all(kind_of(t["mode"]) != CLUSTER_KIND for t in tasks)
