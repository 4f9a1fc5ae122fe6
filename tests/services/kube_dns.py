"""A tiny cluster DNS server for the test Kubernetes node, answering from the API server.

The e2e node runs without kube-proxy and without CoreDNS (no images can be pulled), yet pods
reach each other by cluster DNS names: the operator calls ``<name>-capture.<ns>.svc:8080``,
Spark drivers call ``kubernetes.default.svc`` and executors call ``<app>-driver-svc.<ns>.svc``.
:func:`running_cluster_dns` serves those names on UDP and TCP from a background thread of the
calling process; kubelet's ``--cluster-dns`` points pods at it.

Names (``<domain>`` is the cluster domain, ``cluster.local`` by default; case-insensitive):

``<svc>.<ns>.svc.<domain>``
    The ``kubernetes`` Service in ``default`` answers its ClusterIP (the test node puts that
    address on loopback, so it reaches the API server). **Every other Service answers the
    addresses of its ready endpoints**, read from its EndpointSlices (``discovery.k8s.io/v1``,
    label ``kubernetes.io/service-name``), headless or not. This deviates from CoreDNS, which
    answers a ClusterIP for non-headless Services: without kube-proxy nothing routes a
    ClusterIP, so only the endpoint addresses are of use. A Service without ready endpoints
    (or an ``ExternalName`` Service) exists but has no addresses: NOERROR, no answers.
``<endpoint>.<svc>.<ns>.svc.<domain>``
    The ready endpoint whose ``hostname`` is ``<endpoint>`` (StatefulSet pods behind their
    headless Service); an endpoint without a hostname goes by its dashed address
    (``10-213-0-7``), as in CoreDNS.
``<a-b-c-d>.<ns>.pod.<domain>``
    The address ``a.b.c.d`` itself.

Only ``A`` queries get addresses (the node is IPv4 only); any other type for a name that
exists answers NOERROR with no records. A name in the cluster domain that matches none of the
above, such as a search-path miss (``x.ns.svc.ns.svc.cluster.local``), answers NXDOMAIN.
Answers carry the AA flag and a TTL of :data:`TTL` seconds. Names outside the cluster domain
answer NXDOMAIN without the AA flag: nothing is ever forwarded, so tests never send traffic
off the machine. NXDOMAIN rather than REFUSED because glibc takes REFUSED for a temporary
failure (``EAI_AGAIN``) and stops walking its search list there, so a host search domain
listed before the cluster ones would hide every cluster name; NXDOMAIN lets it go on.

Each lookup reads the namespace's Services and EndpointSlices from the API server: two list
calls, measured at 2-3 ms together against the local test API server (10-15 ms for the very
first, which opens the connection). A namespace's snapshot is reused for at most
:data:`SNAPSHOT_MAX_AGE` seconds (a client's A and AAAA questions, executors starting
together), no longer, since pods come and go within a test. Messages are parsed and built
with dnspython; where the names come from is a :class:`ClusterSource`, so tests serve from
memory without a cluster.

``python -m tests.services.kube_dns --kubeconfig K --address A [--port P]``
serves until Ctrl-C (``dig @A -p P kubernetes.default.svc.cluster.local``).
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import logging
import socket
import socketserver
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import dns.exception
import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
from kubernetes import config

TTL = 5
DEFAULT_PORT = 53
DEFAULT_CLUSTER_DOMAIN = "cluster.local"
API_SERVICE_NAMESPACE = "default"
API_SERVICE_NAME = "kubernetes"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
IPV4 = "IPv4"
SNAPSHOT_MAX_AGE = 1.0
API_TIMEOUT = 2.0
PLAIN_UDP_PAYLOAD = 512
TCP_MESSAGE_LIMIT = 65535
TCP_IDLE_TIMEOUT = 10.0
POLL_INTERVAL = 0.05
PORT_ATTEMPTS = 5
JSON = Mapping[str, Any]

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------------------------
# What the cluster holds: plain values, so the answering rules are pure


@dataclass(frozen=True)
class Service:
    """A Service; ``cluster_ip`` is None for a headless (``None``) or ExternalName Service."""

    namespace: str
    name: str
    cluster_ip: str | None = None


@dataclass(frozen=True)
class Endpoint:
    """One endpoint of an EndpointSlice (``ready`` is true when the API leaves it unset)."""

    addresses: tuple[str, ...]
    ready: bool = True
    hostname: str | None = None


@dataclass(frozen=True)
class EndpointSlice:
    """An EndpointSlice of the Service ``service_name`` (its ``kubernetes.io/service-name``)."""

    namespace: str
    service_name: str
    endpoints: tuple[Endpoint, ...]
    address_type: str = IPV4


@dataclass(frozen=True)
class ClusterSnapshot:
    """Services and EndpointSlices as read at one moment (one namespace or several)."""

    services: tuple[Service, ...] = ()
    endpoint_slices: tuple[EndpointSlice, ...] = ()


EMPTY_SNAPSHOT = ClusterSnapshot()


@dataclass(frozen=True)
class DnsAnswer:
    """The response code and the A-record addresses for one question."""

    rcode: dns.rcode.Rcode
    addresses: tuple[str, ...] = ()
    authoritative: bool = True


# --------------------------------------------------------------------------------------------
# Query names, parsed


@dataclass(frozen=True)
class OutsideDomain:
    """A name outside the cluster domain: never answered, never forwarded."""


@dataclass(frozen=True)
class UnknownName:
    """A name in the cluster domain that no rule matches."""


@dataclass(frozen=True)
class ZoneNode:
    """The domain itself, ``svc.<domain>``, ``pod.<domain>`` or ``<ns>.pod.<domain>``."""


@dataclass(frozen=True)
class NamespaceName:
    """``<ns>.svc.<domain>``: exists while the namespace has a Service."""

    namespace: str


@dataclass(frozen=True)
class ServiceName:
    """``<svc>.<ns>.svc.<domain>``."""

    namespace: str
    service: str


@dataclass(frozen=True)
class EndpointName:
    """``<endpoint>.<svc>.<ns>.svc.<domain>``: a hostname or a dashed address."""

    namespace: str
    service: str
    endpoint: str


@dataclass(frozen=True)
class PodName:
    """``<a-b-c-d>.<ns>.pod.<domain>``, already turned into ``a.b.c.d``."""

    address: str


ClusterName = (
    OutsideDomain | UnknownName | ZoneNode | NamespaceName | ServiceName | EndpointName | PodName
)


def normalise_name(name: str) -> str:
    """Lower case, without the final dot."""
    return name.lower().rstrip(".")


def parse_name(name: str, cluster_domain: str = DEFAULT_CLUSTER_DOMAIN) -> ClusterName:
    """Which kind of cluster name ``name`` is (case-insensitive; a final dot is optional)."""
    name, domain = normalise_name(name), normalise_name(cluster_domain)
    if name == domain:
        return ZoneNode()
    if not name.endswith(f".{domain}"):
        return OutsideDomain()
    labels = name.removesuffix(f".{domain}").split(".")
    match labels:
        case ["svc" | "pod"] | [_, "pod"]:
            return ZoneNode()
        case [namespace, "svc"]:
            return NamespaceName(namespace)
        case [service, namespace, "svc"]:
            return ServiceName(namespace, service)
        case [endpoint, service, namespace, "svc"]:
            return EndpointName(namespace, service, endpoint)
        case [dashed, _, "pod"]:
            address = undashed_address(dashed)
            return UnknownName() if address is None else PodName(address)
    return UnknownName()


def undashed_address(dashed: str) -> str | None:
    """``10-213-0-7`` → ``10.213.0.7``; None unless it is an IPv4 address."""
    try:
        return str(ipaddress.IPv4Address(dashed.replace("-", ".")))
    except ValueError:
        return None


def dashed_address(address: str) -> str:
    """``10.213.0.7`` → ``10-213-0-7``, the DNS label of an endpoint without a hostname."""
    return address.replace(".", "-").replace(":", "-")


def snapshot_namespace(name: ClusterName) -> str | None:
    """The namespace whose Services and EndpointSlices answering ``name`` needs, if any."""
    if isinstance(name, NamespaceName | ServiceName | EndpointName):
        return name.namespace
    return None


# --------------------------------------------------------------------------------------------
# The answering rules (pure)


def answer(
    name: str,
    record_type: dns.rdatatype.RdataType,
    snapshot: ClusterSnapshot,
    *,
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
) -> DnsAnswer:
    """The answer to ``name``/``record_type`` from what ``snapshot`` holds."""
    return answer_parsed(parse_name(name, cluster_domain), record_type, snapshot)


def answer_parsed(
    name: ClusterName, record_type: dns.rdatatype.RdataType, snapshot: ClusterSnapshot
) -> DnsAnswer:
    """:func:`answer` for a name already parsed."""
    if isinstance(name, OutsideDomain):
        return DnsAnswer(dns.rcode.NXDOMAIN, authoritative=False)
    addresses = name_addresses(name, snapshot)
    if addresses is None:
        return DnsAnswer(dns.rcode.NXDOMAIN)
    return DnsAnswer(dns.rcode.NOERROR, addresses if record_type == dns.rdatatype.A else ())


def name_addresses(name: ClusterName, snapshot: ClusterSnapshot) -> tuple[str, ...] | None:
    """The IPv4 addresses of ``name``: None if it does not exist, () if it has none."""
    match name:
        case ZoneNode():
            return ()
        case PodName(address=address):
            return (address,)
        case NamespaceName(namespace=namespace):
            exists = any(service.namespace == namespace for service in snapshot.services)
            return () if exists else None
        case ServiceName(namespace=namespace, service=service_name):
            service = find_service(snapshot, namespace, service_name)
            return None if service is None else service_addresses(service, snapshot)
        case EndpointName(namespace=namespace, service=service_name, endpoint=endpoint):
            if find_service(snapshot, namespace, service_name) is None:
                return None
            return endpoint_addresses(snapshot, namespace, service_name, endpoint) or None
    return None


def find_service(snapshot: ClusterSnapshot, namespace: str, name: str) -> Service | None:
    """The Service ``namespace/name`` (names compared case-insensitively)."""
    for service in snapshot.services:
        if service.namespace.lower() == namespace and service.name.lower() == name:
            return service
    return None


def service_addresses(service: Service, snapshot: ClusterSnapshot) -> tuple[str, ...]:
    """The ClusterIP of ``kubernetes.default``; for every other Service its ready endpoints."""
    is_api_service = (service.namespace, service.name) == (API_SERVICE_NAMESPACE, API_SERVICE_NAME)
    if is_api_service and service.cluster_ip is not None:
        return (service.cluster_ip,)
    return _sorted_unique(
        address
        for endpoint in ready_endpoints(snapshot, service.namespace, service.name)
        for address in endpoint.addresses
    )


def endpoint_addresses(
    snapshot: ClusterSnapshot, namespace: str, service: str, endpoint_label: str
) -> tuple[str, ...]:
    """Addresses of the ready endpoints of a Service that go by ``endpoint_label``."""
    return _sorted_unique(
        address
        for endpoint in ready_endpoints(snapshot, namespace, service)
        for address in endpoint.addresses
        if (endpoint.hostname or dashed_address(address)).lower() == endpoint_label
    )


def ready_endpoints(snapshot: ClusterSnapshot, namespace: str, service: str) -> Iterator[Endpoint]:
    """The ready endpoints in the IPv4 EndpointSlices of the Service ``namespace/service``."""
    for endpoint_slice in snapshot.endpoint_slices:
        if (
            endpoint_slice.address_type == IPV4
            and endpoint_slice.namespace.lower() == namespace.lower()
            and endpoint_slice.service_name.lower() == service.lower()
        ):
            yield from (endpoint for endpoint in endpoint_slice.endpoints if endpoint.ready)


def _sorted_unique(addresses: Iterator[str]) -> tuple[str, ...]:
    """Distinct addresses in numeric order (an endpoint may sit in two slices for a moment)."""
    return tuple(sorted(set(addresses), key=ipaddress.IPv4Address))


# --------------------------------------------------------------------------------------------
# Where snapshots come from


class ClusterSource(Protocol):
    """Reads the Services and EndpointSlices of one namespace."""

    def namespace_snapshot(self, namespace: str) -> ClusterSnapshot:
        """The namespace's Services and EndpointSlices now (empty for a missing namespace)."""
        ...


