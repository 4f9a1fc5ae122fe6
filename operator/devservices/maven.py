"""Jars from Maven Central, resolved once into the cdcflow cache.

A service names its jars as the dependencies of a small pom. :func:`cached_libs` writes that
pom under the cache folder it is given and lets Maven copy the runtime dependencies into
``libs/`` there. A marker holding the pom's digest is written only after a successful resolve,
so later runs start from the cache without Maven, and a changed pom resolves again. A file
lock makes concurrent first uses (parallel test sessions) resolve only once.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from cdcflow.operator.devservices import processes

DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
MARKER = "resolved.sha256"
RESOLVE_TIMEOUT = 900.0
MAVEN_HINT = "jars are fetched from Maven Central with Maven, e.g. `apt-get install maven`."


def cached_libs(home: Path, pom: str, *, service: str) -> Path:
    """The folder of ``pom``'s runtime dependencies under ``home``, resolving it on first use."""
    digest = hashlib.sha256(pom.encode()).hexdigest()
    with processes.locked(home / ".lock"):
        if not _resolved(home, digest):
            _resolve(home, pom, service=service)
            (home / MARKER).write_text(digest + "\n")
    return home / "libs"


def _resolved(home: Path, digest: str) -> bool:
    """Whether ``libs/`` was filled by a successful resolve of exactly this pom."""
    marker = home / MARKER
    return marker.exists() and marker.read_text().strip() == digest and (home / "libs").is_dir()


def _resolve(home: Path, pom: str, *, service: str) -> None:
    """Copy the pom's runtime dependencies into ``libs/`` with Maven, replacing any old ones."""
    mvn = processes.require_binary("mvn", hint=f"{service}: {MAVEN_HINT}")
    (home / MARKER).unlink(missing_ok=True)
    (home / "pom.xml").write_text(pom)
    partial, libs = home / "libs.partial", home / "libs"
    shutil.rmtree(partial, ignore_errors=True)
    processes.run_checked(
        [
            mvn,
            "-q",
            "-B",
            "-f",
            str(home / "pom.xml"),
            f"{DEPENDENCY_PLUGIN}:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={partial}",
        ],
        service=service,
        log=home / "resolve.log",
        timeout=RESOLVE_TIMEOUT,
    )
    shutil.rmtree(libs, ignore_errors=True)
    partial.rename(libs)
