# One fit per run (a GPU in one input dtype): the microbenchmark parameters,
# ws-pipelined's constants on every development row and, for runs with measurements
# (CORRECTED_RUNS), the residual correction from the same in-memory fit, which also
# learns from the run's timed answers where it has them (fit_answers) and, for an fp8
# run, from its GPU's bf16 rows and answers (teacher_measurements). Runs without
# measurements (a catalog GPU, a dtype with no shipped data) get params only.
rule fit:
    output:
        params="results/{run}/params.json",
        correction="results/{run}/correction.json",
    input:
        hardware=run_hardware,
        microbench=microbench,
        measurements=all_measurements,
        answers=fit_answers,
        teacher=teacher_measurements,
    wildcard_constraints:
        run=one_of(CORRECTED_RUNS),
    params:
        families=",".join(config["families"]),
        dtype=run_dtype,
        heldout=HELDOUT,
        overrides=SET_PARAMS,
        code=code_version("fit"),
    log:
        "logs/{run}/fit.log",
    shell:
        logged(
            "gemmperf fit --gpu {input.hardware:q} --microbench {input.microbench:q}"
            " --measurements {input.measurements:q} {params.heldout:q}"
            " --answers {input.answers:q} --teacher-measurements {input.teacher:q}"
            " --families {params.families:q} --dtype {params.dtype:q} {params.overrides:q}"
            " --out {output.params:q} --correction-out {output.correction:q}"
        )


rule fit_params:
    output:
        params="results/{run}/params.json",
    input:
        hardware=run_hardware,
        microbench=microbench,
        measurements=all_measurements,
    wildcard_constraints:
        run=one_of(r for r in RUNS if r not in CORRECTED_RUNS),
    params:
        families=",".join(config["families"]),
        dtype=run_dtype,
        heldout=HELDOUT,
        overrides=SET_PARAMS,
        code=code_version("fit"),
    log:
        "logs/{run}/fit.log",
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
        accuracy="results/{run}/accuracy.json",
        table="results/{run}/accuracy.csv",
        predictions="results/{run}/out_of_sample.parquet",
    input:
        hardware=run_hardware,
        microbench=microbench,
        measurements=all_measurements,
        params="results/{run}/params.json",
        correction="results/{run}/correction.json",
        answers=fit_answers,
        teacher=teacher_measurements,
    threads: 4
    priority: 1
    params:
        families=",".join(config["families"]),
        dtype=run_dtype,
        heldout=HELDOUT,
        residual="" if config["residual"] else "--no-residual",
        overrides=SET_PARAMS,
        code=code_version("accuracy"),
    log:
        "logs/{run}/accuracy.log",
    shell:
        logged(
            "gemmperf accuracy --gpu {input.hardware:q} --microbench {input.microbench:q}"
            " --measurements {input.measurements:q} {params.heldout:q}"
            " --answers {input.answers:q} --teacher-measurements {input.teacher:q}"
            " --families {params.families:q} --dtype {params.dtype:q} {params.residual}"
            " {params.overrides:q} --params {input.params:q} --correction {input.correction:q}"
            " --jobs {threads} --out {output.accuracy:q}"
            " --table {output.table:q} --predictions {output.predictions:q}"
        )


# The headline accuracy (issue 17): each development testlist predicted by a fit that saw
# none of it, and 5 folds grouped by weight matrix (n, k), ws-hopper rows, per model and
# shape class, nvMatmulHeuristics beside them where the nvmmh extra is installed.
rule headline:
    output:
        scores="results/{run}/headline.json",
        table="results/{run}/headline.csv",
        picks="results/{run}/headline_picks.csv",
    input:
        hardware=run_hardware,
        microbench=microbench,
        measurements=all_measurements,
        answers=fit_answers,
        teacher=teacher_measurements,
    threads: 4
    priority: 1
    params:
        families=",".join(config["families"]),
        dtype=run_dtype,
        heldout=HELDOUT,
        residual="" if config["residual"] else "--no-residual",
        overrides=SET_PARAMS,
        code=code_version("accuracy"),
    log:
        "logs/{run}/headline.log",
    shell:
        logged(
            "gemmperf accuracy --gpu {input.hardware:q} --microbench {input.microbench:q}"
            " --measurements {input.measurements:q} {params.heldout:q}"
            " --families {params.families:q} --dtype {params.dtype:q} {params.residual}"
            " {params.overrides:q} --answers {input.answers:q} --teacher-measurements {input.teacher:q}"
            " --splits testlist,nk --jobs {threads}"
            " --out {output.scores:q} --table {output.table:q} --picks {output.picks:q}"
        )


# ws-pipelined refitted with each of its effects switched off, on the same splits as
# accuracy (plus ws-pipelined+fit, their baseline): minutes of refits, so only
# on request, by the target `ablations` or the config's ablations: true
# (which also shows them in the report).
rule score_ablations:
    output:
        scores="results/{run}/ablations.json",
        table="results/{run}/ablations.csv",
    input:
        hardware=run_hardware,
        microbench=microbench,
        measurements=all_measurements,
    threads: 4
    params:
        families=",".join(config["families"]),
        dtype=run_dtype,
        heldout=HELDOUT,
        overrides=SET_PARAMS,
        code=code_version("accuracy"),
    log:
        "logs/{run}/ablations.log",
    shell:
        logged(
            "gemmperf accuracy --gpu {input.hardware:q} --microbench {input.microbench:q}"
            " --measurements {input.measurements:q} {params.heldout:q}"
            " --families {params.families:q} --dtype {params.dtype:q} {params.overrides:q}"
            " --ablations-only --jobs {threads} --out {output.scores:q}"
            " --table {output.table:q}"
        )


# One GPU's fit and residual correction carried onto another with no GEMM measured there
# (issue 18), scored on the other's measurements beside its baselines: `snakemake --cores
# all transfer`, for every ordered pair of TRANSFER_GPUS.
rule transfer_pair:
    output:
        summary="results/transfer/{src}/to-{dst}.json",
        table="results/transfer/{src}/to-{dst}.csv",
    input:
        source_hardware="results/{src}/hardware.json",
        source_params="results/{src}/params.json",
        source_correction="results/{src}/correction.json",
        source_microbench=of_gpu(microbench, "src"),
        source_measurements=of_gpu(all_measurements, "src"),
        hardware="results/{dst}/hardware.json",
        microbench=of_gpu(microbench, "dst"),
        measurements=of_gpu(all_measurements, "dst"),
    wildcard_constraints:
        src=one_of(TRANSFER_GPUS),
        dst=one_of(TRANSFER_GPUS),
    params:
        code=code_version("transfer"),
    log:
        "logs/transfer/{src}-to-{dst}.log",
    shell:
        logged(
            "gemmperf transfer --source-gpu {input.source_hardware:q}"
            " --source-params {input.source_params:q}"
            " --source-correction {input.source_correction:q}"
            " --source-microbench {input.source_microbench:q}"
            " --source-measurements {input.source_measurements:q}"
            " --gpu {input.hardware:q} --microbench {input.microbench:q}"
            " --measurements {input.measurements:q}"
            " --out {output.summary:q} --table {output.table:q}"
        )
