"""All file access, through pyarrow's filesystems.

A savepoint location is a local path or a URI (``file://``, ``s3://``,
``hdfs://``... wherever pyarrow supports the scheme). Everything else in
statectl works on :class:`Location` values and never calls ``open`` itself.
"""

from __future__ import annotations

import os
import stat
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Iterator

from .errors import MissingFileError, StatectlError
from .refs import join

if TYPE_CHECKING:
    import pyarrow.fs as pafs

CHUNK = 4 * 1024 * 1024

S3_VARIABLES = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_DEFAULT_REGION",
                "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_EC2_METADATA_DISABLED")
"""The environment pyarrow's S3 filesystem takes its endpoint, region and credentials from:
Spark's executors on a cluster are given the driver's (see `cli.spark`)."""


def _filesystem_and_path(uri: str) -> tuple[pafs.FileSystem, str]:
    if "://" not in uri:
        return _local_filesystem(), uri
    return _remote_filesystem_and_path(uri, tuple(os.environ.get(v) for v in S3_VARIABLES))


@lru_cache(maxsize=256)
def _remote_filesystem_and_path(uri: str, settings: tuple) -> tuple[pafs.FileSystem, str]:
    """*uri*'s filesystem, made once per *settings* (the S3 variables' values it was made
    under): a caller who changes the endpoint or the credentials gets a filesystem with them."""
    import pyarrow.fs as pafs  # here, not at the top: `info` of a local savepoint needs no pyarrow

    try:
        return pafs.FileSystem.from_uri(uri)
    except (ValueError, OSError) as e:
        raise StatectlError(f"cannot open {uri}: {e}") from None


@lru_cache(maxsize=1)
def _local_filesystem() -> pafs.LocalFileSystem:
    import pyarrow.fs as pafs

    return pafs.LocalFileSystem()


def _access_error(uri: str, e: OSError) -> StatectlError:
    """One line for a filesystem's error, saying what to check for the object stores' usual ones."""
    text = str(e)
    if "ACCESS_DENIED" in text or "AccessDenied" in text:
        return StatectlError(f"cannot read {uri}: access denied (check the credentials in "
                             "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and the bucket's policy)")
    if "NETWORK_CONNECTION" in text:
        return StatectlError(f"cannot reach the object store holding {uri} (check AWS_ENDPOINT_URL "
                             f"or --s3-endpoint): {text.rsplit(': ', 1)[-1]}")
    return StatectlError(f"cannot read {uri}: {text}")


