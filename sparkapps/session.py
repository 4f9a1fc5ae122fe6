"""Local-mode SparkSessions with the Kafka source and Delta Lake, jars fetched from Maven once.

pip's ``pyspark`` ships Spark itself but neither the Kafka source (``spark-sql-kafka-0-10``) nor
Delta Lake's JVM half (``delta-spark``). :func:`build_session` puts both on the driver's
classpath and turns on Delta's SQL extension and catalog, with settings sized for tests and
local runs on a small machine: two shuffle partitions, no web UI, loopback only, quiet logs.

How the jars are cached
-----------------------
The packages in :data:`PACKAGES` are resolved **once** with Spark's own resolver (Apache Ivy,
the machinery behind ``spark.jars.packages``), in a short-lived Spark JVM started only for
that (:func:`ensure_jars`). Ivy's home (``spark.jars.ivy``) and a settings file that names
Maven Central as the only repository live under the cdcflow cache, ``$CDCFLOW_CACHE`` or
``~/.cache/cdcflow``, in ``spark/``. The resolved jars are then copied to a plain folder,
``spark/jars/<key>/``, whose ``MANIFEST`` (written last) lists them; ``<key>`` is a digest of
the coordinates and the repository, so changing either resolves again.

Every session, the first one included, is then built from that folder with ``spark.jars``,
never with ``spark.jars.packages``. This was chosen over reusing the Ivy cache through
``spark.jars.packages`` on every start because:

* a warm start touches no network and runs no Ivy resolve, so it works offline and does not
  pay Ivy's resolve time (and its console noise) on every session;
* the first session and every later one are configured identically;
* the jars that Spark already ships in the same version (Hadoop's client, lz4, snappy, ...)
  are left out, so no class is on the classpath twice.

Delta's ``configure_spark_with_delta_pip`` is deliberately not used: it only adds
``spark.jars.packages``, i.e. an Ivy resolve at every start.

Versions
--------
``pyspark`` and ``delta-spark`` are pinned in ``pyproject.toml``; :data:`SPARK_VERSION` and
:data:`DELTA_VERSION` must match them (checked at build time). The Kafka source is pinned to
:data:`SPARK_KAFKA_VERSION`, 4.0.0 rather than 4.0.1: the Maven Central reached from this
project's machines lacks ``spark-token-provider-kafka-0-10_2.13:4.0.1``, a required dependency
of ``spark-sql-kafka-0-10_2.13:4.0.1``, so that resolve fails. 4.0.0 is a patch release
apart and binary compatible within Spark 4.0, the same footing Delta 4.0.0 is on.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, cast

from pyspark import SparkConf
from pyspark.sql import SparkSession

SPARK_VERSION = "4.0.1"
"""The ``pyspark`` this module is built for (the Spark runtime and its jars)."""
DELTA_VERSION = "4.0.0"
"""The ``delta-spark`` this module is built for; its JVM jar must be the same version."""
SPARK_KAFKA_VERSION = "4.0.0"
"""The Kafka source's version; see the module docstring for why it is not 4.0.1."""
SCALA_BINARY_VERSION = "2.13"

SPARK_KAFKA_PACKAGE = (
    f"org.apache.spark:spark-sql-kafka-0-10_{SCALA_BINARY_VERSION}:{SPARK_KAFKA_VERSION}"
)
DELTA_PACKAGE = f"io.delta:delta-spark_{SCALA_BINARY_VERSION}:{DELTA_VERSION}"
PACKAGES: tuple[str, ...] = (SPARK_KAFKA_PACKAGE, DELTA_PACKAGE)
"""Maven coordinates resolved (with their dependencies) onto every session's classpath."""

MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"

DEFAULT_MASTER = "local[2]"
DEFAULT_DRIVER_MEMORY = "1g"
DEFAULT_LOG_LEVEL = "WARN"
LOOPBACK = "127.0.0.1"

MANIFEST = "MANIFEST"
RESOLVE_LOG = "resolve.log"
LOG_TAIL_LINES = 40
GATEWAY_EXIT_TIMEOUT = 60.0

IVY_SETTINGS_TEMPLATE = """\
<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by cdcflow.sparkapps.session: resolve Spark packages from one Maven repository. -->
<ivysettings>
  <settings defaultResolver="maven"/>
  <resolvers>
    <ibiblio name="maven" m2compatible="true" root="{repository}"/>
  </resolvers>
</ivysettings>
"""

LOG4J2_CONFIG = """\
# Written by cdcflow.sparkapps.session: the driver logs warnings and errors only.
status = warn
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
rootLogger.level = warn
rootLogger.appenderRef.console.ref = console
logger.hadoop_native.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop_native.level = error
logger.spark_utils.name = org.apache.spark.util.Utils
logger.spark_utils.level = error
logger.plan_strings.name = org.apache.spark.sql.catalyst.util.SparkStringUtils
logger.plan_strings.level = error
logger.local_checkpoint.name = org.apache.spark.rdd.MapPartitionsRDD
logger.local_checkpoint.level = error
"""

