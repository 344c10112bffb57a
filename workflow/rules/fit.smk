# One fit per GPU: the microbenchmark parameters, ws-pipelined's constants on every
# development row and, for GPUs with measurements (CORRECTED_GPUS), the residual
# correction from the same in-memory fit. GPUs without measurements get params only.
rule fit:
    output:
        params="results/{gpu}/params.json",
        correction="results/{gpu}/correction.json",
    input:
        hardware="results/{gpu}/hardware.json",
        microbench=microbench,
        measurements=all_measurements,
    wildcard_constraints:
        gpu="|".join(CORRECTED_GPUS) or "(?!)",
    params:
        families=",".join(config["families"]),
        dtype=config["dtype"],
        heldout=config["heldout_testlist"],
        overrides=SET_PARAMS,
        code=code_version("fit"),
    log:
        "logs/{gpu}/fit.log",
    shell:
        "gemmperf fit --gpu {input.hardware} --microbench {input.microbench}"
        " --measurements {input.measurements} --heldout {params.heldout}"
        " --families {params.families} --dtype {params.dtype} {params.overrides}"
        " --out {output.params} --correction-out {output.correction} > {log} 2>&1"


rule fit_params:
    output:
        params="results/{gpu}/params.json",
    input:
        hardware="results/{gpu}/hardware.json",
        microbench=microbench,
        measurements=all_measurements,
    wildcard_constraints:
        gpu="|".join(g for g in GPUS if g not in CORRECTED_GPUS) or "(?!)",
    params:
        families=",".join(config["families"]),
        dtype=config["dtype"],
        heldout=config["heldout_testlist"],
        overrides=SET_PARAMS,
        code=code_version("fit"),
    log:
        "logs/{gpu}/fit.log",
    shell:
        "gemmperf fit --gpu {input.hardware} --microbench {input.microbench}"
        " --measurements {input.measurements} --heldout {params.heldout}"
        " --families {params.families} --dtype {params.dtype} {params.overrides}"
        " --out {output.params} > {log} 2>&1"


# Out-of-sample accuracy (grouped CV by shape + the held-out testlist); scores only.
# The held-out split is scored with rule fit's params.json and correction.json (the fit on
# every development row, made with the same flags) instead of refitting it; the per-fold
# fits run on {threads} worker processes: 4 asked, which a local run lowers to --cores and
# a cluster job gets as CPUs (workflow.cores is undefined under a profile that sets only
# --jobs). Its priority starts it as soon as the fit is done, before the single-core
# predict and optimize jobs, which then share the cores among themselves (started after
# them, it waited for two free cores while one long optimize held one). The ablations are
# not part of it: rule score_ablations below.
rule accuracy:
    output:
        accuracy="results/{gpu}/accuracy.json",
        table="results/{gpu}/accuracy.csv",
        predictions="results/{gpu}/out_of_sample.parquet",
    input:
        hardware="results/{gpu}/hardware.json",
        microbench=microbench,
        measurements=all_measurements,
        params="results/{gpu}/params.json",
        correction="results/{gpu}/correction.json",
    threads: 4
    priority: 1
    params:
        families=",".join(config["families"]),
        dtype=config["dtype"],
        heldout=config["heldout_testlist"],
        residual="" if config["residual"] else "--no-residual",
        overrides=SET_PARAMS,
        code=code_version("accuracy"),
    log:
        "logs/{gpu}/accuracy.log",
    shell:
        "gemmperf accuracy --gpu {input.hardware} --microbench {input.microbench}"
        " --measurements {input.measurements} --heldout {params.heldout}"
        " --families {params.families} --dtype {params.dtype} {params.residual}"
        " {params.overrides} --params {input.params} --correction {input.correction}"
        " --jobs {threads} --out {output.accuracy}"
        " --table {output.table} --predictions {output.predictions} > {log} 2>&1"


# ws-pipelined refitted with each of its effects switched off, on the same splits as
# accuracy (plus ws-pipelined+fit, their baseline): about 10 minutes on 2 cores, so only
# on request, by the target `ablations` or the config's ablations: true
# (which also shows them in the report).
rule score_ablations:
    output:
        scores="results/{gpu}/ablations.json",
        table="results/{gpu}/ablations.csv",
    input:
        hardware="results/{gpu}/hardware.json",
        microbench=microbench,
        measurements=all_measurements,
    threads: 4
    params:
        families=",".join(config["families"]),
        dtype=config["dtype"],
        heldout=config["heldout_testlist"],
        overrides=SET_PARAMS,
        code=code_version("accuracy"),
    log:
        "logs/{gpu}/ablations.log",
    shell:
        "gemmperf accuracy --gpu {input.hardware} --microbench {input.microbench}"
        " --measurements {input.measurements} --heldout {params.heldout}"
        " --families {params.families} --dtype {params.dtype} {params.overrides}"
        " --ablations-only --jobs {threads} --out {output.scores}"
        " --table {output.table} > {log} 2>&1"
