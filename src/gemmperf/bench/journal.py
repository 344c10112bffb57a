"""A sweep's journal: the append-only CSV of measured rows that makes a sweep resumable.

- One physical line per row: every value is kept on one line (newlines replaced), so a
  torn write damages that line only. A long or multi-line reason (a compile log) goes to
  a side file ``<journal stem>.logs/<configuration key>.log`` next to the journal and
  the row's reason names it.
- A row counts only if it parses completely: the header's number of fields, a known
  status, every key field present, and for ``ok`` a finite time_us > 0. Anything else
  (a torn row, a line cut after its status field) is ignored and its configuration is
  measured again.
- A row is written with one ``write`` of its whole line; if that fails (disk full), the
  file is cut back to its last complete row and the sweep stops with one line.
- One writer at a time: ``Journal`` holds an exclusive ``flock`` on ``<journal>.lock``
  (released by the kernel when the process ends, however it ends); a second sweep on
  the same journal stops with one line naming the lock file and the holder's pid.
- Merging (``best_rows``), per configuration key: ``ok`` beats every failure status;
  between rows of the same rank the later timestamp wins, and on equal timestamps the
  row read later (later in the file, or in a later file) wins.

Standard library only (runs on the GPU machine).
"""

from __future__ import annotations

import csv
import errno
import fcntl
import io
import math
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..errors import UserError
from ..problem import LATER_CONFIG_COLUMNS
from ..tables import CONFIG_DEFAULTS, KEY_COLUMNS, ROW_COLUMNS, STATUSES

REASON_MAX = 300  # characters of a reason kept in the row; longer ones go to a side file
# failures that a rerun may cure (a poisoned context, a hang, a busy GPU): --retry-failed
# measures them again. compile_error, wrong_result and unsupported are deterministic for
# the same code and compiler (the journal's name changes with the code), so they are not.
RETRIED = ("launch_error", "timeout")


def task_key(row: dict) -> tuple[str, ...]:
    """The identity of a row or task as strings (CSV round trip safe)."""
    return tuple(norm(row.get(c, "")) for c in KEY_COLUMNS)


