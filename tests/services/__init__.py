"""Launchers of the real services the tests start — a Kubernetes node, Kafka Connect with
Debezium, MariaDB, … — never shipped in the wheel.

The kube-apiserver and the rest of the control plane (:mod:`tests.services.kube`), a real
single-node cluster (:mod:`tests.services.kube_node`, run inside the namespaces of
:mod:`tests.services.node_namespace`) with the images built from this checkout
(:mod:`tests.services.node_images`), kstatus (:mod:`tests.services.kstatus`), the Spark
operator (:mod:`tests.services.spark_operator`), Kafka Connect with Debezium
(:mod:`tests.services.kafka_connect`) and MariaDB (:mod:`tests.services.mariadb`). The
PostgreSQL and Kafka launchers that ``cdcflow demo`` also uses stay in
:mod:`cdcflow.operator.devservices`, whose helpers these modules share.
"""
