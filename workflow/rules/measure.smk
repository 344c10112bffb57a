# Measurements need the local GPU; GPUs with shipped data use those files instead.


rule microbench:
    output:
        "results/{gpu}/microbench.csv",
    input:
        hardware="results/{gpu}/hardware.json",
    params:
        families=",".join(config["families"]),
        dtype=config["dtype"],
    resources:
        gpu=1,
    log:
        "logs/{gpu}/microbench.log",
    shell:
        "gemmperf microbench --gpu {input.hardware} --out {output}"
        " --families {params.families} --dtype {params.dtype} > {log} 2>&1"


rule collect_shard:
    output:
        "results/{gpu}/measurements/shards/{testlist}.{shard}-of-{shards}.csv",
    input:
        hardware="results/{gpu}/hardware.json",
        testlist=testlist_path,
    params:
        families=",".join(config["families"]),
        dtype=config["dtype"],
        preset=lambda w: config["collect"]["presets"].get(w.testlist, "medium"),
        warm_l2="--warm-l2" if config["collect"]["warm_l2"] else "",
        rel_spread=config["collect"]["rel_spread"],
        max_seconds=config["collect"]["max_seconds"],
    resources:
        gpu=1,
    log:
        "logs/{gpu}/collect/{testlist}.{shard}-of-{shards}.log",
    shell:
        "gemmperf collect --gpu {input.hardware} --testlist {input.testlist}"
        " --out {output} --families {params.families} --dtype {params.dtype} --preset {params.preset}"
        " --shard {wildcards.shard}/{wildcards.shards} {params.warm_l2}"
        " --rel-spread {params.rel_spread} --max-seconds {params.max_seconds} > {log} 2>&1"


rule merge_shards:
    output:
        "results/{gpu}/measurements/{testlist}.csv",
    input:
        lambda w: expand(
            "results/{gpu}/measurements/shards/{testlist}.{shard}-of-{shards}.csv",
            gpu=w.gpu,
            testlist=w.testlist,
            shard=range(config["collect"]["shards"]),
            shards=config["collect"]["shards"],
        ),
    log:
        "logs/{gpu}/merge/{testlist}.log",
    script:
        "../scripts/merge_shards.py"
