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
  :mod:`~tests.services.spark_operator` builds from its Go module.

The layers are made by :mod:`~tests.services.image_layers`; each is an uncompressed tar
that :mod:`~tests.services.oci_archive` caches under ``cache_dir("node-images")/layers``
with its digest beside it, named by a digest of everything that decides its content, and writes
into the archives:

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
                   ``image_layers.SOURCE_PATHS``) and
                   ``/usr/local/bin/cdcflow``
``spark-files``    entrypoint, ``sink_main.py``, the Kafka/Delta jars       their contents
``pause``          ``go build`` (static) of ``image_layers.PAUSE_SOURCE``   the source
=================  =======================================================  ===============

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

``python -m tests.services.node_images build`` builds everything and prints
each archive's name, path, size and build time (``import --address SOCKET`` imports too).
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from cdcflow.operator.devservices import processes
from tests.services import spark_operator
from tests.services.image_layers import (
    BASE_ROOTFS,
    BUILD_TIMEOUT,
    CDCFLOW_CACHE,
    GO_MOD,
    JAVA_HOME,
    JAVA_ROOTFS,
    PAUSE_FLAGS,
    PAUSE_SOURCE,
    SERVICE,
    SPARK_HOME,
    SPARK_WORK_DIR,
    app_layer,
    build_pause,
    deps_layer,
    rootfs_layer,
    source_digest,
    spark_layer,
)
from tests.services.oci_archive import (
    ImageArchive,
    ImageConfig,
    LayerFile,
    cache_home,
    cached_archive,
    cached_layer,
    content_key,
    thin_archive,
    timed,
)

PAUSE_IMAGE = "localhost/cdcflow-pause:1.0"
CDCFLOW_IMAGE = "ghcr.io/cdcflow/cdcflow:0.1.0"
SPARK_IMAGE = "ghcr.io/cdcflow/cdcflow-spark:0.1.0"
SPARK_OPERATOR_IMAGE = f"localhost/cdcflow-spark-operator:{spark_operator.VERSION}"

MODULE = "tests.services.node_images"
log = logging.getLogger(MODULE)
PATH_ENV = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
CTR_HINT = "ctr comes with containerd: `apt-get install containerd`."


# --------------------------------------------------------------------------------------------
# Image recipes


def pause_image() -> ImageArchive:
    """The pod sandbox image: ``/pause``, static, one layer."""
    key = content_key(PAUSE_SOURCE, GO_MOD, *PAUSE_FLAGS)
    layer = cached_layer("pause", key, build_pause)
    config = ImageConfig(entrypoint=("/pause",), user="65535:65535")
    return cached_archive(PAUSE_IMAGE, "pause", [layer], config)


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
    archive = cached_archive(CDCFLOW_IMAGE, "cdcflow", layers, config)
    log.info("%s ready in %.1fs", CDCFLOW_IMAGE, time.monotonic() - started)
    return archive


def spark_image(source: Path) -> ImageArchive:
    """The CdcSink image for the Spark operator's driver and executor pods."""
    started = time.monotonic()
    archive = cached_archive(SPARK_IMAGE, "spark", _spark_layers(source), _spark_config(source))
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

    layer = cached_layer("spark-operator", content_key(binary), add_binary)
    layers = [*_spark_layers(source), layer]
    archive = cached_archive(SPARK_OPERATOR_IMAGE, "spark-operator", layers, _spark_config(source))
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


# --------------------------------------------------------------------------------------------
# Importing into containerd


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
        with timed(f"import {archive.name}"):
            _import(ctr, archive, blobs)


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
    logfile = cache_home() / "import.log"
    processes.run_checked(command, service=SERVICE, log=logfile, timeout=BUILD_TIMEOUT)


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
# Command line: ``python -m tests.services.node_images build|import``


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
