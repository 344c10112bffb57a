# Z3-optimal tilings per shape and family; with measurements, the measured time of the
# choice, the measured best configuration and the regret.
rule optimize:
    output:
        "results/{run}/tilings/{testlist}.csv",
    input:
        hardware=run_hardware,
        params="results/{run}/params.json",
        testlist=testlist_path,
        measurements=measurements,
    params:
        model=config["optimize"]["model"],
        families=",".join(config["families"]),
        dtype=run_dtype,
        overrides=SET_PARAMS,
        code=code_version("optimize"),
    log:
        "logs/{run}/optimize/{testlist}.log",
    shell:
        logged(
            "gemmperf optimize --gpu {input.hardware:q} --params {input.params:q}"
            " --testlist {input.testlist:q} --measurements {input.measurements:q}"
            " --family {params.families:q} --dtype {params.dtype:q} --model {params.model:q}"
            " {params.overrides:q}"
            " --out {output:q}"
        )


# How long the optimizer's answers ran against their predicted time on shapes no testlist
# holds (the shipped timed answers), asked of this run's fit and correction: the band
# `gemmperf optimize --shape` gives with its answer. The correction learned from these
# answers too (rule fit), so the corrected band is cross-fitted: the measurements let
# answer-band refit it without each fold of the answers' sets, one fold a worker process
# (5 folds: 5 threads asked, which a local run lowers to --cores; the band does not depend
# on how many).
rule answer_band:
    output:
        band="results/{run}/answer_band.json",
        table="results/{run}/answer_band.csv",
    input:
        hardware=run_hardware,
        params="results/{run}/params.json",
        correction="results/{run}/correction.json",
        runs=answer_runs,
        measurements=all_measurements,
    wildcard_constraints:
        run=one_of(BAND_RUNS),
    threads: 5
    params:
        dtype=run_dtype,
        heldout=HELDOUT,
        overrides=SET_PARAMS,
        code=code_version("answer-band"),
    log:
        "logs/{run}/answer_band.log",
    shell:
        logged(
            "gemmperf answer-band --gpu {input.hardware:q} --params {input.params:q}"
            " --correction {input.correction:q} --runs {input.runs:q} --dtype {params.dtype:q}"
            " --measurements {input.measurements:q} {params.heldout:q}"
            " {params.overrides:q} --jobs {threads} --out {output.band:q} --table {output.table:q}"
        )
