"""Run the checks and test tiers in order and print how long each phase took.

``python -m tests.run_tiers`` runs everything (the README's test command calls it through
``make test``); ``python -m tests.run_tiers unit integration`` runs the named phases only.
Every phase runs even when an earlier one failed, so one run reports every problem; the exit
code is non-zero when any phase failed. A tier folder without test files says so and is
skipped (the e2e tier arrives with the operator); a tier whose files collect nothing fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.services import node_namespace

PACKAGES = ["capture", "operator", "sparkapps"]
TIERS = ("unit", "integration", "e2e")
CODE = [*PACKAGES, "tests", "bench"]
#: Packages beside the shipped ones that are type-checked like them: the launchers of the tests'
#: services and the benchmarks.
TYPED_TEST_PACKAGES = ["tests.services", "bench"]


@dataclass(frozen=True)
class Phase:
    """One named step of the run: a list of commands that must all succeed."""

    name: str
    commands: tuple[tuple[str, ...], ...]


def _pytest(tier: str) -> tuple[str, ...]:
    return (sys.executable, "-m", "pytest", f"tests/{tier}", "-m", tier, "-q")


PHASES = {
    "lint": Phase(
        "lint",
        (
            (sys.executable, "-m", "ruff", "check", *CODE),
            (sys.executable, "-m", "ruff", "format", "--check", *CODE),
            # Strict, as pyproject.toml's [tool.mypy] configures it.
            (
                sys.executable,
                "-m",
                "mypy",
                *(f"-p=cdcflow.{package}" for package in PACKAGES),
                *(f"-p={package}" for package in TYPED_TEST_PACKAGES),
            ),
            (str(Path(sys.executable).parent / "lint-imports"),),
        ),
    ),
    "unit": Phase("unit", (_pytest("unit"),)),
    "integration": Phase("integration", (_pytest("integration"),)),
    "e2e": Phase(
        "e2e",
        (
            # Builds the Kubernetes binaries from their Go modules, installs the container
            # runtime and builds the node's images on a fresh machine (cached afterwards), all
            # before entering the namespaces, where there is no network.
            (sys.executable, "-m", "tests.services.kube_node", "prepare"),
            # The tier runs inside network and mount namespaces of its own, where the test
            # node lives (see tests.services.node_namespace).
            tuple(node_namespace.wrapped(_pytest("e2e"))),
        ),
    ),
}


def run_phase(phase: Phase) -> bool:
    """Run every command of a phase; True when all of them succeeded."""
    folder = Path("tests") / phase.name
    if phase.name in TIERS and not any(folder.glob("test_*.py")):
        print(f"\n==> [{phase.name}] no test files in {folder} yet; nothing to run", flush=True)
        return True
    ok = True
    for command in phase.commands:
        print(f"\n==> [{phase.name}] {' '.join(command)}", flush=True)
        ok = subprocess.run(command, check=False).returncode == 0 and ok
    return ok


def main(argv: list[str]) -> int:
    """Run the requested phases (all by default) and print the timing summary."""
    names = argv or list(PHASES)
    unknown = sorted(set(names) - set(PHASES))
    if unknown:
        print(f"unknown phase(s) {unknown}; choose from {list(PHASES)}", file=sys.stderr)
        return 2
    results: list[tuple[str, bool, float]] = []
    if setup_started := os.environ.get("CDCFLOW_SETUP_STARTED"):
        results.append(("setup", True, time.time() - float(setup_started)))
    for name in names:
        started = time.monotonic()
        ok = run_phase(PHASES[name])
        results.append((name, ok, time.monotonic() - started))
    print("\n==> timing summary")
    for name, ok, seconds in results:
        print(f"    {name:<12} {'passed' if ok else 'FAILED':<7} {seconds:8.1f}s")
    return 0 if all(ok for _, ok, _ in results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