def snapshot_from_lists(service_list: JSON, endpoint_slice_list: JSON) -> ClusterSnapshot:
    """A snapshot from the JSON bodies of a ServiceList and an EndpointSliceList."""
    return ClusterSnapshot(
        services=tuple(_service(item) for item in service_list.get("items") or ()),
        endpoint_slices=tuple(
            endpoint_slice
            for item in endpoint_slice_list.get("items") or ()
            if (endpoint_slice := _endpoint_slice(item)) is not None
        ),
    )


def _service(item: JSON) -> Service:
    metadata, spec = item.get("metadata") or {}, item.get("spec") or {}
    cluster_ip = spec.get("clusterIP")
    return Service(
        namespace=str(metadata.get("namespace", "")),
        name=str(metadata.get("name", "")),
        cluster_ip=str(cluster_ip) if cluster_ip and cluster_ip != "None" else None,
    )


def _endpoint_slice(item: JSON) -> EndpointSlice | None:
    """The slice, or None when no ``kubernetes.io/service-name`` label ties it to a Service."""
    metadata = item.get("metadata") or {}
    service_name = (metadata.get("labels") or {}).get(SERVICE_NAME_LABEL)
    if not service_name:
        return None
    return EndpointSlice(
        namespace=str(metadata.get("namespace", "")),
        service_name=str(service_name),
        address_type=str(item.get("addressType", IPV4)),
        endpoints=tuple(_endpoint(endpoint) for endpoint in item.get("endpoints") or ()),
    )


