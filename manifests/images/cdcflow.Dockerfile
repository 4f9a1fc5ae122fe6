# The capture and operator image: `cdcflow capture` (CdcConnector pods) and `cdcflow operator`.
# Build from the repository root:  docker build -f manifests/images/cdcflow.Dockerfile -t cdcflow .
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY capture capture
COPY operator operator
COPY sparkapps sparkapps
RUN pip install --no-cache-dir --prefix=/install ".[capture,operator]"

FROM python:3.11-slim
COPY --from=build /install /usr/local
RUN useradd --uid 1000 --create-home cdcflow
USER 1000
ENTRYPOINT ["cdcflow"]
CMD ["--help"]
