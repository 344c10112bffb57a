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
