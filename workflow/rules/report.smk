# Reports: seven linked offline HTML pages per GPU (results/{gpu}/report/), PNGs of the
# key charts, and results/index.html across GPUs. Every page and image is registered
# for `snakemake --report report.zip`, one category per GPU.


report: "../report/workflow.rst"


REPORT_PAGES = {
    "index": ("Overview", "overview.rst"),
    "accuracy": ("Predicted vs measured", "accuracy.rst"),
    "errors": ("Where the errors are", "errors.rst"),
    "roofline": ("Roofline", "roofline.rst"),
    "timeline": ("Timeline", "timeline.rst"),
    "tilings": ("Tilings", "tilings.rst"),
    "kernels": ("Kernels", "kernels.rst"),
}
REPORT_IMAGES = ["predicted_vs_measured", "ratio", "roofline", "timeline"]


rule report:
    output:
        **{
            name: report(
                f"results/{{gpu}}/report/{name}.html",
                caption=f"../report/{rst}",
                category="{gpu}",
                subcategory="pages",
                labels={"page": title, "gpu": "{gpu}"},
            )
            for name, (title, rst) in REPORT_PAGES.items()
        },
        images=[
            report(
                f"results/{{gpu}}/report/img/{name}.png",
                caption=f"../report/img_{name}.rst",
                category="{gpu}",
                subcategory="charts",
                labels={"chart": name, "gpu": "{gpu}"},
            )
            for name in REPORT_IMAGES
        ],
        summary="results/{gpu}/report/summary.json",
    input:
        hardware="results/{gpu}/hardware.json",
        params="results/{gpu}/params.json",
        predictions=expand(
            "results/{{gpu}}/predictions/{testlist}.parquet", testlist=TESTLISTS
        ),
        tilings=expand("results/{{gpu}}/tilings/{testlist}.csv", testlist=TESTLISTS),
        accuracy=if_measured("results/{gpu}/accuracy.csv"),
        out_of_sample=if_measured("results/{gpu}/out_of_sample.parquet"),
        ablations=report_ablations,
        measurements=all_measurements,
        microbench=microbench,
        kernel_speed=kernel_speed,
        shipped_readme=lambda w: (
            shipped(w.gpu, "README.md")
            if gpu_plan(w).source == "shipped"
            and Path(shipped(w.gpu, "README.md")).is_file()
            else []
        ),
    params:
        testlists=",".join(TESTLISTS),
        source=lambda w: gpu_plan(w).source,
        note=data_note,
        skipped=lambda w: json.dumps(gpu_plan(w).skipped),
        heldout=HELDOUT,
        overrides=SET_PARAMS,
        out_dir=lambda w: f"results/{w.gpu}/report",
        images_dir=lambda w: f"results/{w.gpu}/report/img",
        code=code_version("report"),
    log:
        "logs/{gpu}/report.log",
    shell:
        logged(
            "gemmperf report --hardware {input.hardware:q} --params {input.params:q}"
            " --testlists {params.testlists:q} --predictions {input.predictions:q}"
            " --tilings {input.tilings:q} --source {params.source:q} --note {params.note:q}"
            " --skipped {params.skipped:q} {params.heldout:q}"
            " --accuracy {input.accuracy:q} --out-of-sample {input.out_of_sample:q}"
            " --ablations {input.ablations:q} --measurements {input.measurements:q}"
            " --microbench {input.microbench:q} --kernel-speed {input.kernel_speed:q}"
            " --shipped-readme {input.shipped_readme:q} {params.overrides:q}"
            " --out-dir {params.out_dir:q} --images-dir {params.images_dir:q}"
        )


rule index:
    output:
        report("results/index.html", caption="../report/index.rst", category="All GPUs"),
    input:
        summaries=expand("results/{gpu}/report/summary.json", gpu=GPUS),
    params:
        gpus=",".join(GPUS),
        code=code_version("index"),
    log:
        "logs/index.log",
    shell:
        logged(
            "gemmperf index --gpus {params.gpus:q} --summaries {input.summaries:q}"
            " --out {output:q}"
        )
