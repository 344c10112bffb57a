"""Merging shards and journals: per configuration, ok beats any failure, then the later
timestamp, then the row read later; a torn row is never admitted."""

import csv

from gemmperf.app.cli import main
from gemmperf.bench.journal import norm
from gemmperf.bench.merge import merge_shards
from gemmperf.problem import LATER_CONFIG_COLUMNS
from gemmperf.tables import ROW_COLUMNS
from test_sweep_fakes import tasks

A, B = tasks(2)


def row(task, status, when, time_us="10.0"):
    return {**task, "status": status, "time_us": time_us if status == "ok" else "", "timestamp": when,
            "reason": "" if status == "ok" else f"{status} reason"}


def write(path, rows, tail="", columns=ROW_COLUMNS):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([norm(r.get(c, "")) for c in columns])
        fh.write(tail)
    return path


def merged(tmp_path, *files):
    out = tmp_path / "out.csv"
    merge_shards(list(files), out)
    with open(out, newline="") as fh:
        return {int(r["m"]): r for r in csv.DictReader(fh)}


def test_a_later_timeout_never_replaces_an_ok(tmp_path):
    one = write(tmp_path / "1.csv", [row(A, "ok", "2026-01-01T10:00:00")])
    two = write(tmp_path / "2.csv", [row(A, "timeout", "2026-01-02T10:00:00")])
    assert merged(tmp_path, one, two)[A["m"]]["status"] == "ok"
    assert merged(tmp_path, two, one)[A["m"]]["status"] == "ok"


def test_same_rank_the_later_timestamp_wins_then_the_row_read_later(tmp_path):
    one = write(tmp_path / "1.csv", [row(A, "ok", "2026-01-02T10:00:00", "5.0"), row(B, "launch_error", "2026-01-01T10:00:00")])
    two = write(tmp_path / "2.csv", [row(A, "ok", "2026-01-01T10:00:00", "7.0"), row(B, "timeout", "2026-01-03T10:00:00")])
    got = merged(tmp_path, one, two)
    assert got[A["m"]]["time_us"] == "5.0"  # the later measurement, though read first
    assert got[B["m"]]["status"] == "timeout"
    three = write(tmp_path / "3.csv", [row(A, "ok", "2026-01-02T10:00:00", "6.0")])
    assert merged(tmp_path, one, three)[A["m"]]["time_us"] == "6.0"  # equal times: read later


def test_a_torn_row_is_never_admitted(tmp_path, capsys):
    good = row(A, "ok", "2026-01-01T10:00:00", "5.0")
    torn_line = ",".join(norm(row(A, "ok", "2026-01-02T10:00:00", "1.0").get(c, "")) for c in ROW_COLUMNS[:-3]) + "\n"
    one = write(tmp_path / "1.csv", [good], tail=torn_line + ",".join(["1"] * 5) + "\n")
    got = merged(tmp_path, one)
    assert got[A["m"]]["time_us"] == "5.0" and len(got) == 1
    assert "2 incomplete line(s) skipped" in capsys.readouterr().err


def test_merge_command_line_missing_file_is_one_line(tmp_path, capsys):
    assert main(["merge", str(tmp_path / "nope.csv"), "--out", str(tmp_path / "o.csv")]) == 2
    assert capsys.readouterr().err == f"gemmperf merge: {tmp_path / 'nope.csv'}: no such file to merge\n"


def test_a_shard_written_before_the_new_dimensions_merges_at_their_defaults(tmp_path):
    old_columns = [c for c in ROW_COLUMNS if c not in LATER_CONFIG_COLUMNS]
    old = write(tmp_path / "old.csv", [row(A, "ok", "2026-01-01T10:00:00", "5.0")], columns=old_columns)
    new = write(tmp_path / "new.csv", [row(A, "ok", "2026-01-02T10:00:00", "4.0")])
    got = merged(tmp_path, old, new)
    assert len(got) == 1 and got[A["m"]]["time_us"] == "4.0"  # one configuration, the later row
    assert (got[A["m"]]["epilogue"], got[A["m"]]["group_m"]) == ("direct", "8")
