# One image for both Deployments of the Helm chart; each gives the command
# (["citerun", "operator"] or ["citerun", "worker"]), so there is no ENTRYPOINT.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    # The embedder's weights ship inside the wordllama wheel: never download at run time.
    HF_HUB_OFFLINE=1 \
    # The root filesystem is read-only in the chart; /tmp is an emptyDir.
    HOME=/tmp

WORKDIR /src
# Only what the distribution is built from (see [tool.setuptools] in pyproject.toml).
COPY pyproject.toml README.md ./
COPY citerun/ citerun/
COPY operator/ operator/
COPY worker/ worker/
COPY migrations/ migrations/
# Runtime dependencies only: no [test] or [bench] extras. Not editable, so /src can go.
RUN pip install . \
    && rm -rf /src \
    && groupadd --system --gid 10001 citerun \
    && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
       --shell /usr/sbin/nologin citerun

WORKDIR /tmp
USER 10001:10001
