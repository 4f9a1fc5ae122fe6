"""The container images a test Kubernetes node runs, built locally and cached, no registry.

No image registry is reachable from the project's machines and there is no Docker engine, so
the images of the e2e tests are assembled here from what is reachable (Debian's apt mirror,
PyPI through uv, the Go toolchain, the Maven jars sparkapps already caches) and written as OCI
image-layout archives, which ``ctr -n k8s.io images import`` loads into containerd:

* :data:`PAUSE_IMAGE` — the pod sandbox: a static Go program that waits for SIGTERM/SIGINT
  (and reaps orphans meanwhile), then exits 0.
* :data:`CDCFLOW_IMAGE` — what ``manifests/images/cdcflow.Dockerfile`` builds: Debian's
  python3 (3.11, like the Dockerfile's ``python:3.11-slim``), cdcflow with the ``capture`` and
  ``operator`` extras, ``ENTRYPOINT ["cdcflow"]``, user 1000.
* :data:`SPARK_IMAGE` — what ``manifests/images/spark.Dockerfile`` builds: Java 17, pyspark
  (``SPARK_HOME`` is the pip package's folder: ``bin/spark-submit``, ``jars/`` with
  spark-kubernetes), delta-spark, cdcflow, the Kafka-source and Delta jars in
  ``$SPARK_HOME/jars``, ``/opt/cdcflow/sink_main.py`` and an ``/opt/entrypoint.sh`` that
  runs the ``driver`` and ``executor`` commands the way Apache Spark's Kubernetes image does.
* :data:`SPARK_OPERATOR_IMAGE` — the Kubeflow Spark operator's controller: the Spark image's
  layers (its ``spark-submit`` launches the drivers) plus the controller binary that
  :mod:`~cdcflow.operator.devservices.spark_operator` builds from its Go module.

Layers, each an uncompressed tar cached under ``cache_dir("node-images")/layers`` with its
digest beside it, named by a digest of everything that decides its content:

=================  =======================================================  ===============
layer              made by                                                  keyed by
=================  =======================================================  ===============
``base``           ``debootstrap --variant=minbase`` of bookworm: python3,  the recipe
                   CA certificates, netbase, tzdata, user ``cdcflow`` 1000
``java``           the same plus openjdk-17-jre-headless, procps, tini,     the recipe
                   libnss-wrapper, user ``spark`` 185 (its own debootstrap)
``*-deps``         ``uv pip compile`` + ``uv pip install --target`` of the  pyproject.toml
                   extras' dependencies (not cdcflow) into dist-packages
``app``            cdcflow's wheel built from a copy of ``source`` (only    those files
                   :data:`SOURCE_PATHS`) and ``/usr/local/bin/cdcflow``
``spark-files``    entrypoint, ``sink_main.py``, the Kafka/Delta jars       their contents
``pause``          ``go build`` (static) of :data:`PAUSE_SOURCE`            the source
=================  =======================================================  ===============

Generated layers have fixed times and root owners, so equal inputs give byte-identical
layers (the pyspark layer too, although uv rebuilds pyspark's sdist every time). Debian's root
filesystems are slimmed (apt lists and caches, logs, manuals, translations and documentation
but copyright notices go; the build machine's hostname and resolv.conf are blanked); no
``__pycache__`` is shipped (Debian's precompiled stdlib excepted), no pip.

Measured on the 2-core project machine (Go, uv and apt mirror caches warm, the machine busy
with other tests): cold 1 min 54 s for all three (each debootstrap ~38 s, the Spark
dependencies 23 s, the rest seconds); warm 0.4 s; after a change to cdcflow's code 3-4 s (the
app layer 1-2 s, rewriting the two archives ~2 s). Archives: pause 1.4 MB, cdcflow 403 MB
(base 123 + deps 279 + app 1), Spark 851 MB (java 337 + deps 495 + files 18 + app 1).

Importing: :func:`import_images` runs ``ctr images import`` in namespace ``k8s.io``, which
unpacks for the default snapshotter (overlayfs) — necessary, since the kubelet's CRI never
unpacks a local image (``--no-unpack`` would leave pods failing to create). It skips an image
whose name already points at the same manifest digest, and streams only the blobs containerd
lacks (``ctr`` otherwise re-sends and re-hashes every blob): 19 s into an empty store, 0.3 s
after a code change, 0.04 s when nothing changed.

``python -m cdcflow.operator.devservices.node_images build`` builds everything and prints
each archive's name, path, size and build time (``import --address SOCKET`` imports too).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import hashlib
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import tarfile
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from cdcflow.operator.devservices import gobuild, node_namespace, processes, spark_operator

PAUSE_IMAGE = "localhost/cdcflow-pause:1.0"
CDCFLOW_IMAGE = "ghcr.io/cdcflow/cdcflow:0.1.0"
SPARK_IMAGE = "ghcr.io/cdcflow/cdcflow-spark:0.1.0"
SPARK_OPERATOR_IMAGE = f"localhost/cdcflow-spark-operator:{spark_operator.VERSION}"

MODULE = "cdcflow.operator.devservices.node_images"
log = logging.getLogger(MODULE)
SERVICE = "node images"
LAYER_FORMAT = 1  # bump to rebuild every cached layer
SUITE = "bookworm"
MIRROR = "http://deb.debian.org/debian"
PYTHON_VERSION = "3.11"
PYTHON_PLATFORM = "x86_64-manylinux_2_36"  # bookworm's glibc
TARGET = ("--python-version", PYTHON_VERSION, "--python-platform", PYTHON_PLATFORM)
SITE_PACKAGES = f"usr/local/lib/python{PYTHON_VERSION}/dist-packages"
SPARK_HOME = f"/{SITE_PACKAGES}/pyspark"
JAVA_HOME = "/usr/lib/jvm/java-17-openjdk-amd64"
SPARK_WORK_DIR = "/opt/spark/work-dir"
CDCFLOW_CACHE = "/opt/cdcflow"
SOURCE_PATHS = ("pyproject.toml", "README.md", "capture", "operator", "sparkapps")
IGNORED_NAMES = frozenset({"__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache"})
IGNORED_SUFFIXES = (".pyc", ".pyo", ".egg-info")
EPOCH = 0  # mtime of every generated entry, so equal inputs give equal layers
EPOCH_ISO = "1970-01-01T00:00:00Z"
PLATFORM = {"architecture": "amd64", "os": "linux"}
PATH_ENV = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KEY_LENGTH = 16  # hex digits of a cache key in a file name
KEEP_VERSIONS = 2  # cached layers and archives kept per kind (this build and the one before)
BUILD_TIMEOUT = 1800.0
COPY_BUFFER = 1 << 20
ROOT_HINT = "The node images are built with debootstrap and chroot, which need root."
CTR_HINT = "ctr comes with containerd: `apt-get install containerd`."
UV_HINT = "uv installs the images' Python packages: `pip install uv` (or `make setup`)."

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


@dataclass(frozen=True)
class User:
    """An account created in a root filesystem, with a group of the same name and id."""

    name: str
    uid: int
    home: str


@dataclass(frozen=True)
class RootfsRecipe:
    """What a debootstrapped base layer is made of."""

    kind: str
    packages: tuple[str, ...]
    users: tuple[User, ...]
    suite: str = SUITE
    mirror: str = MIRROR


BASE_PACKAGES = ("python3", "ca-certificates", "netbase", "tzdata")
BASE_ROOTFS = RootfsRecipe(
    kind="base", packages=BASE_PACKAGES, users=(User("cdcflow", 1000, "/home/cdcflow"),)
)
JAVA_ROOTFS = RootfsRecipe(
    kind="java",
    packages=(*BASE_PACKAGES, "openjdk-17-jre-headless", "procps", "tini", "libnss-wrapper"),
    users=(User("spark", 185, SPARK_WORK_DIR),),
)

# Removed from a fresh debootstrap (globs relative to its root); KEPT survives the globs.
SLIM_GLOBS = (
    "var/lib/apt/lists/*",
    "var/cache/apt/*.bin",
    "var/cache/apt/archives/*.deb",
    "var/cache/debconf/*-old",
    "var/lib/dpkg/*-old",
    "usr/share/man/*",
    "usr/share/info/*",
    "usr/share/lintian/*",
    "usr/share/locale/*",
    "dev/*",
    "tmp/*",
    "var/tmp/*",
)
KEPT = frozenset({"var/lib/apt/lists/partial", "usr/share/locale/locale.alias"})
EMPTIED = ("etc/hostname", "etc/resolv.conf")  # debootstrap copies the build machine's


# --------------------------------------------------------------------------------------------
# Public entry points


def pause_image() -> ImageArchive:
    """The pod sandbox image: ``/pause``, static, one layer."""
    key = _digest(PAUSE_SOURCE, GO_MOD, *PAUSE_FLAGS)
    layer = _cached_layer("pause", key, _build_pause)
    config = ImageConfig(entrypoint=("/pause",), user="65535:65535")
    return _archive(PAUSE_IMAGE, "pause", [layer], config)


def cdcflow_image(source: Path) -> ImageArchive:
    """The capture/operator image, from the checkout at ``source``."""
    started = time.monotonic()
    layers = [
        rootfs_layer(BASE_ROOTFS),
        deps_layer(source, ("capture", "operator")),
        app_layer(source),
    ]
    config = ImageConfig(
        entrypoint=("cdcflow",),
        cmd=("--help",),
        env={
            "PATH": PATH_ENV,
            "HOME": "/home/cdcflow",
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        },
        user="1000",
        labels={"io.cdcflow.source-digest": source_digest(source)},
    )
    archive = _archive(CDCFLOW_IMAGE, "cdcflow", layers, config)
    log.info("%s ready in %.1fs", CDCFLOW_IMAGE, time.monotonic() - started)
    return archive


def spark_image(source: Path) -> ImageArchive:
    """The CdcSink image for the Spark operator's driver and executor pods."""
    started = time.monotonic()
    archive = _archive(SPARK_IMAGE, "spark", _spark_layers(source), _spark_config(source))
    log.info("%s ready in %.1fs", SPARK_IMAGE, time.monotonic() - started)
    return archive


