"""OCI image-layout archives and layer tars, and the content-keyed cache that keeps them.

An archive (:func:`write_oci_archive`) is an OCI image-layout tar (``oci-layout``,
``index.json``, ``blobs/sha256/<digest>``) that ``ctr images import`` loads and names exactly
as its ``index.json`` says. Layers are uncompressed PAX tars (:func:`write_layer`) with
numeric root owners, entries in name order and fixed times (:data:`EPOCH`) unless a layer
keeps its own, so equal inputs give byte-identical layers and archives; a layer's sha256 (its
digest and its diff_id alike) is recorded beside it. :func:`thin_archive` copies an archive
without the blobs containerd already holds.

The cache, under ``cache_dir("node-images")``: ``layers/<kind>-<key>.tar`` with its digest in
``<kind>-<key>.tar.json``, the key (:func:`content_key`) a digest of everything that decides
the layer's content and :data:`LAYER_FORMAT`; ``archives/<kind>-<digest>.tar``, named by the
manifest digest. A missing layer is built under a per-kind lock in a staging folder under
``work`` (same file system, so uv hardlinks), never inside the test node's network namespace;
older versions of a kind beyond :data:`KEEP_VERSIONS` are pruned. Every file is written
atomically (a partial file, then a rename).

Measured on the 2-core project machine: with everything cached, all images are ready in
0.4 s; after a change to cdcflow's code, rewriting the two archives takes ~2 s.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import logging
import os
import shutil
import tarfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from cdcflow.operator.devservices import processes
from tests.services import node_namespace

log = logging.getLogger(__name__)

LAYER_FORMAT = 1  # bump to rebuild every cached layer
EPOCH = 0  # mtime of every generated entry, so equal inputs give equal layers
EPOCH_ISO = "1970-01-01T00:00:00Z"
PLATFORM = {"architecture": "amd64", "os": "linux"}
KEY_LENGTH = 16  # hex digits of a cache key in a file name
KEEP_VERSIONS = 2  # cached layers and archives kept per kind (this build and the one before)
COPY_BUFFER = 1 << 20
# The maker each image's history names: part of the config blob, so of the archives' digests.
CREATED_BY = "tests.services.node_images"

MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
REF_NAME = "org.opencontainers.image.ref.name"
CONTAINERD_NAME = "io.containerd.image.name"


# --------------------------------------------------------------------------------------------
# Values


@dataclass(frozen=True)
class ImageConfig:
    """The runtime part of an OCI image configuration."""

    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    working_dir: str = "/"
    user: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ImageArchive:
    """An OCI image-layout tar in the cache; ``ctr images import`` names it ``name``."""

    name: str
    path: Path
    digest: str


@dataclass(frozen=True)
class LayerFile:
    """An uncompressed layer tar and its sha256 (its digest and its diff_id alike)."""

    path: Path
    digest: str
    size: int


# --------------------------------------------------------------------------------------------
# OCI image layout


def write_oci_archive(
    *, name: str, layers: Sequence[Path], config: ImageConfig, out: Path
) -> ImageArchive:
    """Write an OCI image-layout tar of ``layers`` (uncompressed tars, bottom first) that
    ``ctr images import`` names exactly ``name``; atomically (a partial file, then a rename)."""
    files = [layer_file(path) for path in layers]
    config_blob = config_document(config, files)
    manifest_blob = manifest_document(config_blob, files)
    with _atomic(out) as partial, _tar_writer(partial) as tar:
        _add_bytes(tar, "oci-layout", json_bytes({"imageLayoutVersion": "1.0.0"}))
        _add_bytes(tar, "index.json", index_document(name, manifest_blob))
        _add_bytes(tar, _blob_name(_sha256(manifest_blob)), manifest_blob)
        _add_bytes(tar, _blob_name(_sha256(config_blob)), config_blob)
        for file in {file.digest: file for file in files}.values():
            info = tarfile.TarInfo(_blob_name(file.digest))
            info.size, info.mode, info.mtime = file.size, 0o644, EPOCH
            with file.path.open("rb") as handle:
                tar.addfile(info, handle)
    return ImageArchive(name=name, path=out, digest=_sha256(manifest_blob))


def config_document(config: ImageConfig, layers: Sequence[LayerFile]) -> bytes:
    """The image configuration blob: runtime settings, ``rootfs.diff_ids`` and history."""
    runtime: dict[str, Any] = {
        "Env": [f"{key}={value}" for key, value in config.env.items()],
        "WorkingDir": config.working_dir,
    }
    if config.entrypoint:
        runtime["Entrypoint"] = list(config.entrypoint)
    if config.cmd:
        runtime["Cmd"] = list(config.cmd)
    if config.user is not None:
        runtime["User"] = config.user
    if config.labels:
        runtime["Labels"] = dict(config.labels)
    document = {
        **PLATFORM,
        "created": EPOCH_ISO,
        "config": runtime,
        "rootfs": {"type": "layers", "diff_ids": [layer.digest for layer in layers]},
        "history": [
            {"created": EPOCH_ISO, "created_by": f"{CREATED_BY}: {layer.path.name}"}
            for layer in layers
        ],
    }
    return json_bytes(document)


def manifest_document(config_blob: bytes, layers: Sequence[LayerFile]) -> bytes:
    """The image manifest: the configuration blob and the layers (uncompressed)."""
    return json_bytes(
        {
            "schemaVersion": 2,
            "mediaType": MEDIA_MANIFEST,
            "config": _descriptor(MEDIA_CONFIG, config_blob),
            "layers": [
                {"mediaType": MEDIA_LAYER, "digest": layer.digest, "size": layer.size}
                for layer in layers
            ],
        }
    )


def index_document(name: str, manifest_blob: bytes) -> bytes:
    """``index.json``: one linux/amd64 manifest, annotated with the full image name both ways
    containerd reads it (``io.containerd.image.name`` wins; OCI's ref name for other tools)."""
    manifest = {
        **_descriptor(MEDIA_MANIFEST, manifest_blob),
        "platform": PLATFORM,
        "annotations": {CONTAINERD_NAME: name, REF_NAME: name},
    }
    return json_bytes({"schemaVersion": 2, "mediaType": MEDIA_INDEX, "manifests": [manifest]})


def json_bytes(document: Any) -> bytes:
    """Canonical JSON (sorted keys, no spaces), so equal documents have equal digests."""
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def thin_archive(archive: Path, out: Path, *, present: set[str]) -> None:
    """Copy the OCI archive ``archive`` to ``out`` without the blobs in ``present``."""
    with tarfile.open(archive) as source, _tar_writer(out) as thin:
        for member in source:
            digest = "sha256:" + member.name.rpartition("/")[2]
            if member.name.startswith("blobs/") and digest in present:
                continue
            thin.addfile(member, source.extractfile(member) if member.isreg() else None)


def _descriptor(media_type: str, blob: bytes) -> dict[str, Any]:
    return {"mediaType": media_type, "digest": _sha256(blob), "size": len(blob)}


def _blob_name(digest: str) -> str:
    return "blobs/sha256/" + digest.removeprefix("sha256:")


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, EPOCH
    tar.addfile(info, io.BytesIO(data))


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------------------------
# Layer tars


class _HashingWriter:
    """A write-only file that hashes what passes through, so a layer is read only once."""

    def __init__(self, sink: IO[bytes]) -> None:
        self.sink, self.hash, self.size = sink, hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        self.hash.update(data)
        self.size += len(data)
        return self.sink.write(data)

    def tell(self) -> int:
        return self.size

    def read(self, size: int) -> bytes:
        raise io.UnsupportedOperation("write-only")

    def seek(self, offset: int, whence: int = 0) -> int:
        raise io.UnsupportedOperation("write-only")

    def close(self) -> None:
        """The sink is closed by its owner."""


def _tar_writer(out: Path | _HashingWriter) -> tarfile.TarFile:
    """A PAX tar being written to ``out``, copying file contents in large chunks."""
    if isinstance(out, Path):
        return tarfile.TarFile(out, "w", format=tarfile.PAX_FORMAT, copybufsize=COPY_BUFFER)
    return tarfile.TarFile(
        fileobj=out, mode="w", format=tarfile.PAX_FORMAT, copybufsize=COPY_BUFFER
    )


def write_layer(root: Path, out: Path, *, mtime: int | None = None) -> LayerFile:
    """Tar the tree under ``root`` (not ``root`` itself) into ``out`` with numeric owners, in
    name order; ``mtime`` replaces every entry's time. Atomic; records the digest beside it."""
    with _atomic(out) as partial, partial.open("wb") as sink:
        writer = _HashingWriter(sink)
        with _tar_writer(writer) as tar:
            for path in _walk(root):
                _add_entry(tar, path, path.relative_to(root).as_posix(), mtime)
    layer = LayerFile(path=out, digest="sha256:" + writer.hash.hexdigest(), size=writer.size)
    _write_sidecar(layer)
    return layer


def layer_file(path: Path) -> LayerFile:
    """A layer tar with its digest: from the record beside it when that matches, else hashed."""
    size = path.stat().st_size
    with contextlib.suppress(OSError, ValueError, KeyError):
        recorded = json.loads(_sidecar(path).read_text())
        if recorded["size"] == size:
            return LayerFile(path=path, digest=str(recorded["digest"]), size=size)
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(COPY_BUFFER):
            digest.update(chunk)
    return LayerFile(path=path, digest="sha256:" + digest.hexdigest(), size=size)


def _walk(root: Path) -> Iterator[Path]:
    """Every entry under ``root``, parents before children, siblings by name; no symlinks
    followed."""
    for current, dirs, files in os.walk(root):
        dirs.sort()
        base = Path(current)
        for name in sorted([*dirs, *files]):
            yield base / name


def _add_entry(tar: tarfile.TarFile, path: Path, name: str, mtime: int | None) -> None:
    info = tar.gettarinfo(str(path), arcname=name)
    if info is None:  # sockets cannot be archived (and are never part of an image)
        return
    info.uname = info.gname = ""
    info.mtime = int(info.mtime) if mtime is None else mtime  # float times cost a pax header
    if info.isreg():
        with path.open("rb") as handle:
            tar.addfile(info, handle)
    else:
        tar.addfile(info)


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def _write_sidecar(layer: LayerFile) -> None:
    record = {"digest": layer.digest, "size": layer.size}
    _write_atomically(_sidecar(layer.path), json.dumps(record) + "\n")


def _write_atomically(path: Path, text: str) -> None:
    with _atomic(path) as partial:
        partial.write_text(text)


@contextlib.contextmanager
def _atomic(path: Path) -> Iterator[Path]:
    """A partial file to write; renamed to ``path`` if the block succeeds, else removed."""
    partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
    try:
        yield partial
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)


