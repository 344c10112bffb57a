rule predict:
    output:
        "results/{gpu}/predictions/{testlist}.parquet",
    input:
        hardware="results/{gpu}/hardware.json",
        params="results/{gpu}/params.json",
        testlist=testlist_path,
        measurements=measurements,
        correction=lambda w: (
            f"results/{w.gpu}/correction.json"
            if config["residual"] and gpu_plan(w).testlists_measured
            else []
        ),
    params:
        models=config["models"],
        overrides=config["model_params"],
        families=config["families"],
        dtype=config["dtype"],
        code=code_version("predict"),
    log:
        "logs/{gpu}/predict/{testlist}.log",
    script:
        "../scripts/predict.py"