def spark_operator_image(source: Path) -> ImageArchive:
    """The Kubeflow Spark operator's controller: the Spark image (its ``spark-submit``
    launches the drivers) plus the controller binary built from its Go module."""
    started = time.monotonic()
    build = spark_operator.build_spark_operator()
    binary = build.binary.read_bytes()

    def add_binary(out: Path) -> None:
        target = out / spark_operator.CONTROLLER_PATH.lstrip("/")
        target.parent.mkdir(parents=True)
        target.write_bytes(binary)
        target.chmod(0o755)

    layer = _cached_layer("spark-operator", _digest(binary), add_binary)
    layers = [*_spark_layers(source), layer]
    archive = _archive(SPARK_OPERATOR_IMAGE, "spark-operator", layers, _spark_config(source))
    log.info("%s ready in %.1fs", SPARK_OPERATOR_IMAGE, time.monotonic() - started)
    return archive


def _spark_layers(source: Path) -> list[LayerFile]:
    return [
        rootfs_layer(JAVA_ROOTFS),
        deps_layer(source, ("spark",)),
        spark_layer(),
        app_layer(source),  # last of the shared ones: the layer a code change replaces
    ]


def _spark_config(source: Path) -> ImageConfig:
    return ImageConfig(
        entrypoint=("/opt/entrypoint.sh",),
        env={
            "PATH": PATH_ENV,
            "HOME": SPARK_WORK_DIR,
            "LANG": "C.UTF-8",
            "JAVA_HOME": JAVA_HOME,
            "SPARK_HOME": SPARK_HOME,
            "PYSPARK_PYTHON": "/usr/bin/python3",
            "CDCFLOW_CACHE": CDCFLOW_CACHE,
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        },
        working_dir=SPARK_WORK_DIR,
        user="185",
        labels={"io.cdcflow.source-digest": source_digest(source)},
    )


