rule fit:
    output:
        "results/{gpu}/params.json",
    input:
        hardware="results/{gpu}/hardware.json",
        microbench=microbench,
    params:
        families=config["families"],
        dtype=config["dtype"],
    log:
        "logs/{gpu}/fit.log",
    script:
        "../scripts/fit.py"
