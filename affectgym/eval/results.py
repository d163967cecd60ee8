"""The files of an eval run folder: writing ``results.jsonl`` safely and reading it back.

One line of ``results.jsonl`` is one episode's record: the runner's fields (scenario id,
rollout, seed, transcript, reward, components, timings, error...) and the env's
``info["outcome"]`` nested, unchanged, under ``"outcome"``. Files written before
that nesting (outcome fields spliced into the top level, listed in
``"outcome_keys"``) are converted when read, so ``affectgym report`` and ``--resume`` keep
working on them.

Any text can be stored: a lone surrogate (half an emoji, cut by a model's ``max_tokens``)
cannot be encoded as UTF-8, so it is written as U+FFFD (:mod:`affectgym.text`, the policy
the judge follows too) and the record says how many were replaced
(``"replaced_lone_surrogates"``).

One process writes a run folder at a time: :func:`lock_run_folder` holds an exclusive OS
lock (``filelock`` on ``.lock`` in the folder; the kernel releases it when the process
ends, crashes included) and a second writer fails at once with :class:`RunFolderLocked`,
naming the holder's pid.

>>> upgrade_record({"scenario_id": "n01", "rollout": 0, "reward": 1.0, "label": "sad",
...                 "outcome_turns": 3, "outcome_keys": ["label", "outcome_turns"]})["outcome"]
{'label': 'sad', 'turns': 3}
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from affectgym.text import count_lone_surrogates, replace_lone_surrogates

RESULTS_FILE = "results.jsonl"
METADATA_FILE = "metadata.json"
SUMMARY_FILE = "summary.json"
LOCK_FILE = ".lock"
#: Record key: how many lone surrogates of the record's text were written as U+FFFD.
REPLACED_SURROGATES_KEY = "replaced_lone_surrogates"

#: What a refused ``affectgym eval`` writer is told to do.
EVAL_LOCK_ADVICE = ("two writers would duplicate or lose episodes: wait for it to finish (or stop it), "
                    "then --resume, or write to another --out")
#: How long a refused writer waits for the holder to write its pid (it does so right after locking).
_HOLDER_WAIT_S = 1.0

#: Top-level keys of the records of the older flat format, which were not outcome fields; an
#: outcome field that clashed with one of them was stored as ``outcome_<key>``.
_FLAT_FORMAT_RUNNER_KEYS = frozenset(
    {
        "scenario_id", "rollout", "seed", "messages", "final_text", "final_answer", "reward", "reward_components",
        "step_rewards", "terminated", "truncated", "turns", "tool_calls", "timings", "error", "agent", "env_id",
    }
)


class ResultsWriter:
    """Appends JSON lines from many threads; only whole lines ever reach the file.

    A background thread takes every line queued since its last write and appends them in
    one ``write``, then flushes and fsyncs (group commit: one fsync covers all the lines
    that arrived while the previous one ran, so workers never wait for the disk). A crash
    can lose the lines still queued, or cut the last write short; :func:`read_results`
    drops a cut line and a resumed run replays the episodes that are missing.

    Args:
        path: The ``results.jsonl`` file (created if missing).
        fsync: Force each write to disk (the default; off only to measure the runner itself).

    Raises:
        OSError: From :meth:`write` or :meth:`close`, when an earlier write failed (disk full...).
    """

    def __init__(self, path: Path, fsync: bool = True):
        self.path = path
        self.fsync = fsync
        self.lines_written = 0
        self._file = open(path, "ab")  # noqa: SIM115 - closed in close()
        self._pending: list[bytes] = []
        self._closing = False
        self._error: OSError | None = None
        self._condition = threading.Condition()
        self._thread = threading.Thread(target=self._drain, name="affectgym-results", daemon=True)
        self._thread.start()

    def write(self, record: Mapping[str, Any]) -> None:
        """Queue one record as a line (encoded here, so a bad record fails in its own episode)."""
        data = _json_line(record)
        with self._condition:
            if self._error is not None:
                raise self._error
            self._pending.append(data)
            self._condition.notify_all()

    def close(self) -> None:
        """Write every queued line, then close the file."""
        with self._condition:
            self._closing = True
            self._condition.notify_all()
        self._thread.join()
        self._file.close()
        if self._error is not None:
            raise self._error

    def _drain(self) -> None:
        while True:
            with self._condition:
                while not self._pending and not self._closing:
                    self._condition.wait()
                if not self._pending:
                    return
                batch, self._pending = self._pending, []
            try:
                self._file.write(b"".join(batch))
                self._file.flush()
                if self.fsync:
                    os.fsync(self._file.fileno())
            except OSError as exc:
                with self._condition:
                    self._error = exc
                return
            self.lines_written += len(batch)


def read_results(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Complete records of a results file, and how many lines were not (half-written, corrupt).

    Records of the older flat format come back converted (:func:`upgrade_record`).

    Args:
        path: A ``results.jsonl``; a missing file has no records.

    Returns:
        ``(records, bad_lines)``.
    """
    records, bad, _ = _scan(path)
    return records, bad


