# Z3-optimal tilings per shape and family; with measurements, the measured time of the
# choice, the measured best configuration and the regret.
rule optimize:
    output:
        "results/{gpu}/tilings/{testlist}.csv",
    input:
        hardware="results/{gpu}/hardware.json",
        params="results/{gpu}/params.json",
        testlist=testlist_path,
        measurements=measurements,
    params:
        model=config["optimize"]["model"],
        families=",".join(config["families"]),
        overrides=SET_PARAMS,
        code=code_version("optimize"),
    log:
        "logs/{gpu}/optimize/{testlist}.log",
    shell:
        logged(
            "gemmperf optimize --gpu {input.hardware:q} --params {input.params:q}"
            " --testlist {input.testlist:q} --measurements {input.measurements:q}"
            " --family {params.families:q} --model {params.model:q} {params.overrides:q}"
            " --out {output:q}"
        )
