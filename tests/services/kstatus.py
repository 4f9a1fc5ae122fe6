"""kstatus for tests: judge an object's status with the library users' tools judge it with.

Flux, ``kubectl`` plugins and ``cli-utils``' own appliers decide whether a resource is
reconciled with kstatus (``sigs.k8s.io/cli-utils/pkg/kstatus/status``). Its rules for custom
resources are short but easy to get subtly wrong in a reimplementation (the order of the
deletion, generation and condition checks; what a missing ``status`` means), so tests ask the
real library: :func:`compute` feeds one object, as JSON, to a tiny Go program that calls
``status.Compute`` and prints ``{"status": ..., "message": ...}``.

Binary
    :func:`build_kstatus` writes the program (:data:`MAIN_GO`, embedded here) and a go.mod
    requiring ``sigs.k8s.io/cli-utils`` at :data:`KSTATUS_VERSION` into
    ``cache_dir("kstatus", KSTATUS_VERSION)/src``, runs ``go mod tidy`` (which resolves the
    release's own dependency versions through the module proxy) and ``go build`` with
    ``CGO_ENABLED=0``, ``-trimpath``, ``-buildvcs=false`` and ``-ldflags=-s -w`` into
    ``bin/kstatus``, once per machine, like :mod:`tests.services.kube`: a file
    lock serialises concurrent first uses and ``built.json`` (a digest of the recipe, the Go
    source included) is written last. v0.37.2 is the newest release the module proxy serves
    here (``go list -m -versions sigs.k8s.io/cli-utils`` lists only it). Flux itself now
    builds against its fork, ``github.com/fluxcd/cli-utils`` (v1.4.0 here); its
    ``pkg/kstatus/status`` is identical to v0.37.2's apart from import paths, so the verdicts
    are Flux's too.

    The program decodes stdin with apimachinery's ``UnstructuredJSONScheme``, as client-go
    does, so numbers become ``int64`` (plain ``encoding/json`` would give ``float64`` and make
    kstatus' generation check fail) and a missing ``kind`` or a ``…List`` is bad input: it exits
    1 with the reason on stderr, which :func:`compute` raises as :class:`KstatusError`.

    Measured on the 2-core project machine (another test run going on): 20 s wall (15 s user,
    peak RSS 0.5 GB) with the Go build cache warm from the Kubernetes builds but the release's
    v0.30 ``k8s.io`` modules not yet downloaded; 45 s with empty Go caches (28 modules, 140 MB
    of module cache, 170 MB of build cache); 0.6 s to rebuild with warm Go caches. The
    stripped static binary is 8.7 MB; a :func:`compute` call takes about 8 ms.
    ``python -m tests.services.kstatus build`` fills the cache and prints the path
    and time; ``… compute < object.json`` prints the verdict for one object.

What kstatus says about a custom resource (``status.Compute``, in this order)
    ``metadata.deletionTimestamp`` set → Terminating; ``status.observedGeneration`` present and
    different from ``metadata.generation`` → InProgress; then the first ``Reconciling=True``
    (→ InProgress) or ``Stalled=True`` (→ Failed) condition in list order; then a ``Ready``
    condition → Current if True, else InProgress; otherwise Current. That includes an object
    with no status at all: a CR its controller has not yet seen looks reconciled, and only a
    status with an older ``observedGeneration`` (0, say) or a Reconciling or not-True Ready
    condition makes it InProgress.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cdcflow.operator.devservices import processes
from tests.services import gobuild

SERVICE = "kstatus"
KSTATUS_MODULE = "sigs.k8s.io/cli-utils"
KSTATUS_VERSION = "v0.37.2"
BUILD_MODULE = "cdcflow.dev/kstatus"
GO_DIRECTIVE = "1.22.0"
BINARY = "kstatus"
BUILD_TIMEOUT = 1800.0
COMPUTE_TIMEOUT = 30.0
STATUSES = ("InProgress", "Current", "Failed", "Terminating", "NotFound", "Unknown")

MAIN_GO = """\
// Command kstatus prints kstatus' verdict on one Kubernetes object read as JSON on stdin.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type verdict struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kstatus:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	data, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("reading stdin: %w", err)
	}
	// The unstructured scheme decodes numbers as int64, as client-go does.
	decoded, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, nil)
	if err != nil {
		return fmt.Errorf("decoding the object: %w", err)
	}
	object, ok := decoded.(*unstructured.Unstructured)
	if !ok {
		return fmt.Errorf("expected one object, got %T", decoded)
	}
	result, err := status.Compute(object)
	if err != nil {
		return fmt.Errorf("computing the status: %w", err)
	}
	answer := verdict{Status: string(result.Status), Message: result.Message}
	return json.NewEncoder(out).Encode(answer)
}
"""


class KstatusError(ValueError):
    """The kstatus program rejected its input (the message carries its stderr)."""


@dataclass(frozen=True)
class KstatusResult:
    """kstatus' verdict on one object: one of :data:`STATUSES` and its message."""

    status: str
    message: str


