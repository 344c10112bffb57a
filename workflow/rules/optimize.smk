rule optimize:
    output:
        "results/{gpu}/tilings/{testlist}.csv",
    input:
        predictions="results/{gpu}/predictions/{testlist}.parquet",
    params:
        model="ws-stage",
    log:
        "logs/{gpu}/optimize/{testlist}.log",
    script:
        "../scripts/optimize.py"
