"""How users' tools judge a resource's status: the shipped Argo CD health scripts (run in Lua as
Argo CD runs them) and kstatus (sigs.k8s.io/cli-utils, as Flux and kubectl plugins do)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lupa

from tests.services import kstatus

ROOT = Path(__file__).resolve().parents[1]
HEALTH = ROOT / "manifests" / "argocd" / "health"


def _lua_value(runtime: lupa.LuaRuntime, value: Any) -> Any:
    if isinstance(value, dict):
        return runtime.table_from({k: _lua_value(runtime, v) for k, v in value.items()})
    if isinstance(value, list):
        return runtime.table_from([_lua_value(runtime, v) for v in value])
    return value


def health(kind: str, obj: dict[str, Any]) -> tuple[str, str]:
    """Argo CD's verdict: the script ``<kind>.lua`` with the object as the global ``obj``."""
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    runtime.globals().obj = _lua_value(runtime, obj)
    script = (HEALTH / f"{kind}.lua").read_text()
    result = runtime.execute(script)
    return str(result["status"]), str(result["message"])


def verdicts(obj: dict[str, Any]) -> tuple[str, str]:
    """(kstatus status, Argo CD health status) of a resource as ``kubectl get -o json`` gives it."""
    argo, _ = health(obj["kind"], obj)
    return kstatus.compute(obj).status, argo