def all_images(source: Path) -> list[ImageArchive]:
    """Every image the test node runs: pause, cdcflow, Spark and the Spark operator."""
    return [
        pause_image(),
        cdcflow_image(source),
        spark_image(source),
        spark_operator_image(source),
    ]


def import_images(archives: Sequence[ImageArchive], *, address: Path) -> None:
    """Import into containerd at ``address``, in the kubelet's namespace ``k8s.io``, and
    unpack for its default snapshotter (overlayfs) every archive whose name does not already
    point at the same manifest there. Blobs containerd already holds are left out of what is
    streamed to it (``ctr`` would send and hash them again), so after a code change only the
    new layer travels; if such a thin import fails, the whole archive is imported."""
    ctr = [processes.require_binary("ctr", hint=CTR_HINT), "--address", str(address)]
    ctr += ["-n", "k8s.io"]
    present = _present_images(ctr)
    blobs = set(_ctr_lines(ctr, "content", "list", "--quiet"))
    wanted = {(archive.name, archive.digest): archive for archive in archives}
    for archive in wanted.values():
        if present.get(archive.name) == archive.digest:
            log.info("%s already in containerd (%s)", archive.name, archive.digest[:19])
            continue
        with _timed(f"import {archive.name}"):
            _import(ctr, archive, blobs)


