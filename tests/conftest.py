import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture(autouse=True)
def _isolated_kernel_cache(tmp_path_factory, monkeypatch):
    # compiled kernels go to a per-session folder, never the user's cache
    monkeypatch.setenv("GEMMPERF_CACHE", os.environ.get("GEMMPERF_TEST_CACHE", str(tmp_path_factory.getbasetemp() / "kcache")))
