# The descriptor's identity (name, driver, SMs, maximum clocks, memory, L2: see
# gemmperf.app.plan.IDENTITY_FIELDS) is a param, so a new driver or a different card
# under the same slug reruns hardware and everything measured after it; the clocks a
# card happens to run at are not part of it.
rule hardware:
    input:
        shipped=lambda w: (
            shipped(w.gpu, "hardware.json") if gpu_plan(w).source == "shipped" else []
        ),
    output:
        "results/{gpu}/hardware.json",
    log:
        "logs/{gpu}/hardware.log",
    params:
        source=lambda w: gpu_plan(w).source,
        identity=identity_json,
        code=code_version("hardware"),
    shell:
        logged(
            "gemmperf hardware --source {params.source:q} --gpu {wildcards.gpu:q}"
            " --shipped {input.shipped:q} --expect-identity {params.identity:q}"
            " --out {output:q}"
        )
