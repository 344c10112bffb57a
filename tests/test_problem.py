import pytest

from gemmperf.errors import UserError
from gemmperf.problem import KernelConfig, Shape, parse_shape, read_testlist, shard


def write(tmp_path, text, name="t.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_reads_testlist_with_and_without_dtype(tmp_path):
    assert read_testlist(write(tmp_path, "m,n,k\n1,2,3\n\n4,5,6\n")) == [Shape(1, 2, 3), Shape(4, 5, 6)]
    shapes = read_testlist(write(tmp_path, "m,n,k,dtype\n1,2,3,fp16\n"))
    assert shapes == [Shape(1, 2, 3, "fp16")]


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("m,n,k\n1,2,3\n4,x,6\n", ":3: n = 'x' is not an integer"),
        ("m,n,k\n1,2,0\n", ":2: k = 0 must be >= 1"),
        ("m,n,k\n1,2\n", ":2: expected 3 values, got 2"),
        ("m,n,q\n1,2,3\n", ":1: header"),
        ("m,n,k,dtype\n1,2,3,int3\n", ":2: dtype = 'int3' is unknown"),
        ("", ":1: empty testlist"),
        ("m,n,k\n", "has no problems"),
    ],
)
def test_bad_testlist_names_file_line_and_value(tmp_path, text, fragment):
    path = write(tmp_path, text)
    with pytest.raises(UserError) as err:
        read_testlist(path)
    msg = str(err.value)
    assert str(path) in msg and fragment in msg and "\n" not in msg


def test_shipped_testlists_are_valid(repo_root):
    sizes = {}
    for name in ("dsv3", "paper-grid", "squares", "decode", "llm"):
        sizes[name] = read_testlist(repo_root / "testlists" / f"{name}.csv")
    assert len(sizes["paper-grid"]) == 8**3
    dims = {s.m for s in sizes["paper-grid"]}
    assert dims == set(range(128, 1025, 128))
    squares = {s.m for s in sizes["squares"]}
    assert {1023, 1025, 2047, 2049, 256, 8192} <= squares
    llm_m = {s.m for s in sizes["llm"]}
    assert min(llm_m) == 1 and max(llm_m) == 8192
    assert len(sizes["dsv3"]) == 40
    # decode is development data for the small-M regime: it must not share a projection
    # (N, K) with the held-out llm testlist
    assert max(s.m for s in sizes["decode"]) <= 64
    assert not {(s.n, s.k) for s in sizes["decode"]} & {(s.n, s.k) for s in sizes["llm"]}


def test_kernel_config_validation():
    KernelConfig(family="simt", dtype="fp32")
    for bad in (dict(family="cublas"), dict(tile_m=0), dict(stages=2.5), dict(raster="zigzag"), dict(dtype="int3")):
        with pytest.raises(UserError):
            KernelConfig(**bad)
    assert KernelConfig().key() == KernelConfig().key()
    assert KernelConfig().key() != KernelConfig(stages=5).key()


def test_parse_shape_and_shard():
    assert parse_shape("4096x257x7168") == Shape(4096, 257, 7168)
    for bad in ("4096x257", "1x0x1", "axbxc"):
        with pytest.raises(UserError):
            parse_shape(bad)
    items = list(range(10))
    parts = [shard(items, i, 3) for i in range(3)]
    assert sorted(sum(parts, [])) == items
    with pytest.raises(UserError):
        shard(items, 3, 3)