# Settings every session gets; ``extra_conf`` may override any of them.
BASE_CONF: Mapping[str, str] = {
    "spark.sql.extensions": DELTA_EXTENSION,
    "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.host": LOOPBACK,
    "spark.driver.bindAddress": LOOPBACK,
}

# Comma- or space-separated settings where ``extra_conf`` is appended rather than replacing.
_JOINED_CONF = {"spark.jars": ",", "spark.driver.extraJavaOptions": " "}


class SparkJarsError(RuntimeError):
    """The Spark packages could not be resolved; the message carries the resolver's log tail."""


def cache_root() -> Path:
    """The cdcflow cache, ``$CDCFLOW_CACHE`` or ``~/.cache/cdcflow`` (not created here)."""
    return Path(os.environ.get("CDCFLOW_CACHE", Path.home() / ".cache" / "cdcflow"))


def spark_cache_dir() -> Path:
    """Return (and create) ``spark/`` under the cdcflow cache: Ivy's home, jars, settings."""
    path = cache_root() / "spark"
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_versions() -> None:
    """Raise if the installed pyspark or delta-spark is not the version the jars are pinned to.

    A Delta or Kafka jar built for another Spark fails later with obscure linkage errors, so
    a version bump in ``pyproject.toml`` must come with a bump of the constants here.
    """
    wanted = {"pyspark": SPARK_VERSION, "delta-spark": DELTA_VERSION}
    for distribution, version in wanted.items():
        installed = importlib.metadata.version(distribution)
        if installed != version:
            raise RuntimeError(
                f"{distribution} {installed} is installed but cdcflow.sparkapps.session pins the "
                f"Spark packages for {distribution} {version}; update the constants there "
                "(SPARK_VERSION, DELTA_VERSION, SPARK_KAFKA_VERSION) together with pyproject.toml."
            )


def jars_key(packages: tuple[str, ...] = PACKAGES, repository: str = MAVEN_CENTRAL) -> str:
    """The name of the jar folder for ``packages`` resolved from ``repository``."""
    digest = hashlib.sha256("\n".join([repository, *sorted(packages)]).encode()).hexdigest()
    return f"spark-{SPARK_VERSION}-{digest[:12]}"


def ensure_jars(
    packages: tuple[str, ...] = PACKAGES, *, repository: str = MAVEN_CENTRAL
) -> list[Path]:
    """The jars for ``packages`` (minus those Spark ships), resolved on first use, then cached.

    Safe to call from several processes at once: the resolve runs under a file lock. Call it
    ahead of time (``python -m cdcflow.sparkapps.session``) to warm a machine's cache.
    """
    home = spark_cache_dir()
    folder = home / "jars" / jars_key(packages, repository)
    with _locked(home / ".lock"):
        cached = _read_manifest(folder)
        if cached is not None:
            return cached
        resolved = _resolve_with_ivy(home, packages, repository)
        return _store(folder, _not_shipped_with_spark(resolved))


