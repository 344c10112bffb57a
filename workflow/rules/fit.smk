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
        gpu=one_of(CORRECTED_GPUS),
    params:
        families=",".join(config["families"]),
        dtype=config["dtype"],
        heldout=HELDOUT,
        overrides=SET_PARAMS,
        code=code_version("fit"),
    log:
        "logs/{gpu}/fit.log",
    shell:
        logged(
            "gemmperf fit --gpu {input.hardware:q} --microbench {input.microbench:q}"
            " --measurements {input.measurements:q} {params.heldout:q}"
            " --families {params.families:q} --dtype {params.dtype:q} {params.overrides:q}"
            " --out {output.params:q} --correction-out {output.correction:q}"
        )


rule fit_params:
    output:
        params="results/{gpu}/params.json",
    input:
        hardware="results/{gpu}/hardware.json",
        microbench=microbench,
        measurements=all_measurements,
    wildcard_constraints:
        gpu=one_of(g for g in GPUS if g not in CORRECTED_GPUS),
    params:
        families=",".join(config["families"]),
        dtype=config["dtype"],
        heldout=HELDOUT,
        overrides=SET_PARAMS,
        code=code_version("fit"),
    log:
        "logs/{gpu}/fit.log",
    shell:
        logged(
            "gemmperf fit --gpu {input.hardware:q} --microbench {input.microbench:q}"
            " --measurements {input.measurements:q} {params.heldout:q}"
            " --families {params.families:q} --dtype {params.dtype:q} {params.overrides:q}"
            " --out {output.params:q}"
        )


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
        heldout=HELDOUT,
        residual="" if config["residual"] else "--no-residual",
        overrides=SET_PARAMS,
        code=code_version("accuracy"),
    log:
        "logs/{gpu}/accuracy.log",
    shell:
        logged(
            "gemmperf accuracy --gpu {input.hardware:q} --microbench {input.microbench:q}"
            " --measurements {input.measurements:q} {params.heldout:q}"
            " --families {params.families:q} --dtype {params.dtype:q} {params.residual}"
            " {params.overrides:q} --params {input.params:q} --correction {input.correction:q}"
            " --jobs {threads} --out {output.accuracy:q}"
            " --table {output.table:q} --predictions {output.predictions:q}"
        )


# ws-pipelined refitted with each of its effects switched off, on the same splits as
# accuracy (plus ws-pipelined+fit, their baseline): minutes of refits, so only
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
        heldout=HELDOUT,
        overrides=SET_PARAMS,
        code=code_version("accuracy"),
    log:
        "logs/{gpu}/ablations.log",
    shell:
        logged(
            "gemmperf accuracy --gpu {input.hardware:q} --microbench {input.microbench:q}"
            " --measurements {input.measurements:q} {params.heldout:q}"
            " --families {params.families:q} --dtype {params.dtype:q} {params.overrides:q}"
            " --ablations-only --jobs {threads} --out {output.scores:q}"
            " --table {output.table:q}"
        )