def _endpoint(item: JSON) -> Endpoint:
    ready = (item.get("conditions") or {}).get("ready")
    hostname = item.get("hostname")
    return Endpoint(
        addresses=tuple(str(address) for address in item.get("addresses") or ()),
        ready=ready is not False,
        hostname=str(hostname) if hostname else None,
    )


class ApiReadError(RuntimeError):
    """The API server answered a list call with an error status."""


class KubernetesClusterSource:
    """Lists a namespace's Services and EndpointSlices from the API server on every call.

    The JSON bodies are read as they are: the client's generated models would only slow each
    lookup down and be turned back into plain values anyway.
    """

    def __init__(self, kubeconfig: Path) -> None:
        self._api = config.new_client_from_config(config_file=str(kubeconfig))  # type: ignore[no-untyped-call]

    def namespace_snapshot(self, namespace: str) -> ClusterSnapshot:
        """Two list calls: ``/api/v1/…/services`` and ``/apis/discovery.k8s.io/v1/…``."""
        quoted = urllib.parse.quote(namespace, safe="")
        return snapshot_from_lists(
            self._get(f"/api/v1/namespaces/{quoted}/services"),
            self._get(f"/apis/discovery.k8s.io/v1/namespaces/{quoted}/endpointslices"),
        )

    def _get(self, path: str) -> JSON:
        request = self._api.param_serialize("GET", path, auth_settings=["BearerToken"])
        response = self._api.call_api(*request, _request_timeout=API_TIMEOUT)
        body = response.read()
        if not 200 <= response.status < 300:
            raise ApiReadError(f"GET {path}: HTTP {response.status}")
        document: JSON = json.loads(body)
        return document