def session_conf(
    *,
    jars: list[Path],
    driver_memory: str = DEFAULT_DRIVER_MEMORY,
    extra_conf: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The Spark settings :func:`build_session` applies (besides master and app name).

    ``extra_conf`` overrides the defaults, except ``spark.jars`` and
    ``spark.driver.extraJavaOptions``, whose values are appended to ours.
    """
    conf = dict(BASE_CONF)
    conf["spark.driver.memory"] = driver_memory
    conf["spark.jars"] = ",".join(str(jar) for jar in jars)
    conf["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile={_log4j2_config()}"
    for key, value in (extra_conf or {}).items():
        separator = _JOINED_CONF.get(key)
        conf[key] = (
            f"{conf[key]}{separator}{value}" if separator and conf.get(key) and value else value
        )
    return conf


def build_session(
    *,
    app_name: str,
    master: str = DEFAULT_MASTER,
    extra_conf: Mapping[str, str] | None = None,
    driver_memory: str = DEFAULT_DRIVER_MEMORY,
    log_level: str = DEFAULT_LOG_LEVEL,
) -> SparkSession:
    """A SparkSession with the Kafka source and Delta Lake, in local mode by default.

    The first call on a machine resolves the jars from Maven Central (see the module
    docstring); later calls start from the cache without network. Static settings (jars,
    driver memory, Java options) only take effect when this starts the process's Spark JVM;
    if a session is already running, Spark returns it with the runtime settings applied.

    Two environment variables are defaulted, not overridden, for the JVM that Spark starts:
    ``SPARK_LOCAL_IP`` to the loopback address and ``PYSPARK_PYTHON`` to this interpreter,
    so Python workers run in the same environment as the driver.
    """
    check_versions()
    jars = ensure_jars()
    os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in session_conf(
        jars=jars, driver_memory=driver_memory, extra_conf=extra_conf
    ).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel(log_level)
    return session


def _read_manifest(folder: Path) -> list[Path] | None:
    """The cached jars listed in ``folder``'s manifest, or None if any is missing."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return None
    jars = [folder / name for name in manifest.read_text().split()]
    return jars if all(jar.is_file() for jar in jars) else None


def _store(folder: Path, jars: list[Path]) -> list[Path]:
    """Copy ``jars`` into ``folder`` and write its manifest last, so a torn copy is redone."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    stored = [Path(shutil.copy2(jar, folder / jar.name)) for jar in jars]
    partial = folder / f"{MANIFEST}.tmp"
    partial.write_text("".join(f"{jar.name}\n" for jar in stored))
    partial.replace(folder / MANIFEST)
    return stored


def _not_shipped_with_spark(jars: list[Path]) -> list[Path]:
    """Drop the jars that pyspark already has in the same version.

    Ivy names a jar ``<organisation>_<artifact>-<version>.jar``, Spark's own folder
    ``<artifact>-<version>.jar``.
    """
    spark_jars = _spark_home() / "jars"
    shipped = {jar.name for jar in spark_jars.glob("*.jar")}
    return [jar for jar in jars if jar.name.partition("_")[2] not in shipped]


def _spark_home() -> Path:
    """The Spark installation pyspark runs: ``$SPARK_HOME`` or the pip package's folder."""
    import pyspark

    return Path(os.environ.get("SPARK_HOME") or Path(pyspark.__file__).parent)


def _resolve_with_ivy(home: Path, packages: tuple[str, ...], repository: str) -> list[Path]:
    """Resolve ``packages`` in a throwaway Spark JVM and return the jars Ivy retrieved.

    spark-submit resolves ``spark.jars.packages`` before it starts the Python gateway and
    records the retrieved jars in the JVM's ``spark.jars`` system property, which is read back
    over the gateway before the JVM is shut down again. No SparkContext is created.
    """
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        raise SparkJarsError(
            "cannot resolve Spark packages from inside spark-submit (PYSPARK_GATEWAY_PORT is "
            "set); run `python -m cdcflow.sparkapps.session` first to fill the jar cache"
        )
    from pyspark.java_gateway import launch_gateway

    settings = home / "ivysettings.xml"
    _write_if_changed(settings, IVY_SETTINGS_TEMPLATE.format(repository=repository))
    conf = (
        SparkConf(loadDefaults=False)
        .set("spark.jars.packages", ",".join(packages))
        .set("spark.jars.ivy", str(home / "ivy"))
        .set("spark.jars.ivySettings", str(settings))
    )
    log = home / RESOLVE_LOG
    launch = cast(Callable[..., Any], launch_gateway)
    with log.open("wb") as sink:
        try:
            gateway = launch(conf, {"stdout": sink, "stderr": subprocess.STDOUT})
        except Exception as error:
            raise SparkJarsError(
                f"resolving {', '.join(packages)} from {repository} failed: {error}\n"
                f"Last lines of {log}:\n{_log_tail(log)}"
            ) from error
        try:
            listed = str(gateway.jvm.java.lang.System.getProperty("spark.jars") or "")
        finally:
            _stop_gateway(gateway)
    jars = [_local_path(entry) for entry in listed.split(",") if entry]
    if not jars or not all(jar.is_file() for jar in jars):
        raise SparkJarsError(
            f"resolving {', '.join(packages)} gave no usable jars ({listed!r}).\n"
            f"Last lines of {log}:\n{_log_tail(log)}"
        )
    return jars


def _local_path(entry: str) -> Path:
    """A local path from a ``spark.jars`` entry, which is a ``file:`` URI or a plain path."""
    parsed = urllib.parse.urlparse(entry)
    if parsed.scheme == "file":
        return Path(urllib.request.url2pathname(parsed.path))
    return Path(entry)


def _stop_gateway(gateway: Any) -> None:
    """Close the py4j gateway; the JVM exits when its stdin closes, else it is killed."""
    process: subprocess.Popen[bytes] = gateway.proc
    with contextlib.suppress(Exception):
        gateway.shutdown()
    if process.stdin is not None:
        with contextlib.suppress(OSError):
            process.stdin.close()
    try:
        process.wait(timeout=GATEWAY_EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=GATEWAY_EXIT_TIMEOUT)


def _log4j2_config() -> str:
    """The driver's log4j2 configuration, written to the cache; returned as a file URI."""
    path = spark_cache_dir() / "log4j2.properties"
    _write_if_changed(path, LOG4J2_CONFIG)
    return path.as_uri()


def _write_if_changed(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically unless it already holds exactly that."""
    if path.is_file() and path.read_text() == text:
        return
    partial = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    partial.write_text(text)
    partial.replace(path)


def _log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of ``path``, or a note that it does not exist."""
    if not path.exists():
        return f"(no log at {path})"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive advisory lock on ``path`` (created if needed) for the block."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def main() -> None:
    """Warm the jar cache and print where the jars are: ``python -m cdcflow.sparkapps.session``."""
    check_versions()
    for jar in ensure_jars():
        print(jar)


if __name__ == "__main__":
    main()
