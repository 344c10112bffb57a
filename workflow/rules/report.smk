# Reports: seven linked offline HTML pages per run (results/{run}/report/: a GPU's bf16
# run at results/<gpu>/report/, another dtype's at results/<gpu>/<dtype>/report/), PNGs
# of the key charts, and results/index.html across runs (with the runs side by side from
# each report's measured.parquet and picks.parquet). Every page and image is
# registered for `snakemake --report report.zip`, one category per run.


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
                f"results/{{run}}/report/{name}.html",
                caption=f"../report/{rst}",
                category="{run}",
                subcategory="pages",
                labels={"page": title, "gpu": "{run}"},
            )
            for name, (title, rst) in REPORT_PAGES.items()
        },
        images=[
            report(
                f"results/{{run}}/report/img/{name}.png",
                caption=f"../report/img_{name}.rst",
                category="{run}",
                subcategory="charts",
                labels={"chart": name, "gpu": "{run}"},
            )
            for name in REPORT_IMAGES
        ],
        summary="results/{run}/report/summary.json",
        measured="results/{run}/report/measured.parquet",
        picks="results/{run}/report/picks.parquet",
    input:
        hardware=run_hardware,
        params="results/{run}/params.json",
        predictions=expand(
            "results/{{run}}/predictions/{testlist}.parquet", testlist=TESTLISTS
        ),
        tilings=expand("results/{{run}}/tilings/{testlist}.csv", testlist=TESTLISTS),
        accuracy=if_measured("results/{run}/accuracy.csv"),
        out_of_sample=if_measured("results/{run}/out_of_sample.parquet"),
        ablations=report_ablations,
        headline=report_headline("headline.csv"),
        headline_picks=report_headline("headline_picks.csv"),
        answer_band=report_answer_band,
        measurements=all_measurements,
        microbench=microbench,
        kernel_speed=kernel_speed,
        shipped_readme=shipped_readme,
    params:
        testlists=",".join(TESTLISTS),
        source=lambda w: run_plan(w).source,
        note=data_note,
        skipped=lambda w: json.dumps(run_plan(w).skipped),
        heldout=HELDOUT,
        overrides=SET_PARAMS,
        out_dir=lambda w: f"results/{w.run}/report",
        images_dir=lambda w: f"results/{w.run}/report/img",
        code=code_version("report"),
    log:
        "logs/{run}/report.log",
    shell:
        logged(
            "gemmperf report --hardware {input.hardware:q} --params {input.params:q}"
            " --testlists {params.testlists:q} --predictions {input.predictions:q}"
            " --tilings {input.tilings:q} --source {params.source:q} --note {params.note:q}"
            " --skipped {params.skipped:q} {params.heldout:q}"
            " --accuracy {input.accuracy:q} --out-of-sample {input.out_of_sample:q}"
            " --ablations {input.ablations:q} --headline {input.headline:q}"
            " --headline-picks {input.headline_picks:q} --answer-band {input.answer_band:q}"
            " --measurements {input.measurements:q}"
            " --microbench {input.microbench:q} --kernel-speed {input.kernel_speed:q}"
            " --shipped-readme {input.shipped_readme:q} {params.overrides:q}"
            " --out-dir {params.out_dir:q} --images-dir {params.images_dir:q}"
        )


rule index:
    output:
        report("results/index.html", caption="../report/index.rst", category="All GPUs"),
    input:
        summaries=expand("results/{run}/report/summary.json", run=RUNS),
        measured=expand("results/{run}/report/measured.parquet", run=RUNS),
        picks=expand("results/{run}/report/picks.parquet", run=RUNS),
    params:
        gpus=",".join(RUNS),
        code=code_version("index"),
    log:
        "logs/index.log",
    shell:
        logged(
            "gemmperf index --gpus {params.gpus:q} --summaries {input.summaries:q}"
            " --measured {input.measured:q} --picks {input.picks:q} --out {output:q}"
        )
