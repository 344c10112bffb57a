"""Write results/{gpu}/hardware.json: probed, shipped, or from the catalog."""
import json
import shutil
import sys

from gemmperf.hardware import get_gpu, probe

sys.stdout = sys.stderr = open(snakemake.log[0], "w")
out, source = snakemake.output[0], snakemake.params.source
if source == "measure":
    gpu = probe()
    print(f"probed {gpu.name}: {gpu.sms} SMs, driver {gpu.driver}")
    open(out, "w").write(json.dumps(gpu.to_dict(), indent=2) + "\n")
elif source == "shipped":
    shutil.copyfile(snakemake.input.shipped, out)
    print(f"copied the shipped descriptor {snakemake.input.shipped}")
else:
    gpu = get_gpu(snakemake.wildcards.gpu)
    print(f"catalog descriptor for {gpu.slug}")
    open(out, "w").write(json.dumps(gpu.to_dict(), indent=2) + "\n")