def thin_archive(archive: Path, out: Path, *, present: set[str]) -> None:
    """Copy the OCI archive ``archive`` to ``out`` without the blobs in ``present``."""
    with tarfile.open(archive) as source, _tar_writer(out) as thin:
        for member in source:
            digest = "sha256:" + member.name.rpartition("/")[2]
            if member.name.startswith("blobs/") and digest in present:
                continue
            thin.addfile(member, source.extractfile(member) if member.isreg() else None)


def _import(ctr: Sequence[str], archive: ImageArchive, blobs: set[str]) -> None:
    """Import the archive without the blobs containerd holds; whole if none or on failure."""
    if not blobs & set(_archive_blobs(archive.path)):
        _ctr_import(ctr, archive.path)
        return
    thin = archive.path.with_name(f"{archive.path.stem}.{os.getpid()}.import")
    try:
        thin_archive(archive.path, thin, present=blobs)
        _ctr_import(ctr, thin)
        return
    except processes.ServiceStartError as error:
        log.warning("thin import of %s failed, importing it whole: %s", archive.name, error)
    finally:
        thin.unlink(missing_ok=True)
    _ctr_import(ctr, archive.path)


def _archive_blobs(archive: Path) -> list[str]:
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    return ["sha256:" + name.rpartition("/")[2] for name in names if name.startswith("blobs/")]


def _ctr_import(ctr: Sequence[str], archive: Path) -> None:
    command = [*ctr, "images", "import", str(archive)]
    logfile = _home() / "import.log"
    processes.run_checked(command, service=SERVICE, log=logfile, timeout=BUILD_TIMEOUT)


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
            {"created": EPOCH_ISO, "created_by": f"{MODULE}: {layer.path.name}"} for layer in layers
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


def _home() -> Path:
    return processes.cache_dir("node-images")


def _cached_layer(
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
            "`python -m cdcflow.operator.devservices.kube_node prepare` (`make e2e` and "
            "`make test` do)."
        )
    with processes.locked(layers / f"{kind}.lock"):
        if not _sidecar(out).exists():
            with _timed(f"layer {kind}"), _workdir(kind) as staging:
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


def _archive(
    name: str, kind: str, layers: Sequence[LayerFile], config: ImageConfig
) -> ImageArchive:
    """The cached archive of ``layers`` + ``config``, named by its manifest digest."""
    manifest = manifest_document(config_document(config, layers), layers)
    folder = processes.cache_dir("node-images", "archives")
    out = folder / f"{kind}-{_sha256(manifest)[7 : 7 + KEY_LENGTH]}.tar"
    if not out.exists():
        with processes.locked(folder / f"{kind}.lock"):
            if not out.exists():
                with _timed(f"archive {name}"):
                    paths = [layer.path for layer in layers]
                    write_oci_archive(name=name, layers=paths, config=config, out=out)
                _prune(folder, kind, keep=out)
    return ImageArchive(name=name, path=out, digest=_sha256(manifest))


def _digest(*parts: str | bytes) -> str:
    """A hex digest of ``parts`` and :data:`LAYER_FORMAT`."""
    digest = hashlib.sha256(str(LAYER_FORMAT).encode())
    for part in parts:
        digest.update(b"\0" + (part.encode() if isinstance(part, str) else part))
    return digest.hexdigest()


@contextlib.contextmanager
def _timed(step: str) -> Iterator[None]:
    started = time.monotonic()
    yield
    log.info("%s: %.1fs", step, time.monotonic() - started)