class CachedClusterSource:
    """Reuses another source's snapshot of a namespace for up to ``max_age`` seconds."""

    def __init__(
        self,
        source: ClusterSource,
        *,
        max_age: float = SNAPSHOT_MAX_AGE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source = source
        self._max_age = max_age
        self._clock = clock
        self._lock = threading.Lock()
        self._snapshots: dict[str, tuple[float, ClusterSnapshot]] = {}

    def namespace_snapshot(self, namespace: str) -> ClusterSnapshot:
        """The cached snapshot while fresh, else a new one (timed from when it was asked)."""
        asked_at = self._clock()
        with self._lock:
            cached = self._snapshots.get(namespace)
        if cached is not None and asked_at - cached[0] < self._max_age:
            return cached[1]
        snapshot = self._source.namespace_snapshot(namespace)
        with self._lock:
            self._snapshots[namespace] = (asked_at, snapshot)
        return snapshot


# --------------------------------------------------------------------------------------------
# DNS messages


@dataclass(frozen=True)
class ClusterResolver:
    """Answers questions about cluster names from a source of snapshots."""

    source: ClusterSource
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN

    def resolve(self, name: str, record_type: dns.rdatatype.RdataType) -> DnsAnswer:
        """Parse ``name``, read the snapshot it needs (if any) and answer."""
        parsed = parse_name(name, self.cluster_domain)
        namespace = snapshot_namespace(parsed)
        snapshot = (
            EMPTY_SNAPSHOT if namespace is None else self.source.namespace_snapshot(namespace)
        )
        return answer_parsed(parsed, record_type, snapshot)


def respond(query_wire: bytes, resolver: ClusterResolver, *, max_size: int | None) -> bytes | None:
    """The wire response to a wire query, or None to drop it (unparseable, or a response).

    ``max_size`` is the transport's limit: None for UDP (512 bytes, or the query's EDNS
    payload size), where a larger answer is replaced by an empty one with TC set.
    """
    try:
        query = dns.message.from_wire(query_wire)
    except dns.exception.DNSException:
        return None
    if query.flags & dns.flags.QR:
        return None
    response = dns.message.make_response(query)
    _fill_response(query, response, resolver)
    limit = max_size if max_size is not None else _udp_payload(query)
    try:
        return response.to_wire(max_size=limit)
    except dns.exception.TooBig:
        response.answer.clear()
        response.flags |= dns.flags.TC
        return response.to_wire(max_size=limit)


def _fill_response(
    query: dns.message.Message, response: dns.message.Message, resolver: ClusterResolver
) -> None:
    """Set the response code, AA flag and answer records of ``response``."""
    if query.opcode() != dns.opcode.QUERY:
        response.set_rcode(dns.rcode.NOTIMP)
        return
    if len(query.question) != 1:
        response.set_rcode(dns.rcode.FORMERR)
        return
    question = query.question[0]
    if question.rdclass != dns.rdataclass.IN:
        response.set_rcode(dns.rcode.REFUSED)
        return
    try:
        result = resolver.resolve(question.name.to_text(omit_final_dot=True), question.rdtype)
    except Exception:
        log.warning("cluster DNS lookup of %s failed", question.name, exc_info=True)
        response.set_rcode(dns.rcode.SERVFAIL)
        return
    response.set_rcode(result.rcode)
    if result.authoritative:
        response.flags |= dns.flags.AA
    if result.addresses:
        response.answer.append(
            dns.rrset.from_text_list(
                question.name, TTL, dns.rdataclass.IN, dns.rdatatype.A, list(result.addresses)
            )
        )


def _udp_payload(query: dns.message.Message) -> int:
    """How large a UDP response the client accepts."""
    return max(PLAIN_UDP_PAYLOAD, query.payload) if query.edns >= 0 else PLAIN_UDP_PAYLOAD


# --------------------------------------------------------------------------------------------
# Servers


class _UdpServer(socketserver.ThreadingUDPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, address: tuple[str, int], resolver: ClusterResolver) -> None:
        self.resolver = resolver
        self.address_family = _address_family(address[0])
        super().__init__(address, _UdpHandler)


class _TcpServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], resolver: ClusterResolver) -> None:
        self.resolver = resolver
        self.address_family = _address_family(address[0])
        super().__init__(address, _TcpHandler)


