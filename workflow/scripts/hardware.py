"""Write results/{gpu}/hardware.json: probed, shipped, or from the catalog."""
import json
import shutil
import sys

from gemmperf.hardware import get_gpu
from gemmperf.plan import identity, local_probe

sys.stdout = sys.stderr = open(snakemake.log[0], "w")
out, source = snakemake.output[0], snakemake.params.source
if source == "measure":
    gpu = local_probe()
    print(f"probed {gpu.name}: {gpu.sms} SMs, driver {gpu.driver}")
    if identity(gpu) != snakemake.params.identity:
        raise SystemExit(
            f"the GPU changed since the workflow started: {snakemake.params.identity} "
            f"-> {identity(gpu)}; run snakemake again"
        )
    open(out, "w").write(json.dumps(gpu.to_dict(), indent=2) + "\n")
elif source == "shipped":
    shutil.copyfile(snakemake.input.shipped, out)
    print(f"copied the shipped descriptor {snakemake.input.shipped}")
else:
    gpu = get_gpu(snakemake.wildcards.gpu)
    print(f"catalog descriptor for {gpu.slug}")
    open(out, "w").write(json.dumps(gpu.to_dict(), indent=2) + "\n")
