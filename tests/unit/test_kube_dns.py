"""The cluster DNS dev service: answering rules, API snapshots, caching and the UDP/TCP server."""

from __future__ import annotations

from typing import Any

import dns.flags
import dns.message
import dns.query
import dns.rcode
import dns.rdatatype
import pytest

from tests.services import kube_dns
from tests.services.kube_dns import (
    CachedClusterSource,
    ClusterResolver,
    ClusterSnapshot,
    DnsAnswer,
    Endpoint,
    EndpointSlice,
    Service,
    answer,
)

A = dns.rdatatype.A
AAAA = dns.rdatatype.AAAA
NOERROR = dns.rcode.NOERROR
NXDOMAIN = dns.rcode.NXDOMAIN

SNAPSHOT = ClusterSnapshot(
    services=(
        Service("default", "kubernetes", cluster_ip="10.0.0.1"),
        Service("shop", "orders-capture"),
        Service("shop", "plain", cluster_ip="10.0.0.40"),
        Service("shop", "idle"),
        Service("spark", "app-driver-svc"),
    ),
    endpoint_slices=(
        # never answered: the API Service answers its ClusterIP instead
        EndpointSlice("default", "kubernetes", (Endpoint(("127.0.0.1",)),)),
        EndpointSlice(
            "shop",
            "orders-capture",
            (
                Endpoint(("10.213.0.7",), hostname="orders-capture-0"),
                Endpoint(("10.213.0.8",), ready=False, hostname="orders-capture-1"),
            ),
        ),
        EndpointSlice(
            "shop",
            "orders-capture",
            (
                Endpoint(("10.213.0.7",), hostname="orders-capture-0"),
                Endpoint(("10.213.0.12",), hostname="orders-capture-2"),
            ),
        ),
        EndpointSlice("shop", "plain", (Endpoint(("10.213.0.9",)), Endpoint(("10.213.0.10",)))),
        EndpointSlice("shop", "plain", (Endpoint(("fd00::9",)),), address_type="IPv6"),
        EndpointSlice("shop", "idle", (Endpoint(("10.213.0.11",), ready=False),)),
        EndpointSlice("spark", "app-driver-svc", (Endpoint(("10.213.0.20",)),)),
    ),
)


def addresses(*values: str) -> DnsAnswer:
    return DnsAnswer(NOERROR, values)


def test_the_api_service_answers_its_cluster_ip() -> None:
    assert answer("kubernetes.default.svc.cluster.local", A, SNAPSHOT) == addresses("10.0.0.1")


def test_other_services_answer_ready_ipv4_endpoints_even_with_a_cluster_ip() -> None:
    assert answer("plain.shop.svc.cluster.local", A, SNAPSHOT) == addresses(
        "10.213.0.9", "10.213.0.10"
    )


def test_headless_service_answers_ready_endpoints_of_all_slices_once_each() -> None:
    assert answer("orders-capture.shop.svc.cluster.local", A, SNAPSHOT) == addresses(
        "10.213.0.7", "10.213.0.12"
    )
    assert answer("app-driver-svc.spark.svc.cluster.local", A, SNAPSHOT) == addresses("10.213.0.20")


def test_service_without_ready_endpoints_exists_without_addresses() -> None:
    assert answer("idle.shop.svc.cluster.local", A, SNAPSHOT) == DnsAnswer(NOERROR)


def test_endpoint_hostname_answers_that_endpoint() -> None:
    name = "orders-capture-2.orders-capture.shop.svc.cluster.local"
    assert answer(name, A, SNAPSHOT) == addresses("10.213.0.12")


def test_endpoint_not_ready_or_unknown_is_nxdomain() -> None:
    for hostname in ("orders-capture-1", "orders-capture-9"):
        name = f"{hostname}.orders-capture.shop.svc.cluster.local"
        assert answer(name, A, SNAPSHOT) == DnsAnswer(NXDOMAIN)


def test_endpoint_without_hostname_goes_by_its_dashed_address() -> None:
    assert answer("10-213-0-9.plain.shop.svc.cluster.local", A, SNAPSHOT) == addresses("10.213.0.9")
    # an endpoint with a hostname is not also named by its address
    name = "10-213-0-7.orders-capture.shop.svc.cluster.local"
    assert answer(name, A, SNAPSHOT) == DnsAnswer(NXDOMAIN)


def test_pod_name_answers_its_dashed_address() -> None:
    snapshot = ClusterSnapshot()
    assert answer("10-213-0-5.shop.pod.cluster.local", A, snapshot) == addresses("10.213.0.5")
    assert answer("10-213-0-999.shop.pod.cluster.local", A, snapshot) == DnsAnswer(NXDOMAIN)
    assert answer("not-an-ip.shop.pod.cluster.local", A, snapshot) == DnsAnswer(NXDOMAIN)


