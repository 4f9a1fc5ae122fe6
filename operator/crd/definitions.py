"""The three CustomResourceDefinitions of group cdcflow.io, version v1alpha1, category cdc.

Specs come from the pydantic models; status schemas, printer columns, short names and CEL
rules are declared here. Conditions are ``metav1.Condition``-shaped and a list-map keyed by
``type``, so ``kubectl wait --for=condition=Ready``, kstatus and Argo CD all read them.
"""

from __future__ import annotations

from pydantic import BaseModel

from cdcflow.capture.connector_resource import QUANTITY, SOURCE_KINDS, ConnectorSpec
from cdcflow.operator.crd.schema import JSON, structural
from cdcflow.operator.signal_resource import SnapshotSignalSpec
from cdcflow.sparkapps.config import SinkSpec

GROUP = "cdcflow.io"
VERSION = "v1alpha1"
CATEGORY = "cdc"
MAX_CONFIG_PROPERTIES = 256

CONDITION: JSON = {
    "type": "object",
    "required": ["type", "status", "lastTransitionTime", "reason", "message"],
    "properties": {
        "type": {"type": "string", "maxLength": 316},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
        "lastTransitionTime": {"type": "string", "format": "date-time"},
        "reason": {
            "type": "string",
            "maxLength": 1024,
            "minLength": 1,
            "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        },
        "message": {"type": "string", "maxLength": 32768},
    },
}
CONDITIONS: JSON = {
    "type": "array",
    "description": "Ready, Reconciling and Stalled (kstatus) plus kind-specific conditions.",
    "items": CONDITION,
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["type"],
}
OPEN_OBJECT: JSON = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
MAX_CONNECTOR_NAME = 44
#: The SparkApplication is <name>-sink, and the Spark operator puts its name into label values
#: (sparkoperator.k8s.io/app-name on the driver and executors), which are at most 63 characters.
MAX_SINK_NAME = 58
#: Children are Services and pods named after the resource: a name with dots (fine for a
#: custom resource) would make the API server refuse them, so it is refused up front.
DNS_LABEL_NAME_RULE: JSON = {
    "rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",
    "message": "metadata.name must be a DNS label (lowercase letters, digits and '-', starting "
    "with a letter, no dots): it names the Services and pods the operator creates",
}
#: A resource.Quantity: an int, or a string in quantity syntax (the pattern checks strings).
QUANTITY_SCHEMA: JSON = {"pattern": QUANTITY, "x-kubernetes-int-or-string": True}


def _status(properties: JSON) -> JSON:
    # The default gives a new object observedGeneration 0 < generation, so kstatus, Flux and
    # Argo CD see it in progress until the operator has looked at it, not Current at once.
    return {
        "type": "object",
        "description": "Observed state, written by the operator.",
        "default": {"observedGeneration": 0},
        "properties": {
            "observedGeneration": {"type": "integer", "format": "int64"},
            "conditions": CONDITIONS,
            **properties,
        },
    }


def _column(name: str, path: str, *, kind: str = "string", priority: int = 0) -> JSON:
    column: JSON = {"name": name, "type": kind, "jsonPath": path}
    if priority:
        column["priority"] = priority
    return column


def _condition_column(name: str, condition: str, field: str = "status") -> JSON:
    return _column(name, f'.status.conditions[?(@.type=="{condition}")].{field}')


AGE = _column("Age", ".metadata.creationTimestamp", kind="date")


def _crd(
    *,
    kind: str,
    plural: str,
    short_names: list[str],
    spec_model: type[BaseModel],
    status: JSON,
    columns: list[JSON],
    spec_rules: list[JSON] | None = None,
) -> JSON:
    spec = structural(spec_model)
    if spec_rules:
        spec["x-kubernetes-validations"] = spec_rules
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": short_names,
                "categories": [CATEGORY],
            },
            "versions": [
                {
                    "name": VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": columns,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "description": (spec_model.__doc__ or "").strip().splitlines()[0],
                            "required": ["spec"],
                            "properties": {
                                "apiVersion": {"type": "string"},
                                "kind": {"type": "string"},
                                "metadata": {"type": "object"},
                                "spec": spec,
                                "status": status,
                            },
                        }
                    },
                }
            ],
        },
    }


