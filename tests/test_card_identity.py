"""bench.device.card_identity: which physical card a sweep ran on, for its log."""

from __future__ import annotations

import subprocess
import sys
import types

from gemmperf.bench import device


def _no_nvml(monkeypatch):
    monkeypatch.setattr(device, "_NVML", {})
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml fails


def test_through_nvml(monkeypatch):
    fake = types.SimpleNamespace(nvmlInit=lambda: None, nvmlDeviceGetHandleByIndex=lambda i: f"h{i}",
                                 nvmlDeviceGetUUID=lambda h: b"GPU-7cdd0160", nvmlDeviceGetSerial=lambda h: "165402")
    monkeypatch.setattr(device, "_NVML", {})
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert device.card_identity() == "GPU-7cdd0160, serial 165402"


def test_through_nvidia_smi_or_none(monkeypatch):
    _no_nvml(monkeypatch)
    monkeypatch.setattr(device.shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    asked = []

    def run(cmd, **kw):
        asked.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, stdout="GPU-e213486e, 1654024197592\n", stderr="")

    monkeypatch.setattr(device.subprocess, "run", run)
    assert device.card_identity(1) == "GPU-e213486e, serial 1654024197592"
    assert "--id=1" in asked[0]
    # an answer that is not "uuid, serial": nothing rather than half a name
    monkeypatch.setattr(device.subprocess, "run",
                        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 0, stdout="No devices were found\n"))
    assert device.card_identity() is None
    monkeypatch.setattr(device.shutil, "which", lambda name: None)
    assert device.card_identity() is None