def records_to_resume(path: Path, *, retry_errors: bool = False) -> list[dict[str, Any]]:
    """The records a resumed run keeps; the file is rewritten to hold exactly those.

    Drops half-written or corrupt lines, repeats of a (scenario, rollout) episode and, with
    ``retry_errors``, the episodes recorded with an error; records of the older flat format
    are converted, so that one file never mixes formats. The file is rewritten only when
    one of these changed something.

    Args:
        path: A ``results.jsonl``; a missing file has no records.
        retry_errors: Drop the failed episodes too, so that they are played again.

    Returns:
        The kept records, in file order.
    """
    records, bad, upgraded = _scan(path)
    kept, seen = [], set()
    for record in records:
        key = (record["scenario_id"], record["rollout"])
        if key in seen or (retry_errors and record.get("error")):
            continue
        seen.add(key)
        kept.append(record)
    if bad or upgraded or len(kept) != len(records):
        rewrite_results(path, kept)
    return kept


def _scan(path: Path) -> tuple[list[dict[str, Any]], int, int]:
    """``(records, bad_lines, records converted from the flat format)``."""
    if not path.exists():
        return [], 0, 0
    records, bad, upgraded = [], 0, 0
    with open(path, "rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                bad += 1  # the last write was cut short
                continue
            try:
                record = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError):
                bad += 1
                continue
            if not (isinstance(record, dict) and "scenario_id" in record and "rollout" in record):
                bad += 1
                continue
            current = upgrade_record(record)
            upgraded += current is not record
            records.append(current)
    return records, bad, upgraded


def upgrade_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """A record in the current format: the env's outcome nested under ``"outcome"``.

    A current record is returned as it is. A record of the older flat format has its outcome
    fields (those named in its ``"outcome_keys"``, or, without that list, every key the
    runner did not own) moved under ``"outcome"``, with their ``outcome_`` prefix dropped
    where the old runner added one to avoid a clash with its own keys.

    Args:
        record: One parsed line of ``results.jsonl``.

    Returns:
        The record (the same object when it needed no change, a new one otherwise).
    """
    if isinstance(record.get("outcome"), Mapping) and "outcome_keys" not in record:
        return record  # type: ignore[return-value]
    flat = dict(record)
    names = flat.pop("outcome_keys", None)
    if not isinstance(names, list):
        names = [key for key in flat if key not in _FLAT_FORMAT_RUNNER_KEYS]
    outcome = {}
    for name in names:
        if name not in flat:
            continue
        original = name.removeprefix("outcome_")
        outcome[original if original in _FLAT_FORMAT_RUNNER_KEYS else name] = flat.pop(name)
    flat["outcome"] = outcome
    return flat


def rewrite_results(path: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """Replace a results file by ``records`` atomically (a temporary file, fsync, rename)."""
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "wb") as handle:
        for record in records:
            handle.write(_json_line(record))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)


def write_json(path: Path, payload: Mapping[str, Any]) -> None:
    """Write ``metadata.json`` or ``summary.json`` atomically, indented (lone surrogates as U+FFFD)."""
    temporary = path.with_name(path.name + ".tmp")
    text = json.dumps(payload, indent=2, ensure_ascii=False, default=_json_default)
    temporary.write_text(replace_lone_surrogates(text) + "\n", encoding="utf-8")
    os.replace(temporary, path)