# --------------------------------------------------------------------------------------------
# Debian root filesystems


def rootfs_key(recipe: RootfsRecipe) -> str:
    """The cache key of a debootstrapped layer: the recipe and how it is slimmed."""
    return _digest(json_bytes(asdict(recipe)), json_bytes([SLIM_GLOBS, sorted(KEPT), EMPTIED]))


def rootfs_layer(recipe: RootfsRecipe) -> LayerFile:
    """The debootstrapped, slimmed root filesystem of ``recipe`` with its users."""
    build = functools.partial(_debootstrap, recipe)
    return _cached_layer(recipe.kind, rootfs_key(recipe), build, keep_times=True)


def _debootstrap(recipe: RootfsRecipe, root: Path) -> None:
    """debootstrap ``recipe`` into the empty folder ``root``, add its users, slim it."""
    if os.geteuid() != 0:
        raise processes.ServiceStartError(f"{SERVICE}: {ROOT_HINT}")
    if processes.find_binary("debootstrap") is None:
        processes.apt_install(["debootstrap"], service=SERVICE, log=_home() / "apt.log")
    debootstrap = processes.require_binary("debootstrap", hint="`apt-get install debootstrap`.")
    debs = processes.cache_dir("node-images", "debs")
    logfile = _home() / f"{recipe.kind}.log"
    # A private mount namespace: the /proc and /sys debootstrap mounts die with it, always.
    command = ["unshare", "--mount", "--propagation", "private", debootstrap]
    command += ["--variant=minbase", f"--include={','.join(recipe.packages)}"]
    command += [f"--cache-dir={debs}", recipe.suite, str(root), recipe.mirror]
    with _timed(f"debootstrap {recipe.kind}"):
        processes.run_checked(command, service=SERVICE, log=logfile, timeout=BUILD_TIMEOUT)
    for user in recipe.users:
        _add_user(root, user, logfile)
    slim(root)


