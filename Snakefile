# gemmperf: measure GEMM kernels, fit and run the models, correct, report, optimize.
# Thin entry point: all logic lives in src/gemmperf; rules only wire files together.


configfile: "config/config.yaml"


include: "workflow/rules/common.smk"
include: "workflow/rules/hardware.smk"
include: "workflow/rules/measure.smk"
include: "workflow/rules/fit.smk"
include: "workflow/rules/predict.smk"
include: "workflow/rules/optimize.smk"
include: "workflow/rules/report.smk"


rule all:
    input:
        all_outputs(),
    default_target: True


# ws-pipelined refitted with each effect switched off, for every GPU (and dtype) with
# measurements (results/<gpu>/ablations.json, results/<gpu>/<dtype>/ablations.json for a
# dtype other than bf16): `snakemake --cores all ablations`. About 10 minutes on 2 cores;
# config ablations: true also runs them and shows them in the report.
rule ablations:
    input:
        ablation_outputs(),


# Each GPU's fit carried onto each other GPU with data, scored there (issue 18):
# results/transfer/<from>/to-<to>.json and .csv. `snakemake --cores all transfer`.
rule transfer:
    input:
        transfer_outputs(),
