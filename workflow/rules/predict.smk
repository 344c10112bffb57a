# Every model on every configuration: the measured ones when there are measurements,
# else every legal configuration of the families; plus the corrected ws-pipelined.
rule predict:
    output:
        "results/{gpu}/predictions/{testlist}.parquet",
    input:
        hardware="results/{gpu}/hardware.json",
        params="results/{gpu}/params.json",
        testlist=testlist_path,
        measurements=measurements,
        correction=lambda w: (
            f"results/{w.gpu}/correction.json" if w.gpu in CORRECTED_GPUS else []
        ),
    params:
        models=",".join(config["models"]),
        families=",".join(config["families"]),
        dtype=config["dtype"],
        overrides=SET_PARAMS,
        code=code_version("predict"),
    log:
        "logs/{gpu}/predict/{testlist}.log",
    shell:
        logged(
            "gemmperf predict --gpu {input.hardware:q} --params {input.params:q}"
            " --testlist {input.testlist:q} --input {input.measurements:q}"
            " --correction {input.correction:q} --model {params.models:q}"
            " --families {params.families:q} --dtype {params.dtype:q} {params.overrides:q}"
            " --output {output:q}"
        )