def norm(value) -> str:
    """A value as the journal writes it: booleans lower case, on one line."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if text in ("True", "False"):
        return text.lower()
    return text.replace("\r\n", " | ").replace("\n", " | ").replace("\r", " | ")


# ------------------------------------------------------------------ reading


def parse_line(line: str, header: tuple[str, ...]) -> dict | None:
    """The row of one journal line, or None when it is not a complete row."""
    try:
        fields = next(csv.reader([line], strict=True), None)
    except csv.Error:
        return None
    if fields is None or len(fields) != len(header):
        return None
    row = dict(zip(header, fields))
    # a file written before a configuration dimension existed was measured at its default
    row.update({c: norm(CONFIG_DEFAULTS[c]) for c in LATER_CONFIG_COLUMNS if c not in header})
    if row.get("status") not in STATUSES or any(not row.get(c) for c in KEY_COLUMNS if c in header):
        return None
    if row["status"] == "ok":
        try:
            t = float(row.get("time_us", ""))
        except ValueError:
            return None
        if not (math.isfinite(t) and t > 0):
            return None
    return row


def read_rows(path: str | Path) -> tuple[list[dict], int]:
    """(complete rows in file order, count of lines that were not complete rows)."""
    path = Path(path)
    if not path.is_file():
        return [], 0
    lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    if not lines:
        return [], 0
    header = tuple(next(csv.reader([lines[0].lstrip("\ufeff")]), []))
    rows, torn = [], 0
    for line in lines[1:]:
        if not line.strip():
            continue
        row = parse_line(line, header)
        if row is None:
            torn += 1
        else:
            rows.append(row)
    return rows, torn


def better(new: dict, old: dict) -> bool:
    """Does ``new`` replace ``old`` (same key, ``new`` read later)? ``ok`` beats every
    failure; within the same rank the later timestamp wins, equal timestamps the later row."""
    rank_new, rank_old = new["status"] == "ok", old["status"] == "ok"
    if rank_new != rank_old:
        return rank_new
    return new.get("timestamp", "") >= old.get("timestamp", "")


def best_rows(rows: Iterable[dict]) -> dict[tuple, dict]:
    """The winning row per configuration key, in order of first appearance."""
    best: dict[tuple, dict] = {}
    for row in rows:
        key = task_key(row)
        if key not in best or better(row, best[key]):
            best[key] = row
    return best


def done_keys(path: str | Path, retry_failed: bool = False, context: dict | None = None) -> set[tuple]:
    """Keys that need no measuring: the winning row is complete, was measured under
    ``context`` (same GPU, driver, CUDA, L2 setting) and, with ``retry_failed``, is not a
    failure in RETRIED."""
    rows, _ = read_rows(path)
    same = {k: norm(v) for k, v in (context or {}).items()}
    done = set()
    for key, row in best_rows(rows).items():
        if any(row.get(k, "") != v for k, v in same.items()):
            continue
        if retry_failed and row["status"] in RETRIED:
            continue
        done.add(key)
    return done


def seed(journal: str | Path, table: str | Path) -> int:
    """Start a journal that does not exist yet from the complete rows of ``table`` (what
    an earlier collect appended to its output itself), so none is measured again.
    Returns the number of rows taken."""
    journal = Path(journal)
    if journal.exists() or not Path(table).is_file():
        return 0
    rows, _ = read_rows(table)
    with Journal(journal) as j:
        j.extend(rows)
    return len(rows)


def write_table(rows: Iterable[dict], out: str | Path) -> int:
    """Write ``rows`` as a measurement CSV (ROW_COLUMNS), atomically; returns the count."""
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(out.name + ".tmp")
        n = 0
        with tmp.open("w", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            writer.writerow(ROW_COLUMNS)
            for row in rows:
                writer.writerow([norm(row.get(c, "")) for c in ROW_COLUMNS])
                n += 1
        tmp.replace(out)
    except OSError as err:
        raise UserError(f"{out}: cannot write ({err.strerror or err})") from None
    return n


# ------------------------------------------------------------------ writing


def one_line_reason(row: dict, logs: Path) -> dict:
    """``row`` with its reason on one line of at most REASON_MAX characters; the full
    text of a longer or multi-line reason goes to ``logs/<configuration key>.log``."""
    reason = str(row.get("reason") or "")
    if "\n" not in reason and "\r" not in reason and len(reason) <= REASON_MAX:
        return row
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(task_key(row)))[:200] + ".log"
    first = next((ln.strip() for ln in reason.splitlines() if ln.strip()), "")[: REASON_MAX // 2]
    try:
        logs.mkdir(parents=True, exist_ok=True)
        (logs / name).write_text(reason)
        note = f"{first} (full log: {logs / name})"
    except OSError as err:
        note = f"{first} (full log not written: {err.strerror or err})"
    return {**row, "reason": note}


def _line(row: dict) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([norm(row.get(c, "")) for c in ROW_COLUMNS])
    return buf.getvalue().encode()


class Journal:
    """The journal at ``path``, opened for appending under its lock (``with Journal(p):``)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.logs = self.path.with_name(self.path.stem + ".logs")
        self.fd = self.lock_fd = None

    def __enter__(self) -> Journal:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock()
            self.fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            self._start()
        except OSError as err:
            self.close()
            raise UserError(f"{self.path}: cannot open the journal ({err.strerror or err})") from None
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _lock(self) -> None:
        self.lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            if err.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise
            holder = os.pread(self.lock_fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(self.lock_fd)
            self.lock_fd = None
            raise UserError(f"{self.lock_path}: another sweep (pid {holder}) is writing {self.path}; "
                            "wait for it to end or stop it") from None
        os.ftruncate(self.lock_fd, 0)
        os.pwrite(self.lock_fd, f"{os.getpid()}\n".encode(), 0)

    def _start(self) -> None:
        """Cut a torn last line; write the header to an empty journal, else check it."""
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            os.ftruncate(self.fd, data.rfind(b"\n") + 1)
            data = data[: data.rfind(b"\n") + 1]
        if not data:
            self._write(",".join(ROW_COLUMNS).encode() + b"\n")
            return
        header = tuple(next(csv.reader([data.split(b"\n", 1)[0].decode(errors="replace")]), []))
        if header != ROW_COLUMNS:
            raise UserError(f"{self.path}:1: the journal's columns are not this version's "
                            f"({len(header)} columns, expected {len(ROW_COLUMNS)}); move it away to start afresh")

    def append(self, row: dict) -> None:
        """Append one row (its reason kept to one line) and flush it to disk."""
        self._write(_line(one_line_reason(row, self.logs)))

    def extend(self, rows: Iterable[dict]) -> None:
        """Append rows in one write (all or none)."""
        self._write(b"".join(_line(one_line_reason(r, self.logs)) for r in rows))

    def _write(self, data: bytes) -> None:
        good = os.fstat(self.fd).st_size
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view):]
            os.fsync(self.fd)
        except OSError as err:
            try:
                os.ftruncate(self.fd, good)
            except OSError:
                pass
            raise UserError(f"{self.path}: cannot append a row ({err.strerror or err}); "
                            "the journal is kept up to its last complete row") from None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        if self.lock_fd is not None:
            os.close(self.lock_fd)  # releases the flock
            self.lock_fd = None