def _add_user(root: Path, user: User, logfile: Path) -> None:
    (root / user.home.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
    for command in (
        ["groupadd", "--gid", str(user.uid), user.name],
        ["useradd", "--uid", str(user.uid), "--gid", str(user.uid), "--home-dir", user.home,
         "--create-home", "--shell", "/bin/bash", user.name],
    ):  # fmt: skip
        processes.run_checked(["chroot", str(root), *command], service=SERVICE, log=logfile)


def slim(root: Path) -> None:
    """Drop what a container never reads: apt's lists and caches, logs, documentation but
    copyright notices, manuals, translations, device nodes; blank the build machine's names."""
    for pattern in SLIM_GLOBS:
        for path in root.glob(pattern):
            if path.relative_to(root).as_posix() not in KEPT:
                _remove(path)
    for path in list((root / "var/log").rglob("*")):
        if not path.is_dir() or path.is_symlink():
            path.unlink()
    for package in (root / "usr/share/doc").iterdir():
        if package.is_dir() and not package.is_symlink():
            for item in package.iterdir():
                if item.name != "copyright":
                    _remove(item)
    for name in EMPTIED:
        (root / name).unlink(missing_ok=True)
        (root / name).touch(mode=0o644)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


# --------------------------------------------------------------------------------------------
# Python layers


def source_digest(source: Path) -> str:
    """A digest of what cdcflow's wheel is built from: names and contents of the files under
    :data:`SOURCE_PATHS`, caches left out."""
    digest = hashlib.sha256()
    for path in _source_files(source):
        digest.update(path.relative_to(source).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def deps_key(source: Path, extras: Sequence[str]) -> str:
    """The cache key of a dependency layer: pyproject.toml, the extras and the target."""
    pyproject = (source / "pyproject.toml").read_bytes()
    return _digest(pyproject, ",".join(sorted(extras)), PYTHON_VERSION, PYTHON_PLATFORM)


def deps_layer(source: Path, extras: Sequence[str]) -> LayerFile:
    """cdcflow's dependencies with ``extras`` (not cdcflow itself) in the image's
    ``dist-packages``, resolved for CPython 3.11 on manylinux x86_64."""
    kind = "-".join(sorted(extras)) + "-deps"

    def build(staging: Path) -> None:
        requirements = staging.parent / f"{staging.name}-requirements.txt"
        try:
            _uv("pip", "compile", str(source / "pyproject.toml"), *_extras(extras), *TARGET,
                "--no-header", "--no-annotate", "-o", str(requirements))  # fmt: skip
            _uv_install(staging, "-r", str(requirements))
        finally:
            requirements.unlink(missing_ok=True)

    return _cached_layer(kind, deps_key(source, extras), build)


def app_layer(source: Path) -> LayerFile:
    """cdcflow itself, built as a wheel from a copy of ``source``, and its launchers."""
    return _cached_layer("app", _digest(source_digest(source)), lambda out: _app(source, out))


def launcher(entry_point: str) -> str:
    """A console script for ``module:function`` run by Debian's python3."""
    module, _, function = entry_point.partition(":")
    return (
        "#!/usr/bin/python3\n"
        "import sys\n"
        f"from {module} import {function}\n"
        "if __name__ == '__main__':\n"
        f"    sys.exit({function}())\n"
    )


def _app(source: Path, out: Path) -> None:
    build = out.parent / f"{out.name}-build"
    try:
        for name in SOURCE_PATHS:
            _copy(source / name, build / "src" / name)
        _uv("build", "--wheel", "--out-dir", str(build / "dist"), str(build / "src"))
        _uv_install(out, "--no-deps", *map(str, (build / "dist").glob("*.whl")))
    finally:
        shutil.rmtree(build, ignore_errors=True)
    for info in (out / SITE_PACKAGES).glob("*.dist-info"):
        for name in ("direct_url.json", "uv_cache.json", "uv_build.json"):
            (info / name).unlink(missing_ok=True)
    scripts = tomllib.loads((source / "pyproject.toml").read_text())["project"]["scripts"]
    bin_dir = out / "usr/local/bin"
    bin_dir.mkdir(parents=True)
    for name, entry_point in scripts.items():
        (bin_dir / name).write_text(launcher(entry_point))
        (bin_dir / name).chmod(0o755)


def _uv_install(root: Path, *args: str) -> None:
    """``uv pip install --target`` into the image's dist-packages; scripts and data dropped."""
    target = root / SITE_PACKAGES
    _uv("pip", "install", "--target", str(target), *TARGET, "--link-mode", "hardlink", *args)
    for leftover in ("bin", "share", ".lock"):
        with contextlib.suppress(FileNotFoundError):
            _remove(target / leftover)


def _uv(*args: str) -> None:
    beside = Path(sys.executable).with_name("uv")
    uv = str(beside) if beside.exists() else processes.require_binary("uv", hint=UV_HINT)
    command = [uv, *args, "--quiet", "--python", sys.executable]
    processes.run_checked(command, service=SERVICE, log=_home() / "uv.log", timeout=BUILD_TIMEOUT)


def _extras(extras: Sequence[str]) -> list[str]:
    return [flag for extra in extras for flag in ("--extra", extra)]


def _source_files(source: Path) -> list[Path]:
    files: list[Path] = []
    for name in SOURCE_PATHS:
        path = source / name
        found = [path] if path.is_file() else path.rglob("*")
        files += [item for item in found if item.is_file() and not _ignored(item, source)]
    return sorted(files)


def _ignored(path: Path, source: Path) -> bool:
    parts = path.relative_to(source).parts
    return any(part in IGNORED_NAMES or part.endswith(IGNORED_SUFFIXES) for part in parts)


def _copy(path: Path, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file():
        shutil.copy2(path, out)
        return
    ignore = shutil.ignore_patterns(*IGNORED_NAMES, *(f"*{suffix}" for suffix in IGNORED_SUFFIXES))
    shutil.copytree(path, out, ignore=ignore)


# --------------------------------------------------------------------------------------------
# The Spark layer and the pause program

SINK_MAIN = "import sys\nfrom cdcflow.sparkapps.sink import main\nsys.exit(main())\n"

ENTRYPOINT = r"""#!/bin/bash
# cdcflow-spark's entrypoint: the `driver` and `executor` commands of Apache Spark's
# Kubernetes image (spark-docker's entrypoint.sh for Spark 4.0), any other command as is.
set -eo pipefail

# An unknown uid (OpenShift-style) gets a passwd entry through nss_wrapper: Hadoop's login
# fails without one.
passwd_entry() {
  getent passwd "$(id -u)" > /dev/null 2>&1 && return
  local wrapper
  for wrapper in {/usr,}/lib{/*,}/libnss_wrapper.so; do
    if [ -s "$wrapper" ]; then
      NSS_WRAPPER_PASSWD="$(mktemp)"
      NSS_WRAPPER_GROUP="$(mktemp)"
      export LD_PRELOAD="$wrapper" NSS_WRAPPER_PASSWD NSS_WRAPPER_GROUP
      echo "spark:x:$(id -u):$(id -g):${SPARK_USER_NAME:-anonymous uid}:$SPARK_HOME:/bin/false" \
        > "$NSS_WRAPPER_PASSWD"
      echo "spark:x:$(id -g):" > "$NSS_WRAPPER_GROUP"
      return
    fi
  done
}

# As root, drop to the spark user first (the upstream image uses gosu for this).
as_spark() {
  if [ "$(id -u)" -eq 0 ]; then
    echo setpriv --reuid=spark --regid=spark --init-groups --
  fi
}

classpath="${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}$SPARK_HOME/jars/*"
if [ -n "${SPARK_EXTRA_CLASSPATH:-}" ]; then
  classpath="$classpath:$SPARK_EXTRA_CLASSPATH"
fi
if [ -n "${HADOOP_HOME:-}" ] && [ -z "${SPARK_DIST_CLASSPATH:-}" ]; then
  export SPARK_DIST_CLASSPATH="$("$HADOOP_HOME/bin/hadoop" classpath)"
fi
if [ -n "${HADOOP_CONF_DIR+x}" ]; then
  classpath="$HADOOP_CONF_DIR:$classpath"
fi
classpath="${SPARK_CONF_DIR:-$SPARK_HOME/conf}:$classpath:$PWD"

# SPARK_JAVA_OPT_0, _1, ... in numeric order.
java_opts=()
for name in $(compgen -v SPARK_JAVA_OPT_ | sort -t_ -k4 -n); do
  java_opts+=("${!name}")
done

case "${1:-}" in
  driver)
    shift
    passwd_entry
    exec $(as_spark) /usr/bin/tini -s -- "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=$SPARK_DRIVER_BIND_ADDRESS" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=$SPARK_DRIVER_BIND_ADDRESS" \
      --deploy-mode client \
      "$@"
    ;;
  executor)
    shift
    passwd_entry
    exec $(as_spark) /usr/bin/tini -s -- "$JAVA_HOME/bin/java" \
      "${java_opts[@]}" \
      -Xms"$SPARK_EXECUTOR_MEMORY" \
      -Xmx"$SPARK_EXECUTOR_MEMORY" \
      -cp "$classpath${SPARK_DIST_CLASSPATH:+:$SPARK_DIST_CLASSPATH}" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "$SPARK_DRIVER_URL" \
      --executor-id "$SPARK_EXECUTOR_ID" \
      --cores "$SPARK_EXECUTOR_CORES" \
      --app-id "$SPARK_APPLICATION_ID" \
      --hostname "$SPARK_EXECUTOR_POD_IP" \
      --resourceProfileId "$SPARK_RESOURCE_PROFILE_ID" \
      --podName "$SPARK_EXECUTOR_POD_NAME"
    ;;
  *)
    passwd_entry
    exec "$@"
    ;;
esac
"""

PAUSE_SOURCE = """\
// The pod sandbox: holds the pod's namespaces, reaps orphans, exits 0 on SIGTERM or SIGINT.
package main

import (
\t"os"
\t"os/signal"
\t"syscall"
)

func main() {
\tsignals := make(chan os.Signal, 8)
\tsignal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
\tfor received := range signals {
\t\tif received != syscall.SIGCHLD {
\t\t\tos.Exit(0)
\t\t}
\t\tfor {
\t\t\tpid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
\t\t\tif pid <= 0 || err != nil {
\t\t\t\tbreak
\t\t\t}
\t\t}
\t}
}
"""
GO_MOD = "module cdcflow.dev/pause\n\ngo 1.21\n"
PAUSE_FLAGS = ("-trimpath", "-buildvcs=false", "-ldflags=-s -w")


def spark_layer() -> LayerFile:
    """The entrypoint, ``sink_main.py`` and the Kafka-source and Delta jars: in
    ``$SPARK_HOME/jars`` for spark-submit, and as sparkapps' jar cache under
    ``$CDCFLOW_CACHE`` (hardlinks) for local-mode sessions."""
    from cdcflow.sparkapps import session  # pyspark: imported only when this image is built

    jars = session.ensure_jars()
    key = _digest(ENTRYPOINT, SINK_MAIN, session.jars_key(), *(jar.read_bytes() for jar in jars))
    return _cached_layer("spark-files", key, lambda out: _spark(out, jars, session.jars_key()))


def _spark(out: Path, jars: Sequence[Path], jars_key: str) -> None:
    spark_jars = out / SPARK_HOME.lstrip("/") / "jars"
    cache = out / CDCFLOW_CACHE.lstrip("/")
    cached = cache / "spark" / "jars" / jars_key
    for folder in (spark_jars, cached):
        folder.mkdir(parents=True)
    for jar in jars:
        shutil.copyfile(jar, spark_jars / jar.name)
        (cached / jar.name).hardlink_to(spark_jars / jar.name)
    (cached / "MANIFEST").write_text("".join(f"{jar.name}\n" for jar in jars))
    (cache / "sink_main.py").write_text(SINK_MAIN)
    (out / "opt/entrypoint.sh").write_text(ENTRYPOINT)
    (out / "opt/entrypoint.sh").chmod(0o755)
    for path in [out, *(p for p in out.rglob("*") if p.is_dir())]:
        path.chmod(0o755)
    for folder in (cache, cache / "spark"):  # sparkapps' lock and log settings go here
        os.chown(folder, JAVA_ROOTFS.users[0].uid, JAVA_ROOTFS.users[0].uid)


def _build_pause(out: Path) -> None:
    src = out.parent / f"{out.name}-src"
    src.mkdir()
    try:
        (src / "main.go").write_text(PAUSE_SOURCE)
        (src / "go.mod").write_text(GO_MOD)
        go = gobuild.Go(SERVICE, _home() / "pause.log", gobuild.go_binary(), gobuild.go_env())
        go.run("-C", str(src), "build", *PAUSE_FLAGS, "-o", str(out / "pause"), ".")
    finally:
        shutil.rmtree(src, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# containerd


def _present_images(ctr: Sequence[str]) -> dict[str, str]:
    """Image name → manifest digest of what containerd already holds."""
    rows = (line.split() for line in _ctr_lines(ctr, "images", "list")[1:])
    return {row[0]: row[2] for row in rows if len(row) >= 3}


def _ctr_lines(ctr: Sequence[str], *args: str) -> list[str]:
    command = [*ctr, *args]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    if result.returncode != 0:
        raise processes.ServiceStartError(
            f"{SERVICE}: `{' '.join(command)}` failed: {result.stderr.strip()}"
        )
    return result.stdout.splitlines()


# --------------------------------------------------------------------------------------------
# Command line: ``python -m cdcflow.operator.devservices.node_images build|import``


def main(argv: Sequence[str]) -> int:
    """``build`` writes every archive; ``import --address SOCKET`` also imports them."""
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}")
    parser.add_argument("command", choices=("build", "import"))
    parser.add_argument("--source", type=Path, default=Path.cwd(), help="cdcflow checkout")
    parser.add_argument("--address", type=Path, help="containerd socket (for import)")
    args = parser.parse_args(argv)
    if args.command == "import" and args.address is None:
        parser.error("import needs --address")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", stream=sys.stderr)
    builders: list[Callable[[], ImageArchive]] = [
        pause_image,
        lambda: cdcflow_image(args.source),
        lambda: spark_image(args.source),
    ]
    archives = []
    for builder in builders:
        started = time.monotonic()
        archive = builder()
        size = archive.path.stat().st_size / 1e6
        print(f"{archive.name}  {archive.path}  {size:.0f} MB  {time.monotonic() - started:.1f}s")
        archives.append(archive)
    if args.command == "import":
        import_images(archives, address=args.address)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
