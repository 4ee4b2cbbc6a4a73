"""A small stateful job on statectl's state backends, exactly-once across crashes.

Input: a replayable CSV file of events ``timestamp,user,kind`` (timestamp in
milliseconds). Two subtasks (in one process) keep per user a running count
and the last five event kinds, and end a user's session with an event-time
timer 10 s after their last event. Every ``--checkpoint-every`` events the job
checkpoints:

1. the output since the last checkpoint is written to ``part-<n>.pending``;
2. every subtask snapshots, with the input offset and ``n`` in operator state;
3. one ``_metadata`` commits checkpoint ``n`` (the commit point);
4. ``part-<n>.pending`` becomes ``part-<n>.out``.

On start the job restores from its newest committed checkpoint, finishes step
4 if a crash came between 3 and 4, drops later pending parts, and replays the
input from the recorded offset. So ``result.txt`` (the parts in order) is the
same however often the job is killed.

    python examples/job/job.py --events events.csv --work DIR [--backend rocksdb|heap]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from statectl.backends import HeapBackend, RocksDBBackend, commit_snapshots
from statectl.statefmt.errors import StatectlError
from statectl.statefmt.formats import load

UID = "user-activity"
PARALLELISM = 2
MAX_PARALLELISM = 128
SESSION_GAP = 10_000
RECENT = 5


def part(work: str, n: int, suffix: str) -> str:
    return os.path.join(work, "output", f"part-{n:06d}.{suffix}")


def latest_checkpoint(work: str):
    """The newest committed checkpoint, or None."""
    root = os.path.join(work, "checkpoints")
    for name in sorted(os.listdir(root), reverse=True) if os.path.isdir(root) else ():
        try:
            return load(os.path.join(root, name))
        except StatectlError:
            continue  # never committed: the job died while writing it
    return None


class Job:
    def __init__(self, work: str, backend: str):
        self.work = work
        self.native = backend == "rocksdb"
        cls = RocksDBBackend if self.native else HeapBackend
        # RocksDB's working copies live in the job's folder, as Flink keeps them in its local
        # state directory: a killed run's copies are removed by the next run, not left in /tmp
        self.local = os.path.join(work, "local")
        shutil.rmtree(self.local, ignore_errors=True)

        def options(i: int) -> dict:
            return {"workdir": os.path.join(self.local, f"subtask-{i}")} if self.native else {}

        cp = latest_checkpoint(work)
        if cp is None:
            self.subtasks = [cls.create(UID, subtask=i, parallelism=PARALLELISM,
                                        max_parallelism=MAX_PARALLELISM, key=[("user", "string")],
                                        **options(i))
                             for i in range(PARALLELISM)]
        else:
            self.subtasks = [cls.restore(cp, UID, subtask=i, parallelism=PARALLELISM, **options(i))
                             for i in range(PARALLELISM)]
        for b in self.subtasks:
            b.count = b.value_state("count", "int64")
            b.recent = b.list_state("recent", "string")
            b.last = b.value_state("last_seen", "int64")
            b.position = b.union_list_state("position", "int64")  # written by subtask 0
        position = self.subtasks[0].position.get()
        self.offset, self.epoch = (position[0], position[1]) if position else (0, 0)
        self.watermark = position[2] if position else -(2 ** 63)
        self.pending: list[str] = []
        self._settle_output()

    def _settle_output(self) -> None:
        """Finish the rename of the committed epoch; drop parts no checkpoint committed."""
        out = os.path.join(self.work, "output")
        os.makedirs(out, exist_ok=True)
        for name in os.listdir(out):
            n = int(name.split("-")[1].split(".")[0])
            if name.endswith(".pending"):
                if n <= self.epoch:
                    os.replace(os.path.join(out, name), part(self.work, n, "out"))
                else:
                    os.remove(os.path.join(out, name))

    def owner(self, user: str):
        for b in self.subtasks:
            if b.first_group <= b.key_group_of(user) <= b.last_group:
                return b
        raise AssertionError(user)

    def process(self, ts: int, user: str, kind: str) -> None:
        b = self.owner(user)
        b.set_current_key(user)
        count = b.count.value(0) + 1
        b.count.update(count)
        recent = (b.recent.get() + [kind])[-RECENT:]
        b.recent.update(recent)
        last = b.last.value()
        if last is not None:
            b.delete_event_time_timer(last + SESSION_GAP)  # the session goes on
        b.register_event_time_timer(ts + SESSION_GAP)
        b.last.update(ts)
        self.pending.append(f"{ts},{user},{count},{'|'.join(recent)}")
        self.advance(ts)

    def advance(self, watermark: int) -> None:
        self.watermark = max(self.watermark, watermark)
        for b in self.subtasks:
            for t in b.fire_event_time_timers(self.watermark - 1):
                self.pending.append(f"{t.timestamp},{t.key[0]},session-end,{b.count.value(0)}")

    def checkpoint(self) -> None:
        self.epoch += 1
        with open(part(self.work, self.epoch, "pending"), "w") as f:
            f.write("".join(line + "\n" for line in self.pending))
            f.flush()
            os.fsync(f.fileno())
        target = os.path.join(self.work, "checkpoints", f"cp-{self.epoch:06d}")
        snaps = []
        for b in self.subtasks:
            b.position.update([self.offset, self.epoch, self.watermark] if b.subtask.index == 0 else [])
            snaps.append(b.snapshot(target, format="rocksdb") if self.native else b.snapshot(target))
        sp = commit_snapshots(target, snaps)
        os.replace(part(self.work, self.epoch, "pending"), part(self.work, self.epoch, "out"))
        for b in self.subtasks:
            if self.native:
                b.notify_committed(sp)
        self.pending = []

    def run(self, events: str, every: int) -> None:
        with open(events) as f:
            lines = f.read().splitlines()
        while self.offset < len(lines):
            ts, user, kind = lines[self.offset].split(",")
            self.process(int(ts), user, kind)
            self.offset += 1
            if self.offset % every == 0:
                self.checkpoint()
        self.advance(2 ** 62)  # end of input: close every session
        self.checkpoint()
        parts = sorted(n for n in os.listdir(os.path.join(self.work, "output")) if n.endswith(".out"))
        with open(os.path.join(self.work, "result.txt"), "w") as out:
            for name in parts:
                with open(os.path.join(self.work, "output", name)) as f:
                    out.write(f.read())

    def close(self) -> None:
        for b in self.subtasks:
            b.close()
        shutil.rmtree(self.local, ignore_errors=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--backend", choices=["rocksdb", "heap"], default="rocksdb")
    p.add_argument("--checkpoint-every", type=int, default=100)
    args = p.parse_args(argv)
    job = Job(args.work, args.backend)
    try:
        job.run(args.events, args.checkpoint_every)
    finally:
        job.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