def _address_family(address: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in address else socket.AF_INET


def _resolver_of(server: socketserver.BaseServer) -> ClusterResolver:
    assert isinstance(server, _UdpServer | _TcpServer)
    return server.resolver


class _UdpHandler(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        query_wire: bytes = self.request[0]
        sock: socket.socket = self.request[1]
        reply = respond(query_wire, _resolver_of(self.server), max_size=None)
        if reply is not None:
            sock.sendto(reply, self.client_address)


class _TcpHandler(socketserver.StreamRequestHandler):
    """Length-prefixed messages, answered in turn until the client closes or goes idle."""

    timeout = TCP_IDLE_TIMEOUT

    def handle(self) -> None:
        resolver = _resolver_of(self.server)
        with contextlib.suppress(OSError):
            while len(prefix := self.rfile.read(2)) == 2:
                query_wire = self.rfile.read(int.from_bytes(prefix, "big"))
                reply = respond(query_wire, resolver, max_size=TCP_MESSAGE_LIMIT)
                if reply is None:
                    return
                self.wfile.write(len(reply).to_bytes(2, "big") + reply)


@dataclass(frozen=True)
class ClusterDns:
    """A running cluster DNS server: where it listens and the domain it answers for."""

    address: str
    port: int
    cluster_domain: str


@contextlib.contextmanager
def serving_cluster_dns(
    source: ClusterSource,
    *,
    address: str,
    port: int = DEFAULT_PORT,
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
) -> Iterator[ClusterDns]:
    """Serve names from ``source`` on UDP and TCP ``address:port`` until the block exits.

    Port 0 takes a port free for both protocols.
    """
    resolver = ClusterResolver(source, normalise_name(cluster_domain))
    servers = _bind_servers(address, port, resolver)
    threads = [
        threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": POLL_INTERVAL},
            name=f"cluster-dns-{kind}",
            daemon=True,
        )
        for kind, server in zip(("udp", "tcp"), servers, strict=True)
    ]
    for thread in threads:
        thread.start()
    try:
        bound_port = int(servers[0].socket.getsockname()[1])
        yield ClusterDns(address=address, port=bound_port, cluster_domain=resolver.cluster_domain)
    finally:
        for server in servers:
            server.shutdown()
            server.server_close()
        for thread in threads:
            thread.join()


def _bind_servers(
    address: str, port: int, resolver: ClusterResolver
) -> tuple[_UdpServer, _TcpServer]:
    """Bind UDP and TCP on one port; for port 0, retry when TCP's half is taken."""
    for _ in range(PORT_ATTEMPTS - 1 if port == 0 else 0):
        with contextlib.suppress(OSError):
            return _bind_server_pair(address, port, resolver)
    return _bind_server_pair(address, port, resolver)


def _bind_server_pair(
    address: str, port: int, resolver: ClusterResolver
) -> tuple[_UdpServer, _TcpServer]:
    udp = _UdpServer((address, port), resolver)
    try:
        return udp, _TcpServer((address, int(udp.socket.getsockname()[1])), resolver)
    except OSError:
        udp.server_close()
        raise


@contextlib.contextmanager
def running_cluster_dns(
    *,
    kubeconfig: Path,
    address: str,
    port: int = DEFAULT_PORT,
    cluster_domain: str = DEFAULT_CLUSTER_DOMAIN,
) -> Iterator[ClusterDns]:
    """Serve cluster names read through ``kubeconfig`` on ``address:port`` (UDP and TCP)."""
    source = CachedClusterSource(KubernetesClusterSource(kubeconfig))
    with serving_cluster_dns(
        source, address=address, port=port, cluster_domain=cluster_domain
    ) as cluster_dns:
        yield cluster_dns


# --------------------------------------------------------------------------------------------
# Command line: ``python -m tests.services.kube_dns --kubeconfig K --address A``


def main(argv: Sequence[str]) -> int:
    """Serve until Ctrl-C."""
    parser = argparse.ArgumentParser(prog="kube_dns", description=main.__doc__)
    parser.add_argument("--kubeconfig", type=Path, required=True)
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--cluster-domain", default=DEFAULT_CLUSTER_DOMAIN)
    arguments = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    with running_cluster_dns(
        kubeconfig=arguments.kubeconfig,
        address=arguments.address,
        port=arguments.port,
        cluster_domain=arguments.cluster_domain,
    ) as cluster_dns:
        print(f"cluster DNS on {cluster_dns.address}:{cluster_dns.port}; Ctrl-C stops it.")
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
