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
        families=config["families"],
        overrides=config["model_params"],
        code=code_version("optimize"),
    log:
        "logs/{gpu}/optimize/{testlist}.log",
    script:
        "../scripts/optimize.py"