# --------------------------------------------------------------------------------------------
# The cache


def cache_home() -> Path:
    """The cache's folder, also where the builds' log files go."""
    return processes.cache_dir("node-images")


def cached_layer(
    kind: str, key: str, build: Callable[[Path], None], *, keep_times: bool = False
) -> LayerFile:
    """The layer ``<kind>-<key>.tar``; when missing, ``build(staging_dir)`` fills a folder
    under a lock, which is tarred (times set to :data:`EPOCH` unless ``keep_times``); older
    versions of ``kind`` beyond :data:`KEEP_VERSIONS` are pruned."""
    layers = processes.cache_dir("node-images", "layers")
    out = layers / f"{kind}-{key[:KEY_LENGTH]}.tar"
    if _sidecar(out).exists():
        return layer_file(out)
    if node_namespace.inside():
        raise processes.ServiceStartError(
            f"The {kind} image layer is out of date, and it cannot be built inside the test "
            "node's network namespace (no network there). Build the images first: "
            "`python -m tests.services.kube_node prepare` (`make e2e` and "
            "`make test` do)."
        )
    with processes.locked(layers / f"{kind}.lock"):
        if not _sidecar(out).exists():
            with timed(f"layer {kind}"), _workdir(kind) as staging:
                build(staging)
                write_layer(staging, out, mtime=None if keep_times else EPOCH)
            _prune(layers, kind, keep=out)
    return layer_file(out)