@pytest.mark.parametrize(
    "name",
    [
        "kubernetes.default.svc.cluster.local",
        "orders-capture.shop.svc.cluster.local",
        "orders-capture-0.orders-capture.shop.svc.cluster.local",
        "10-213-0-5.shop.pod.cluster.local",
        "cluster.local",
    ],
)
@pytest.mark.parametrize("record_type", [AAAA, dns.rdatatype.MX, dns.rdatatype.TXT])
def test_other_types_of_known_names_have_no_records(
    name: str, record_type: dns.rdatatype.RdataType
) -> None:
    assert answer(name, record_type, SNAPSHOT) == DnsAnswer(NOERROR)


@pytest.mark.parametrize(
    "name",
    [
        "missing.shop.svc.cluster.local",
        "orders-capture.elsewhere.svc.cluster.local",
        "orders-capture.shop.svc.shop.svc.cluster.local",  # search-path misses
        "orders-capture.shop.shop.svc.cluster.local",
        "kubernetes.default.svc.svc.cluster.local",
        "kubernetes.default.svc.cluster.local.shop.svc.cluster.local",
        "orders-capture.cluster.local",
        "nothing.svc.cluster.local",
        "a.b.c.d.e.pod.cluster.local",
    ],
)
def test_unknown_names_in_the_cluster_domain_are_nxdomain(name: str) -> None:
    assert answer(name, A, SNAPSHOT) == DnsAnswer(NXDOMAIN)
    assert answer(name, AAAA, SNAPSHOT) == DnsAnswer(NXDOMAIN)


@pytest.mark.parametrize(
    "name", ["example.com", "kubernetes.default.svc", "evilcluster.local", "cluster.local.evil.com"]
)
def test_names_outside_the_cluster_domain_are_nxdomain_and_not_authoritative(
    name: str,
) -> None:
    assert answer(name, A, SNAPSHOT) == DnsAnswer(NXDOMAIN, authoritative=False)


def test_names_are_case_insensitive_and_may_end_with_a_dot() -> None:
    expected = addresses("10.213.0.7")
    for name in (
        "ORDERS-CAPTURE-0.Orders-Capture.SHOP.svc.Cluster.Local.",
        "orders-capture-0.orders-capture.shop.svc.cluster.local.",
    ):
        assert answer(name, A, SNAPSHOT) == expected


def test_another_cluster_domain() -> None:
    name = "plain.shop.svc.test.example"
    assert answer(name, A, SNAPSHOT, cluster_domain="Test.Example.") == addresses(
        "10.213.0.9", "10.213.0.10"
    )
    outside = answer("plain.shop.svc.cluster.local", A, SNAPSHOT, cluster_domain="test.example")
    assert outside == DnsAnswer(NXDOMAIN, authoritative=False)


def test_zone_nodes_and_namespaces_with_services_exist() -> None:
    for name in (
        "cluster.local",
        "svc.cluster.local",
        "pod.cluster.local",
        "shop.pod.cluster.local",
    ):
        assert answer(name, A, SNAPSHOT) == DnsAnswer(NOERROR)
    assert answer("shop.svc.cluster.local", A, SNAPSHOT) == DnsAnswer(NOERROR)
    assert answer("empty.svc.cluster.local", A, SNAPSHOT) == DnsAnswer(NXDOMAIN)


def test_snapshot_from_api_lists() -> None:
    services: dict[str, Any] = {
        "items": [
            {"metadata": {"namespace": "shop", "name": "h"}, "spec": {"clusterIP": "None"}},
            {"metadata": {"namespace": "shop", "name": "c"}, "spec": {"clusterIP": "10.0.0.9"}},
            {"metadata": {"namespace": "shop", "name": "x"}, "spec": {"type": "ExternalName"}},
        ]
    }
    slices: dict[str, Any] = {
        "items": [
            {
                "metadata": {
                    "namespace": "shop",
                    "labels": {"kubernetes.io/service-name": "h"},
                },
                "addressType": "IPv4",
                "endpoints": [
                    {"addresses": ["10.213.0.7"], "hostname": "h-0"},
                    {"addresses": ["10.213.0.8"], "conditions": {"ready": False}},
                    {"addresses": ["10.213.0.9"], "conditions": {"ready": True}},
                ],
            },
            {"metadata": {"namespace": "shop"}, "addressType": "IPv4", "endpoints": []},
            {
                "metadata": {"namespace": "shop", "labels": {"kubernetes.io/service-name": "c"}},
                "addressType": "IPv4",
                "endpoints": None,
            },
        ]
    }
    assert kube_dns.snapshot_from_lists(services, slices) == ClusterSnapshot(
        services=(Service("shop", "h"), Service("shop", "c", "10.0.0.9"), Service("shop", "x")),
        endpoint_slices=(
            EndpointSlice(
                "shop",
                "h",
                (
                    Endpoint(("10.213.0.7",), hostname="h-0"),
                    Endpoint(("10.213.0.8",), ready=False),
                    Endpoint(("10.213.0.9",)),
                ),
            ),
            EndpointSlice("shop", "c", ()),
        ),
    )
    assert kube_dns.snapshot_from_lists({"items": None}, {}) == ClusterSnapshot()


