rule hardware:
    output:
        "results/{gpu}/hardware.json",
    input:
        shipped=lambda w: (
            shipped(w.gpu, "hardware.json") if gpu_plan(w).source == "shipped" else []
        ),
    params:
        source=lambda w: gpu_plan(w).source,
    log:
        "logs/{gpu}/hardware.log",
    script:
        "../scripts/hardware.py"
