"""Cached Go builds for the test services: one lock, one recipe digest, one toolchain.

Several test services are compiled from Go modules through the module proxy (the only place
they can come from here): the Kubernetes binaries, the kstatus helper, the Spark operator.
Each build lives in a cache folder and is done once per machine. A file lock serialises
concurrent first uses; ``built.json``, holding a digest of everything that decides the build
(the recipe), is removed before building and written only after every output exists, so an
interrupted build or a changed recipe rebuilds, and later runs never touch Go.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdcflow.operator.devservices import processes

MARKER = "built.json"
GO_TIMEOUT = 900.0
GO_FALLBACK = Path("/usr/local/go/bin/go")
GO_HINT = (
    "Test services (kube-apiserver, kubelet, kstatus, the Spark operator) are built from their "
    "Go modules on first use; install Go 1.26 or newer (https://go.dev/doc/install, or put it "
    "at /usr/local/go/bin/go)."
)
BUILD_FLAGS = ("-trimpath", "-buildvcs=false")
STRIP_LDFLAGS = ("-s", "-w")


def recipe_digest(recipe: Mapping[str, Any]) -> str:
    """A stable digest of a build recipe (a JSON-able mapping)."""
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()


def go_binary() -> str:
    """``go`` from PATH, else the usual /usr/local/go install; raise with a hint if neither."""
    found = shutil.which("go")
    if found is not None:
        return found
    if GO_FALLBACK.exists():
        return str(GO_FALLBACK)
    raise processes.ServiceStartError(f"`go` was not found on PATH. {GO_HINT}")


def go_env() -> dict[str, str]:
    """The environment for Go: static binaries, no workspace, module mode."""
    return {**os.environ, "CGO_ENABLED": "0", "GOWORK": "off", "GO111MODULE": "on"}


@dataclass(frozen=True)
class Go:
    """The Go toolchain bound to one build: its service name (for errors) and build log."""

    service: str
    log: Path
    binary: str
    env: Mapping[str, str]

    def run(self, *args: str, timeout: float = GO_TIMEOUT) -> None:
        """Run one go command, its output appended to the build log."""
        processes.run_checked(
            [self.binary, *args], service=self.service, log=self.log, env=dict(self.env),
            timeout=timeout,
        )  # fmt: skip

    def output(self, *args: str, cwd: Path | None = None) -> str:
        """Run one go command and return its standard output; stderr goes to the build log."""
        with self.log.open("ab") as sink:
            result = subprocess.run(
                [self.binary, *args], stdout=subprocess.PIPE, stderr=sink, env=dict(self.env),
                cwd=cwd, timeout=GO_TIMEOUT, check=False,
            )  # fmt: skip
        if result.returncode != 0:
            raise processes.ServiceStartError(
                f"{self.service}: `go {' '.join(args)}` failed with code {result.returncode}.\n"
                f"{result.stdout.decode(errors='replace')}\n"
                f"Last lines of {self.log}:\n{processes.log_tail(self.log)}"
            )
        return result.stdout.decode()


@dataclass(frozen=True)
class CachedBuild:
    """One cached build: its folder, the digest of its recipe and the files it must leave."""

    service: str
    home: Path
    digest: str
    outputs: Sequence[Path]

    def ready(self) -> bool:
        """Whether every output comes from a finished build of this recipe (no lock, no Go)."""
        try:
            recipe = json.loads((self.home / MARKER).read_text()).get("recipe")
        except (OSError, ValueError):
            return False
        return recipe == self.digest and all(path.is_file() for path in self.outputs)

    def ensure(self, build: Callable[[Go], None]) -> None:
        """Run ``build`` under the lock unless a finished build of this recipe is cached."""
        with processes.locked(self.home / ".lock"):
            if self.ready():
                return
            (self.home / MARKER).unlink(missing_ok=True)
            build(Go(self.service, self.home / "build.log", go_binary(), go_env()))
            (self.home / MARKER).write_text(json.dumps({"recipe": self.digest}) + "\n")


def replace_folder(partial: Path, final: Path) -> None:
    """Move a fully built ``partial`` folder into place, replacing ``final``."""
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)


def fresh_folder(path: Path) -> Path:
    """``path`` emptied (created if missing)."""
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()
    return path
