import pytest

from gemmperf.errors import UserError
from gemmperf.problem import (MAX_DIM, MAX_FLOPS, KernelConfig, Shape, operand_bytes, parse_shape,
                              read_testlist, shard)


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
        ("m,n,k\n1,2,3\n4,x,6\n", ":3: column n = 'x': not an integer"),
        ("m,n,k\n1,2,0\n", ":2: column k = '0': must be >= 1"),
        ("m,n,k\n1,2\n", ":2: expected 3 values, got 2"),
        ("m,n,q\n1,2,3\n", ":1: unknown column 'q'"),
        ("m,n,k,dtype\n1,2,3,int3\n", ":2: column dtype = 'int3': unknown dtype"),
        ("m,n,k\n1,2,3\n# a comment\n1,2,3\n", ":4: 1,2,3,bf16 is listed twice (lines 2 and 4)"),
        ("m,n,k\n99999999999999999999,2,3\n", ":2: column m = '99999999999999999999': above the limit 2147483647"),
        ("m,n,k\n2147483647,2147483647,2\n", ":2: column k = '2': 2*M*N*K = "),
        ("", ":1: empty"),
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
    for bad in (dict(family="cublas"), dict(tile_m=0), dict(stages=2.5), dict(raster="zigzag"), dict(dtype="int3"),
                dict(tile_n=2**31)):
        with pytest.raises(UserError):
            KernelConfig(**bad)
    assert KernelConfig().key() == KernelConfig().key()
    assert KernelConfig().key() != KernelConfig(stages=5).key()


def test_parse_shape_and_shard():
    assert parse_shape("4096x257x7168") == Shape(4096, 257, 7168)
    for bad in ("4096x257", "1x0x1", "axbxc", "99999999999999999999x1x1", "2147483648x1x1",
                "300000x300000x300000"):
        with pytest.raises(UserError):
            parse_shape(bad)
    items = list(range(10))
    parts = [shard(items, i, 3) for i in range(3)]
    assert sorted(sum(parts, [])) == items
    with pytest.raises(UserError):
        shard(items, 3, 3)


def test_operand_bytes_counts_a_b_scales_and_c():
    assert operand_bytes(Shape(2, 3, 4, "bf16")) == (2 * 4 + 4 * 3) * 2 + 2 * 3 * 2
    assert operand_bytes(Shape(2, 3, 4, "fp8"), out_dtype="bf16") == (2 * 4 + 4 * 3) + 2 * 3 * 2
    # nvfp4: half a byte per element plus one byte per 16 elements along K
    assert operand_bytes(Shape(16, 16, 32, "nvfp4")) == 32 * 32 // 2 + 32 * 2 + 16 * 16 // 2


def test_parse_shape_limits_are_the_named_ones():
    assert parse_shape(f"{MAX_DIM}x1x1") == Shape(MAX_DIM, 1, 1)
    with pytest.raises(UserError, match="above the limit 2147483647"):
        parse_shape(f"{MAX_DIM + 1}x1x1")
    with pytest.raises(UserError, match="2\\*M\\*N\\*K"):
        parse_shape("4096x4096x1000000000")
    assert parse_shape("4096x128000x7168").flops <= MAX_FLOPS


def test_a_configurations_name_reads_back_as_the_configuration(repo_root):
    """KernelConfig.from_key inverts key(): every configuration the shipped timed answers
    name, and one with every option away from its default."""
    import csv

    names = {row["config"] for path in (repo_root / "results").glob("*/shipped/answers/*.csv")
             for row in csv.DictReader(open(path))}
    assert len(names) > 2000
    for name in names:
        assert KernelConfig.from_key(name).key() == name
    every = KernelConfig(family="ws-ampere", dtype="fp16", tile_k=32, stages=3, persistent=True, raster="grouped",
                         mode="epilogue-only", epilogue="tma", schedule="pingpong", group_m=4, persistent_ctas=66,
                         split_k=2, stream_k=True)
    assert KernelConfig.from_key(every.key()) == every


@pytest.mark.parametrize("name, fragment", [
    ("nonsense", "not a configuration's name"),
    ("ws-hopper-bf16-128x128x64-s4-c1x1-np-row-full-foo3", "unknown option 'foo3'"),
    ("ws-hopper-bf16-128x128x64-s4-c1x1-np-row-full-epifoo", "known epilogues"),
    ("ws-hopper-bf16-128x128x64-s4-c1x1-np-row-full-g8", "not as key() names it"),  # the default group, named
    ("ws-hopper-bf16-128x128x64-s0-c1x1-np-row-full", "stages must be a positive integer"),
])
def test_a_name_key_would_not_write_is_refused_naming_it(name, fragment):
    with pytest.raises(UserError) as err:
        KernelConfig.from_key(name)
    assert fragment in str(err.value) and name in str(err.value)