def read_json(path: Path) -> dict[str, Any]:
    """A JSON file of a run folder; ``{}`` when it does not exist."""
    return json.loads(path.read_text()) if path.is_file() else {}


def _json_line(record: Mapping[str, Any]) -> bytes:
    """One UTF-8 line; lone surrogates become U+FFFD and the record counts them."""
    text = json.dumps(record, ensure_ascii=False, default=_json_default)
    replaced = count_lone_surrogates(text)
    if replaced:
        flagged = {**record, REPLACED_SURROGATES_KEY: replaced}
        text = replace_lone_surrogates(json.dumps(flagged, ensure_ascii=False, default=_json_default))
    return (text + "\n").encode()


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if hasattr(value, "tolist"):  # numpy arrays and scalars
        return value.tolist()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)


class RunFolderLocked(RuntimeError):
    """Another process is writing the run folder; the message names its pid."""


@contextmanager
def lock_run_folder(folder: Path | str, *, advice: str = EVAL_LOCK_ADVICE) -> Iterator[Path]:
    """Hold ``folder`` for this process alone until the block ends.

    The folder is created if missing. The lock is ``filelock``'s OS lock on ``folder/.lock``,
    which holds the holder's pid, host, start time and command; the kernel releases it
    when the process exits or crashes, so a killed run never leaves the folder locked.
    On release the lock file is removed, and so is the folder when this call created it
    and nothing else was written to it. ``affectgym eval`` holds its ``--out`` folder and
    ``affectgym train`` its ``--output-dir`` this way.

    Args:
        folder: The run folder.
        advice: What the refused writer should do, after the holder is named.

    Yields:
        The lock file's path.

    Raises:
        RunFolderLocked: Another process (or another run in this one) holds the folder.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as root, lock_run_folder(Path(root) / "run"):
    ...     try:
    ...         with lock_run_folder(Path(root) / "run"):
    ...             pass
    ...     except RunFolderLocked as refused:
    ...         print(f"pid {os.getpid()}" in str(refused))
    True
    """
    from filelock import FileLock, Timeout

    folder = Path(folder)
    created = not folder.is_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    lock = FileLock(path, timeout=0, thread_local=False, on_acquired=_write_holder)
    try:
        lock.acquire()
    except Timeout:
        holder = _read_holder(path)
        pid = holder.get("pid", "unknown")
        where = f" on {holder['host']}" if holder.get("host") else ""
        since = f" since {holder['started_at']}" if holder.get("started_at") else ""
        command = f": {holder['command']}" if holder.get("command") else ""
        raise RunFolderLocked(
            f"{folder} is being written by another process (pid {pid}{where}{since}{command}); {advice}"
        ) from None
    try:
        yield path
    finally:
        # Removed while still held: a process that opened this file meanwhile finds its inode
        # unlinked once it locks it, and filelock does not count that as holding the folder.
        path.unlink(missing_ok=True)
        lock.release()
        if created:
            try:
                folder.rmdir()  # only succeeds when the run wrote nothing
            except OSError:
                pass


def _write_holder(descriptor: int) -> None:
    """Write who holds the lock into the lock file (``filelock`` calls this right after locking)."""
    holder = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(sys.argv),
    }
    os.ftruncate(descriptor, 0)
    os.pwrite(descriptor, replace_lone_surrogates(json.dumps(holder, ensure_ascii=False)).encode(), 0)


def _read_holder(path: Path) -> dict[str, Any]:
    """The lock file's holder record; ``{}`` when the holder has not written it in time."""
    deadline = time.monotonic() + _HOLDER_WAIT_S
    while True:
        try:
            holder = json.loads(path.read_bytes())
        except (OSError, ValueError):
            holder = None
        if isinstance(holder, dict):
            return holder
        if time.monotonic() > deadline:
            return {}
        time.sleep(0.02)


__all__ = [
    "LOCK_FILE",
    "METADATA_FILE",
    "REPLACED_SURROGATES_KEY",
    "RESULTS_FILE",
    "SUMMARY_FILE",
    "ResultsWriter",
    "RunFolderLocked",
    "read_json",
    "lock_run_folder",
    "read_results",
    "records_to_resume",
    "rewrite_results",
    "upgrade_record",
    "write_json",
]