class FakeSource:
    """An in-memory :class:`kube_dns.ClusterSource` that counts its reads."""

    def __init__(self, snapshot: ClusterSnapshot = SNAPSHOT) -> None:
        self.snapshot = snapshot
        self.reads: list[str] = []

    def namespace_snapshot(self, namespace: str) -> ClusterSnapshot:
        self.reads.append(namespace)
        return self.snapshot


class FailingSource:
    def namespace_snapshot(self, namespace: str) -> ClusterSnapshot:
        raise OSError("API server unreachable")


def test_cached_source_reuses_a_snapshot_for_max_age_only() -> None:
    now = [100.0]
    fake = FakeSource()
    cached = CachedClusterSource(fake, max_age=1.0, clock=lambda: now[0])
    cached.namespace_snapshot("shop")
    now[0] += 0.9
    cached.namespace_snapshot("shop")
    cached.namespace_snapshot("spark")
    assert fake.reads == ["shop", "spark"]
    now[0] += 0.2
    cached.namespace_snapshot("shop")
    assert fake.reads == ["shop", "spark", "shop"]


def test_resolver_reads_only_the_namespace_a_name_needs() -> None:
    fake = FakeSource()
    resolver = ClusterResolver(fake)
    resolver.resolve("orders-capture.shop.svc.cluster.local", A)
    resolver.resolve("10-213-0-5.shop.pod.cluster.local", A)
    resolver.resolve("example.com", A)
    assert fake.reads == ["shop"]


def wire_response(
    resolver: ClusterResolver, query: dns.message.Message, max_size: int | None = None
) -> dns.message.Message:
    reply = kube_dns.respond(query.to_wire(), resolver, max_size=max_size)
    assert reply is not None
    return dns.message.from_wire(reply)


def test_response_is_authoritative_with_ttl_five_and_the_question_case() -> None:
    query = dns.message.make_query("Plain.Shop.svc.cluster.local", A)
    response = wire_response(ClusterResolver(FakeSource()), query)
    assert response.rcode() == NOERROR
    assert response.flags & dns.flags.AA
    assert not response.flags & dns.flags.RA
    (rrset,) = response.answer
    assert rrset.name == query.question[0].name
    assert rrset.ttl == kube_dns.TTL == 5
    assert sorted(rdata.to_text() for rdata in rrset) == ["10.213.0.10", "10.213.0.9"]


def test_response_outside_the_domain_is_not_authoritative() -> None:
    response = wire_response(
        ClusterResolver(FakeSource()), dns.message.make_query("example.com", A)
    )
    assert response.rcode() == NXDOMAIN
    assert not response.flags & dns.flags.AA
    assert not response.answer


def test_a_failing_source_answers_servfail() -> None:
    query = dns.message.make_query("plain.shop.svc.cluster.local", A)
    assert wire_response(ClusterResolver(FailingSource()), query).rcode() == dns.rcode.SERVFAIL


def test_udp_answer_too_large_is_truncated_and_tcp_carries_it_whole() -> None:
    many = tuple(Endpoint((f"10.213.1.{index}",)) for index in range(1, 101))
    source = FakeSource(
        ClusterSnapshot(
            services=(Service("big", "wide"),),
            endpoint_slices=(EndpointSlice("big", "wide", many),),
        )
    )
    query = dns.message.make_query("wide.big.svc.cluster.local", A, use_edns=False)
    truncated = wire_response(ClusterResolver(source), query)
    assert truncated.flags & dns.flags.TC
    assert not truncated.answer
    whole = wire_response(ClusterResolver(source), query, max_size=kube_dns.TCP_MESSAGE_LIMIT)
    assert len(whole.answer[0]) == 100


def test_responses_and_garbage_are_dropped() -> None:
    resolver = ClusterResolver(FakeSource())
    response = dns.message.make_response(dns.message.make_query("plain.shop.svc.cluster.local", A))
    assert kube_dns.respond(response.to_wire(), resolver, max_size=None) is None
    assert kube_dns.respond(b"\x00\x01garbage", resolver, max_size=None) is None


def test_server_answers_over_udp_and_tcp_from_an_injected_source() -> None:
    with kube_dns.serving_cluster_dns(FakeSource(), address="127.0.0.1", port=0) as cluster_dns:
        assert cluster_dns.port > 0
        udp = dns.query.udp(
            dns.message.make_query("orders-capture.shop.svc.cluster.local", A),
            cluster_dns.address,
            port=cluster_dns.port,
            timeout=5,
        )
        assert udp.rcode() == NOERROR
        assert sorted(rdata.to_text() for rdata in udp.answer[0]) == ["10.213.0.12", "10.213.0.7"]
        outside = dns.query.udp(
            dns.message.make_query("example.com", A),
            cluster_dns.address,
            port=cluster_dns.port,
            timeout=5,
        )
        assert outside.rcode() == NXDOMAIN
        tcp = dns.query.tcp(
            dns.message.make_query("kubernetes.default.svc.cluster.local", A),
            cluster_dns.address,
            port=cluster_dns.port,
            timeout=5,
        )
        assert [rdata.to_text() for rdata in tcp.answer[0]] == ["10.0.0.1"]
