# Measurements need the local GPU; GPUs with shipped data use those files instead.
# Both rules run per run (a GPU and an input dtype of the config's dtypes: {run} is the
# GPU's slug for bf16, <slug>/<dtype> for another dtype).
# Each GPU job takes resources gpu=1 (the profile caps the node's total) and runs under
# `gemmperf gpu-slot`, which claims one free GPU of the node and pins the job to it
# (CUDA_VISIBLE_DEVICES), so N shards run at once on N GPUs, never two on one.
#
# Every value substituted into a command is quoted (`:q`); wildcards are constrained.


wildcard_constraints:
    shard=r"\d+",
    shards=r"\d+",


rule microbench:
    input:
        hardware=run_hardware,
    output:
        "results/{run}/microbench.csv",
    log:
        "logs/{run}/microbench.log",
    resources:
        gpu=1,
    params:
        families=",".join(config["families"]),
        dtype=run_dtype,
        code=code_version("microbench"),
    shell:
        logged(
            "gemmperf gpu-slot -- gemmperf microbench --gpu {input.hardware:q} --out {output:q}"
            " --families {params.families:q} --dtype {params.dtype:q}"
        )


rule collect_shard:
    input:
        hardware=run_hardware,
        testlist=testlist_path,
    output:
        "results/{run}/measurements/shards/{testlist}.{shard}-of-{shards}.csv",
    log:
        "logs/{run}/collect/{testlist}.{shard}-of-{shards}.log",
    resources:
        gpu=1,
    params:
        journal=collect_journal,
        shard=lambda w: f"{w.shard}/{w.shards}",
        families=",".join(config["families"]),
        dtype=run_dtype,
        preset=collect_preset,
        sample_count=collect_sample_count,
        sample_seed=config["collect"]["sample"]["seed"],
        # a list of words (one flag or none), each quoted
        warm_l2=["--warm-l2"] if config["collect"]["warm_l2"] is True else [],
        rel_spread=config["collect"]["rel_spread"],
        max_seconds=config["collect"]["max_seconds"],
        code=code_version("collect"),
    shell:
        logged(
            "gemmperf gpu-slot -- gemmperf collect --gpu {input.hardware:q} --testlist {input.testlist:q}"
            " --out {output:q} --journal {params.journal:q} --families {params.families:q}"
            " --dtype {params.dtype:q} --preset {params.preset:q} --sample-count {params.sample_count:q}"
            " --sample-seed {params.sample_seed:q} --shard {params.shard:q} {params.warm_l2:q}"
            " --rel-spread {params.rel_spread:q} --max-seconds {params.max_seconds:q}"
        )


rule merge_shards:
    input:
        lambda w: expand(
            "results/{run}/measurements/shards/{testlist}.{shard}-of-{shards}.csv",
            run=w.run,
            testlist=w.testlist,
            shard=range(config["collect"]["shards"]),
            shards=config["collect"]["shards"],
        ),
    output:
        "results/{run}/measurements/{testlist}.csv",
    log:
        "logs/{run}/merge/{testlist}.log",
    params:
        code=code_version("merge"),
    shell:
        logged("gemmperf merge {input:q} --out {output:q}")