@dataclass(frozen=True)
class Location:
    """A file or directory: the text a user gave (made absolute) and its filesystem."""

    uri: str

    @staticmethod
    def of(text: "str | os.PathLike | Location") -> "Location":
        """A location from a path or URI; local paths become absolute."""
        if isinstance(text, Location):
            return text
        text = os.fspath(text)
        if "://" in text:
            return Location(text.rstrip("/") if not text.endswith(":///") else text)
        return Location(os.path.abspath(os.path.expanduser(text)))

    @property
    def is_local(self) -> bool:
        return "://" not in self.uri or self.uri.startswith("file://")

    def _resolve(self) -> tuple[pafs.FileSystem, str]:
        return _filesystem_and_path(self.uri)

    @property
    def fs(self) -> pafs.FileSystem:
        return self._resolve()[0]

    @property
    def path(self) -> str:
        return self._resolve()[1]

    def child(self, relative: str) -> "Location":
        return Location(join(self.uri, relative))

    @property
    def name(self) -> str:
        return self.uri.rstrip("/").rsplit("/", 1)[-1]

    def __str__(self) -> str:
        return self.uri

    # --- queries ---
    def info(self) -> pafs.FileInfo:
        fs, path = self._resolve()
        try:
            return fs.get_file_info(path)
        except OSError as e:
            raise _access_error(self.uri, e) from None

    def _local_type(self) -> str | None:
        """"dir", "file" or "missing" for a plain local path, from ``os.stat``: without
        pyarrow, whose import costs a command that reads one small local file more than the
        file. None: pyarrow answers (a URI, or a failure pyarrow words in its own terms)."""
        if "://" in self.uri:
            return None
        try:
            found = os.stat(self.uri)
        except (FileNotFoundError, NotADirectoryError):
            return "missing"
        except OSError:
            return None
        return "dir" if stat.S_ISDIR(found.st_mode) else "file"

    def exists(self) -> bool:
        local = self._local_type()
        if local is not None:
            return local != "missing"
        import pyarrow.fs as pafs

        return self.info().type != pafs.FileType.NotFound

    def is_dir(self) -> bool:
        local = self._local_type()
        if local is not None:
            return local == "dir"
        import pyarrow.fs as pafs

        return self.info().type == pafs.FileType.Directory

    def size(self) -> int:
        import pyarrow.fs as pafs

        info = self.info()
        if info.type == pafs.FileType.NotFound:
            raise MissingFileError(f"{self.uri}: file is missing")
        if info.type != pafs.FileType.File:
            raise MissingFileError(f"{self.uri}: not a file")
        return info.size

    def list_files(self) -> list[str]:
        """Relative paths of every file below this directory."""
        import pyarrow.fs as pafs

        fs, path = self._resolve()
        selector = pafs.FileSelector(path, recursive=True, allow_not_found=True)
        base = path.rstrip("/") + "/"
        return sorted(
            i.path[len(base):] for i in fs.get_file_info(selector) if i.type == pafs.FileType.File
        )

    # --- reading ---
    def read_bytes(self) -> bytes:
        if "://" not in self.uri:  # a plain local path: as for _local_type
            try:
                with open(self.uri, "rb") as f:
                    return f.read()
            except FileNotFoundError:
                raise MissingFileError(f"{self.uri}: file is missing") from None
            except OSError:
                pass  # pyarrow below says what is wrong, as for a URI
        fs, path = self._resolve()
        try:
            with fs.open_input_stream(path) as f:
                return f.read()
        except FileNotFoundError:
            raise MissingFileError(f"{self.uri}: file is missing") from None
        except OSError as e:
            raise _access_error(self.uri, e) from None

    def iter_chunks(self) -> Iterator[bytes]:
        fs, path = self._resolve()
        try:
            with fs.open_input_stream(path) as f:
                while chunk := f.read(CHUNK):
                    yield chunk
        except FileNotFoundError:
            raise MissingFileError(f"{self.uri}: file is missing") from None

    def open_input_file(self):
        """A random-access file, for Parquet readers."""
        fs, path = self._resolve()
        try:
            return fs.open_input_file(path)
        except FileNotFoundError:
            raise MissingFileError(f"{self.uri}: file is missing") from None

    # --- writing ---
    def make_dirs(self) -> None:
        fs, path = self._resolve()
        fs.create_dir(path, recursive=True)

    def open_output_stream(self):
        fs, path = self._resolve()
        parent = path.rsplit("/", 1)[0]
        if parent:
            fs.create_dir(parent, recursive=True)
        return fs.open_output_stream(path)

    def write_bytes_atomically(self, data: bytes) -> None:
        """Make the file appear whole or not at all.

        Locally: write a temporary sibling, then rename over. On object stores
        one PUT of the whole object is already all-or-nothing.
        """
        import pyarrow.fs as pafs

        fs, path = self._resolve()
        if not isinstance(fs, pafs.LocalFileSystem):
            with fs.open_output_stream(path) as out:
                out.write(data)
            return
        tmp = f"{path}.tmp-{uuid.uuid4().hex}"
        try:
            with open(tmp, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)

    def delete_file(self) -> None:
        fs, path = self._resolve()
        try:
            fs.delete_file(path)
        except FileNotFoundError:
            pass

    def delete_dir(self) -> None:
        fs, path = self._resolve()
        try:
            fs.delete_dir(path)
        except FileNotFoundError:
            pass
