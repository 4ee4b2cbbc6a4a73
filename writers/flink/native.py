"""The task side of a native Flink operator: one subtask's sorted entry rows into the RocksDB
database Flink's RocksDB and ForSt backends restore as their own (`statefmt.flink.native_write`),
uploaded beside `_metadata` under new UUID names with the keyed header as its meta
information stream. The twin of `encoding.KeyedStreamTask`, which writes the canonical stream."""

from __future__ import annotations

import io
import shutil

import pyarrow as pa

from statectl.statefmt.flink.native_write import NativeSnapshotBuilder
from statectl.statefmt.flink.savepoint_write import KeyedNativeFiles
from statectl.statefmt.flink.stream_write import EntryAssembler
from statectl.statefmt.flink.streams import prefix_bytes
from statectl.statefmt.fs import Location
from statectl.statefmt.keygroups import key_group_range

from .encoding import KeyedSubtaskTask, stream_file_name

COPY_CHUNK = 8 << 20
NATIVE_HANDLE_DDL = ("subtask int, start int, count int, meta string, meta_size bigint, "
                     "files array<struct<name: string, file: string, size: bigint>>, entries bigint")
_SCHEMA = pa.schema([("subtask", pa.int32()), ("start", pa.int32()), ("count", pa.int32()),
                     ("meta", pa.string()), ("meta_size", pa.int64()),
                     ("files", pa.list_(pa.struct([("name", pa.string()), ("file", pa.string()),
                                                   ("size", pa.int64())]))),
                     ("entries", pa.int64())])


class NativeKeyedTask(KeyedSubtaskTask):
    """Writes one subtask's native snapshot from its sorted entry rows (picklable)."""

    ddl = NATIVE_HANDLE_DDL

    def write(self, subtask: int, batches) -> pa.RecordBatch:
        first, last = key_group_range(self.max_parallelism, self.parallelism, subtask)
        assembler = EntryAssembler(list(self.states), self.key, (first, last))
        builder = NativeSnapshotBuilder(list(self.states), prefix_bytes(self.max_parallelism))
        uploaded: list[Location] = []
        try:
            for batch in batches:
                builder.add(assembler.add(pa.Table.from_batches([batch])))
            builder.add(assembler.finish())
            files = []
            for name, path in builder.finish():
                with open(path, "rb") as source:
                    target, size = self._upload(source, uploaded)
                files.append((name, target.name, size))
            meta, _ = self._upload(io.BytesIO(self.header), uploaded)
        except BaseException:
            for target in uploaded:
                target.delete_file()
            raise
        finally:
            builder.close()
        done = KeyedNativeFiles(subtask, first, last - first + 1, (meta.name, len(self.header)), tuple(files),
                                builder.entries)
        return native_handle_batch(done)

    @staticmethod
    def written(row) -> KeyedNativeFiles:
        return KeyedNativeFiles(row["subtask"], row["start"], row["count"], (row["meta"], row["meta_size"]),
                                tuple((f["name"], f["file"], f["size"]) for f in row["files"]), row["entries"])

    def _upload(self, source, uploaded: list[Location]) -> tuple[Location, int]:
        """*source* (a binary file) copied to a new file of the output (noted in *uploaded*): it
        and its size."""
        target = Location(self.out).child(stream_file_name(self.token))
        uploaded.append(target)
        with target.open_output_stream() as f:
            shutil.copyfileobj(source, f, COPY_CHUNK)
            size = source.tell()
        return target, size


def native_handle_batch(f: KeyedNativeFiles) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [{"subtask": f.subtask, "start": f.start, "count": f.count, "meta": f.meta[0], "meta_size": f.meta[1],
          "files": [{"name": n, "file": p, "size": s} for n, p, s in f.files], "entries": f.entries}],
        schema=_SCHEMA)