def connector_crd() -> JSON:
    status = _status(
        {
            "source": {"type": "string", "description": "kind://host:port/database"},
            "state": {"type": "string", "description": "Capture state from the pod."},
            "snapshot": {
                "type": "string",
                "description": "Snapshot progress, e.g. 45% or Completed.",
            },
            "lag": {"type": "string", "description": "Milliseconds behind the source."},
            "log": {
                "type": "string",
                "description": "The source log the connector holds back and whether the server "
                "may soon drop some of it, e.g. 'ok 12.0 MiB' or 'warning 9.1 GiB'.",
            },
            "topics": {"type": "array", "items": {"type": "string"}},
            "capture": OPEN_OBJECT,
            "secretHash": {"type": "string"},
            "lastRestartRequest": {"type": "integer"},
            "lastResetRequest": {"type": "integer"},
            "autoRestart": OPEN_OBJECT,
        }
    )
    columns = [
        _column("Source", ".status.source"),
        _column("State", ".status.state"),
        _column("Snapshot", ".status.snapshot"),
        _column("Lag", ".status.lag"),
        _column("Log", ".status.log", priority=1),
        _condition_column("Ready", "Ready"),
        _condition_column("Reason", "Ready", "reason"),
        AGE,
    ]
    rules = [
        {
            "rule": "has(self.kafka)",
            "message": "spec.kafka.bootstrapServers is required: the capture pod writes to Kafka",
        },
        *(
            {
                "rule": f"!has(self.source.{kind}) || (has(self.source.{kind}.credentials) && "
                f"self.source.{kind}.credentials.secretName != '')",
                "message": f"spec.source.{kind}.credentials.secretName is required: the capture "
                "pod logs in with the username and password of that Secret",
            }
            for kind in SOURCE_KINDS
        ),
        {
            "rule": "(has(self.offsets) ? self.offsets.resetRequest : 0) == "
            "(has(oldSelf.offsets) ? oldSelf.offsets.resetRequest : 0) || self.state == 'stopped'",
            "message": "offsets.resetRequest may change only while state is stopped",
        },
    ]
    crd = _crd(
        kind="CdcConnector",
        plural="cdcconnectors",
        short_names=["cdcc"],
        spec_model=ConnectorSpec,
        status=status,
        columns=columns,
        spec_rules=rules,
    )
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    # <name>-capture is the StatefulSet; its pods get a controller-revision-hash label of
    # <name>-capture-<10 characters>, which like every label value must fit in 63.
    root["x-kubernetes-validations"] = [
        DNS_LABEL_NAME_RULE,
        {
            "rule": f"self.metadata.name.size() <= {MAX_CONNECTOR_NAME}",
            "message": f"metadata.name must be at most {MAX_CONNECTOR_NAME} characters: the "
            "capture StatefulSet <name>-capture labels its pods <name>-capture-<hash>, and a "
            "label value is at most 63 characters",
        },
    ]
    spec = root["properties"]["spec"]
    runtime = spec["properties"]["runtime"]["properties"]["resources"]["properties"]
    for kind in ("requests", "limits"):
        runtime[kind]["additionalProperties"] = QUANTITY_SCHEMA
    # Values are strings, numbers or booleans; CEL cannot type such a map, so credentials in
    # config are refused by the operator (Stalled, InvalidConfig) rather than by a rule here.
    spec["properties"]["config"]["maxProperties"] = MAX_CONFIG_PROPERTIES
    chosen = " + ".join(f"(has(self.{kind}) ? 1 : 0)" for kind in SOURCE_KINDS)
    kinds = ", ".join(SOURCE_KINDS)
    spec["properties"]["source"]["x-kubernetes-validations"] = [
        {"rule": f"{chosen} == 1", "message": f"source needs exactly one of: {kinds}"}
    ]
    return crd


def signal_crd() -> JSON:
    status = _status(
        {
            "signalId": {"type": "string"},
            "sentTime": {"type": "string", "format": "date-time"},
            "completedTime": {"type": "string", "format": "date-time"},
            "progress": OPEN_OBJECT,
            "ranBefore": {
                "type": "boolean",
                "description": "The same name and spec ran before; not run again.",
            },
            "notificationsBefore": {
                "type": "integer",
                "description": "Notifications of an earlier run of the same signal id that the "
                "capture pod still held when this one was inserted; they are not counted.",
            },
        }
    )
    columns = [
        _column("Connector", ".spec.connectorRef.name"),
        _column("Action", ".spec.action"),
        _column("Type", ".spec.type"),
        _condition_column("Succeeded", "Succeeded"),
        _condition_column("Reason", "Succeeded", "reason"),
        AGE,
    ]
    rules = [
        {"rule": "self == oldSelf", "message": "spec is immutable: create a new CdcSnapshotSignal"},
        {
            "rule": "self.action != 'execute' || size(self.dataCollections) > 0",
            "message": "action execute needs at least one entry in dataCollections",
        },
        {
            "rule": "!has(self.additionalConditions) || self.additionalConditions.all(c, "
            "self.dataCollections.exists(d, d == c.dataCollection))",
            "message": "every additionalConditions[].dataCollection must be one of "
            "dataCollections (a condition for a table that is not snapshotted does nothing)",
        },
    ]
    return _crd(
        kind="CdcSnapshotSignal",
        plural="cdcsnapshotsignals",
        short_names=["cdcsig"],
        spec_model=SnapshotSignalSpec,
        status=status,
        columns=columns,
        spec_rules=rules,
    )


def sink_crd() -> JSON:
    status = _status({"application": OPEN_OBJECT})
    columns = [
        _column("Connector", ".spec.connectorRef.name"),
        _column("Mode", ".spec.mode"),
        _column("Target", ".spec.target.path"),
        _column("State", ".status.application.state"),
        _condition_column("Ready", "Ready"),
        _condition_column("Reason", "Ready", "reason"),
        AGE,
    ]
    crd = _crd(
        kind="CdcSink",
        plural="cdcsinks",
        short_names=["cdcsink"],
        spec_model=SinkSpec,
        status=status,
        columns=columns,
    )
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    root["x-kubernetes-validations"] = [
        DNS_LABEL_NAME_RULE,
        {
            "rule": f"self.metadata.name.size() <= {MAX_SINK_NAME}",
            "message": f"metadata.name must be at most {MAX_SINK_NAME} characters: the "
            "SparkApplication is <name>-sink, and the Spark operator labels its pods with that "
            "name; a label value is at most 63 characters",
        },
    ]
    return crd


def all_crds() -> dict[str, JSON]:
    """File name → CRD, for ``crds/``."""
    crds = [connector_crd(), signal_crd(), sink_crd()]
    return {f"{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml": crd for crd in crds}
