"""gemmperf: predict, explain and optimize GEMM kernel time on NVIDIA GPUs.

Importing the package pulls in nothing beyond the standard library, so the GPU-side
modules (kernels, bench) run where only numpy and cuda-python are installed.
"""

__version__ = "0.1.0"
