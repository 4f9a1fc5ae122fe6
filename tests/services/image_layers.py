"""The layers of the node images: Debian root filesystems, Python packages, Spark files, pause.

* :func:`rootfs_layer`: ``debootstrap --variant=minbase`` of :data:`SUITE` with a recipe's
  packages and users (:data:`BASE_ROOTFS`: python3, CA certificates, netbase, tzdata, user
  ``cdcflow`` 1000; :data:`JAVA_ROOTFS`: the same plus openjdk-17-jre-headless, procps, tini,
  libnss-wrapper, user ``spark`` 185), as root in a private mount namespace, then slimmed
  (:func:`slim`): apt lists and caches, logs, manuals, translations and documentation but
  copyright notices go; the build machine's hostname and resolv.conf are blanked. Keyed by
  the recipe and the slimming rules (:func:`rootfs_key`).
* :func:`deps_layer`: ``uv pip compile`` + ``uv pip install --target`` of the extras'
  dependencies (not cdcflow) into dist-packages, for CPython 3.11 on manylinux x86_64; keyed
  by pyproject.toml, the extras and the target (:func:`deps_key`).
* :func:`app_layer`: cdcflow's wheel, built with ``uv build`` from a copy of the checkout's
  :data:`SOURCE_PATHS`, its hot path compiled (:mod:`cdcflow.capture.native`) and its
  launchers in ``/usr/local/bin``; keyed by those files (:func:`source_digest`).
* :func:`spark_layer`: ``/opt/entrypoint.sh`` (:data:`ENTRYPOINT`), ``sink_main.py`` and the
  Kafka-source and Delta jars; keyed by their contents.
* :func:`build_pause`: ``go build`` (static) of :data:`PAUSE_SOURCE`; keyed by the source.

Generated layers have fixed times and root owners, so equal inputs give byte-identical layers
(the pyspark layer too, although uv rebuilds pyspark's sdist every time). No ``__pycache__``
is shipped (Debian's precompiled stdlib excepted), no pip.

Measured on the 2-core project machine (Go, uv and apt mirror caches warm): each debootstrap
~38 s, the Spark dependencies 23 s, the app layer 1-2 s.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from cdcflow.capture import native
from cdcflow.operator.devservices import processes
from tests.services import gobuild
from tests.services.oci_archive import (
    LayerFile,
    cache_home,
    cached_layer,
    content_key,
    json_bytes,
    timed,
)

SERVICE = "node images"
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
BUILD_TIMEOUT = 1800.0
ROOT_HINT = "The node images are built with debootstrap and chroot, which need root."
log = logging.getLogger(__name__)
UV_HINT = "uv installs the images' Python packages: `pip install uv` (or `make setup`)."


# --------------------------------------------------------------------------------------------
# Values


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
# Debian root filesystems


def rootfs_key(recipe: RootfsRecipe) -> str:
    """The cache key of a debootstrapped layer: the recipe and how it is slimmed."""
    return content_key(json_bytes(asdict(recipe)), json_bytes([SLIM_GLOBS, sorted(KEPT), EMPTIED]))


def rootfs_layer(recipe: RootfsRecipe) -> LayerFile:
    """The debootstrapped, slimmed root filesystem of ``recipe`` with its users."""
    build = functools.partial(_debootstrap, recipe)
    return cached_layer(recipe.kind, rootfs_key(recipe), build, keep_times=True)


def _debootstrap(recipe: RootfsRecipe, root: Path) -> None:
    """debootstrap ``recipe`` into the empty folder ``root``, add its users, slim it."""
    if os.geteuid() != 0:
        raise processes.ServiceStartError(f"{SERVICE}: {ROOT_HINT}")
    if processes.find_binary("debootstrap") is None:
        processes.apt_install(["debootstrap"], service=SERVICE, log=cache_home() / "apt.log")
    debootstrap = processes.require_binary("debootstrap", hint="`apt-get install debootstrap`.")
    debs = processes.cache_dir("node-images", "debs")
    logfile = cache_home() / f"{recipe.kind}.log"
    # A private mount namespace: the /proc and /sys debootstrap mounts die with it, always.
    command = ["unshare", "--mount", "--propagation", "private", debootstrap]
    command += ["--variant=minbase", f"--include={','.join(recipe.packages)}"]
    command += [f"--cache-dir={debs}", recipe.suite, str(root), recipe.mirror]
    with timed(f"debootstrap {recipe.kind}"):
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
    return content_key(pyproject, ",".join(sorted(extras)), PYTHON_VERSION, PYTHON_PLATFORM)


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
            _prune_uv_cache()

    return cached_layer(kind, deps_key(source, extras), build)


def app_layer(source: Path) -> LayerFile:
    """cdcflow itself, built as a wheel from a copy of ``source``, and its launchers."""
    return cached_layer("app", content_key(source_digest(source)), lambda out: _app(source, out))


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
        _compile_hot_path(out / SITE_PACKAGES)
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


def _compile_hot_path(site_packages: Path) -> None:
    """Pods run the capture's hot path compiled, as ``make setup`` builds it here (the same
    cache; the image's Python is bookworm's 3.11, the extensions' ABI); plain Python where
    this machine cannot compile."""
    try:
        native.build(site_packages)
    except (RuntimeError, OSError) as error:
        log.warning("the image's hot path stays plain Python: %s", error)


def _uv_install(root: Path, *args: str) -> None:
    """``uv pip install --target`` into the image's dist-packages; scripts and data dropped."""
    target = root / SITE_PACKAGES
    _uv("pip", "install", "--target", str(target), *TARGET, "--link-mode", "hardlink", *args)
    for leftover in ("bin", "share", ".lock"):
        with contextlib.suppress(FileNotFoundError):
            _remove(target / leftover)


def _uv_binary() -> str:
    beside = Path(sys.executable).with_name("uv")
    return str(beside) if beside.exists() else processes.require_binary("uv", hint=UV_HINT)


def _prune_uv_cache() -> None:
    """Drop the pyspark sdist build uv keeps after each install (0.5-1.3 GB); best effort and
    offline (image builds also run inside the node's network namespace)."""
    command = [_uv_binary(), "cache", "prune", "--quiet", "--offline"]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        log.warning("uv cache prune failed (the cache keeps growing): %s", result.stderr.strip())


def _uv(*args: str) -> None:
    command = [_uv_binary(), *args, "--quiet", "--python", sys.executable]
    processes.run_checked(
        command, service=SERVICE, log=cache_home() / "uv.log", timeout=BUILD_TIMEOUT
    )


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
    key = content_key(
        ENTRYPOINT, SINK_MAIN, session.jars_key(), *(jar.read_bytes() for jar in jars)
    )
    return cached_layer("spark-files", key, lambda out: _spark(out, jars, session.jars_key()))


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


def build_pause(out: Path) -> None:
    src = out.parent / f"{out.name}-src"
    src.mkdir()
    try:
        (src / "main.go").write_text(PAUSE_SOURCE)
        (src / "go.mod").write_text(GO_MOD)
        go = gobuild.Go(SERVICE, cache_home() / "pause.log", gobuild.go_binary(), gobuild.go_env())
        go.run("-C", str(src), "build", *PAUSE_FLAGS, "-o", str(out / "pause"), ".")
    finally:
        shutil.rmtree(src, ignore_errors=True)