@contextlib.contextmanager
def _workdir(kind: str) -> Iterator[Path]:
    """A fresh staging folder under the cache (same file system, so uv hardlinks), removed
    afterwards; a leftover from a killed build of the same kind is removed first."""
    work = processes.cache_dir("node-images", "work")
    for stale in work.glob(f"{kind}.*"):
        shutil.rmtree(stale, ignore_errors=True)
    staging = work / f"{kind}.{os.getpid()}"
    staging.mkdir()
    try:
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _prune(folder: Path, kind: str, *, keep: Path) -> None:
    """Delete all but the newest :data:`KEEP_VERSIONS` tars of ``kind`` (and their records)."""
    versions = sorted(
        (path for path in folder.glob(f"{kind}-{'?' * KEY_LENGTH}.tar") if path != keep),
        key=lambda path: path.stat().st_mtime,
        reverse=True,
    )
    for old in versions[KEEP_VERSIONS - 1 :]:
        old.unlink(missing_ok=True)
        _sidecar(old).unlink(missing_ok=True)


def cached_archive(
    name: str, kind: str, layers: Sequence[LayerFile], config: ImageConfig
) -> ImageArchive:
    """The cached archive of ``layers`` + ``config``, named by its manifest digest."""
    manifest = manifest_document(config_document(config, layers), layers)
    folder = processes.cache_dir("node-images", "archives")
    out = folder / f"{kind}-{_sha256(manifest)[7 : 7 + KEY_LENGTH]}.tar"
    if not out.exists():
        with processes.locked(folder / f"{kind}.lock"):
            if not out.exists():
                with timed(f"archive {name}"):
                    paths = [layer.path for layer in layers]
                    write_oci_archive(name=name, layers=paths, config=config, out=out)
                _prune(folder, kind, keep=out)
    return ImageArchive(name=name, path=out, digest=_sha256(manifest))


def content_key(*parts: str | bytes) -> str:
    """A hex digest of ``parts`` and :data:`LAYER_FORMAT`."""
    digest = hashlib.sha256(str(LAYER_FORMAT).encode())
    for part in parts:
        digest.update(b"\0" + (part.encode() if isinstance(part, str) else part))
    return digest.hexdigest()


@contextlib.contextmanager
def timed(step: str) -> Iterator[None]:
    """Log how long the block took as ``<step>: <seconds>s``."""
    started = time.monotonic()
    yield
    log.info("%s: %.1fs", step, time.monotonic() - started)
