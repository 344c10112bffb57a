rule fit:
    output:
        "results/{gpu}/params.json",
    input:
        hardware="results/{gpu}/hardware.json",
        microbench=microbench,
        measurements=all_measurements,
    params:
        families=",".join(config["families"]),
        dtype=config["dtype"],
        heldout=config["heldout_testlist"],
        microbench=lambda w, input: (
            f"--microbench {input.microbench}" if input.microbench else ""
        ),
        code=code_version("fit"),
        measurements=lambda w, input: (
            f"--measurements {' '.join(input.measurements)}"
            if input.measurements
            else ""
        ),
    log:
        "logs/{gpu}/fit.log",
    shell:
        "gemmperf fit --gpu {input.hardware} {params.microbench} {params.measurements}"
        " --heldout {params.heldout} --families {params.families} --dtype {params.dtype}"
        " --out {output} > {log} 2>&1"


# Out-of-sample accuracy (grouped CV by shape + the held-out testlist) and, when the
# config asks for it, the residual correction fitted on every development row.
rule accuracy:
    output:
        accuracy="results/{gpu}/accuracy.json",
        table="results/{gpu}/accuracy.csv",
        predictions="results/{gpu}/out_of_sample.parquet",
        correction="results/{gpu}/correction.json" if config["residual"] else [],
    input:
        hardware="results/{gpu}/hardware.json",
        microbench=microbench,
        measurements=all_measurements,
    params:
        families=",".join(config["families"]),
        dtype=config["dtype"],
        heldout=config["heldout_testlist"],
        microbench=lambda w, input: (
            f"--microbench {input.microbench}" if input.microbench else ""
        ),
        code=code_version("accuracy"),
        residual=(
            "--correction-out results/{gpu}/correction.json"
            if config["residual"]
            else "--no-residual"
        ),
    log:
        "logs/{gpu}/accuracy.log",
    shell:
        "gemmperf accuracy --gpu {input.hardware} {params.microbench}"
        " --measurements {input.measurements} --heldout {params.heldout}"
        " --families {params.families} --dtype {params.dtype} {params.residual}"
        " --out {output.accuracy} --table {output.table} --predictions {output.predictions}"
        " > {log} 2>&1"
