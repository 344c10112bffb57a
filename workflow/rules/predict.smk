# Every model on every configuration: the measured ones when there are measurements,
# else every legal configuration of the families; plus the corrected ws-pipelined.
rule predict:
    output:
        "results/{run}/predictions/{testlist}.parquet",
    input:
        hardware=run_hardware,
        params="results/{run}/params.json",
        testlist=testlist_path,
        measurements=measurements,
        correction=lambda w: (
            f"results/{w.run}/correction.json" if w.run in CORRECTED_RUNS else []
        ),
    params:
        models=",".join(config["models"]),
        families=",".join(config["families"]),
        dtype=run_dtype,
        overrides=SET_PARAMS,
        code=code_version("predict"),
    log:
        "logs/{run}/predict/{testlist}.log",
    shell:
        logged(
            "gemmperf predict --gpu {input.hardware:q} --params {input.params:q}"
            " --testlist {input.testlist:q} --input {input.measurements:q}"
            " --correction {input.correction:q} --model {params.models:q}"
            " --families {params.families:q} --dtype {params.dtype:q} {params.overrides:q}"
            " --output {output:q}"
        )