# --------------------------------------------------------------------------------------------
# Building the binary


def build_home() -> Path:
    """The cache folder for the pinned release: ``src/``, ``bin/``, ``build.log``."""
    return processes.cache_dir(SERVICE, KSTATUS_VERSION)


def build_ready() -> bool:
    """Whether the cache holds a finished build of the current recipe (no lock, no Go)."""
    return _cached_build().ready()


def build_kstatus() -> Path:
    """The cached kstatus binary, built from the Go modules on first use (once per machine)."""
    build = _cached_build()
    build.ensure(lambda go: _build(go, build.home))
    return build.home / "bin" / BINARY


def recipe_digest() -> str:
    """A digest of everything that decides the binary, so a changed recipe rebuilds."""
    return gobuild.recipe_digest(
        {
            "module": KSTATUS_MODULE,
            "version": KSTATUS_VERSION,
            "go_mod": build_go_mod(),
            "main_go": MAIN_GO,
            "flags": gobuild.BUILD_FLAGS,
            "strip": gobuild.STRIP_LDFLAGS,
            "cgo": "0",
        }
    )


def _cached_build() -> gobuild.CachedBuild:
    home = build_home()
    return gobuild.CachedBuild(SERVICE, home, recipe_digest(), (home / "bin" / BINARY,))


def build_go_mod() -> str:
    """The throwaway main module's go.mod before ``go mod tidy`` fills in the rest."""
    lines = [f"module {BUILD_MODULE}", "", f"go {GO_DIRECTIVE}", ""]
    lines.append(f"require {KSTATUS_MODULE} {KSTATUS_VERSION}")
    return "\n".join(lines) + "\n"


def _build(go: gobuild.Go, home: Path) -> None:
    """Write the module, resolve its dependencies and build the binary into ``bin/``."""
    src = _write_module(home / "src")
    go.run("-C", str(src), "mod", "tidy")
    partial = gobuild.fresh_folder(home / "bin.partial")
    ldflags = " ".join(gobuild.STRIP_LDFLAGS)
    go.run(
        "-C", str(src), "build", *gobuild.BUILD_FLAGS, f"-ldflags={ldflags}",
        "-o", str(partial / BINARY), ".", timeout=BUILD_TIMEOUT,
    )  # fmt: skip
    gobuild.replace_folder(partial, home / "bin")


def _write_module(src: Path) -> Path:
    """A fresh folder holding the program and its go.mod (``go mod tidy`` adds go.sum)."""
    gobuild.fresh_folder(src)
    (src / "go.mod").write_text(build_go_mod())
    (src / "main.go").write_text(MAIN_GO)
    return src


# --------------------------------------------------------------------------------------------
# Computing a status


def compute(obj: Mapping[str, Any]) -> KstatusResult:
    """kstatus' verdict on one Kubernetes object (e.g. ``kubectl get … -o json``'s output)."""
    return compute_json(json.dumps(obj))


def compute_json(document: str) -> KstatusResult:
    """kstatus' verdict on one object given as a JSON document; raise on bad input."""
    result = subprocess.run(
        [str(_binary())], input=document.encode(), capture_output=True,
        timeout=COMPUTE_TIMEOUT, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        stderr = result.stderr.decode(errors="replace").strip()
        raise KstatusError(stderr or f"kstatus exited with code {result.returncode}")
    return parse_result(result.stdout.decode())


def parse_result(output: str) -> KstatusResult:
    """Read the program's ``{"status": …, "message": …}`` line."""
    verdict = json.loads(output)
    return KstatusResult(status=str(verdict["status"]), message=str(verdict["message"]))


def _binary() -> Path:
    """The binary path, without taking the lock when the cache is already complete."""
    build = _cached_build()
    return build.outputs[0] if build.ready() else build_kstatus()


# --------------------------------------------------------------------------------------------
# Command line: ``python -m tests.services.kstatus build|compute``


def main(argv: Sequence[str]) -> int:
    """``build`` fills the cache and prints the binary and time; ``compute`` reads one object
    as JSON on stdin and prints kstatus' verdict as JSON."""
    command = argv[0] if argv else "build"
    if command == "build":
        started = time.monotonic()
        binary = build_kstatus()
        print(binary)
        print(f"ready in {time.monotonic() - started:.1f}s")
        return 0
    if command == "compute":
        try:
            result = compute_json(sys.stdin.read())
        except KstatusError as error:
            print(error, file=sys.stderr)
            return 1
        print(json.dumps({"status": result.status, "message": result.message}))
        return 0
    name = __spec__.name if __spec__ else "kstatus"
    print(f"usage: python -m {name} build | compute < object.json", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
