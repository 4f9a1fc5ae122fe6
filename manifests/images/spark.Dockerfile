# The Spark image for CdcSink SparkApplications: Apache Spark 4.0 with Python, cdcflow's
# sparkapps, and the Kafka-source and Delta jars baked in (no Ivy resolve at start).
# Build from the repository root:  docker build -f manifests/images/spark.Dockerfile -t cdcflow-spark .
FROM apache/spark:4.0.1-python3
USER root
COPY pyproject.toml README.md /src/
COPY capture /src/capture
COPY operator /src/operator
COPY sparkapps /src/sparkapps
RUN pip install --no-cache-dir "/src[spark]" \
 && CDCFLOW_CACHE=/opt/cdcflow python3 -m cdcflow.sparkapps.session \
 && cp /opt/cdcflow/spark/jars/*/*.jar "$SPARK_HOME/jars/" \
 && printf 'import sys\nfrom cdcflow.sparkapps.sink import main\nsys.exit(main())\n' > /opt/cdcflow/sink_main.py
USER spark
ENV CDCFLOW_CACHE=/opt/cdcflow
