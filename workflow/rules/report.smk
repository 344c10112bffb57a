rule report:
    output:
        "results/{gpu}/report/index.html",
    input:
        hardware="results/{gpu}/hardware.json",
        params="results/{gpu}/params.json",
        tilings=expand("results/{{gpu}}/tilings/{testlist}.csv", testlist=TESTLISTS),
    params:
        testlists=TESTLISTS,
        note=data_note,
        skipped=lambda w: gpu_plan(w).skipped,
    log:
        "logs/{gpu}/report.log",
    script:
        "../scripts/report.py"


rule index:
    output:
        "results/index.html",
    input:
        expand("results/{gpu}/report/index.html", gpu=GPUS),
    params:
        gpus={g: p.source for g, p in PLAN.gpus.items()},
    log:
        "logs/index.log",
    script:
        "../scripts/index.py"
