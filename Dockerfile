# One image per function: docker build --build-arg FUNCTION=set-image -t krmfn-set-image .
# The entrypoint takes no arguments and reads a ResourceList on stdin, as kpt (`image:`) and
# kustomize (`container:`) run KRM functions. FUNCTION is one of the registry's names or `render`.
ARG PYTHON_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS builder
WORKDIR /src
COPY pyproject.toml README.md ./
COPY krmfn ./krmfn
# Wheels for krmfn and its dependencies only; the final stage installs them without network or compiler.
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM ${PYTHON_IMAGE}
ARG FUNCTION=set-image
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    KRMFN_FUNCTION=${FUNCTION}
COPY --from=builder /wheels /wheels
# The entrypoint is a symlink made at build time, so running the image needs no shell, and an unknown
# FUNCTION fails the build instead of every run. pip, setuptools and wheel leave with the wheels.
RUN pip install --no-cache-dir --no-index /wheels/*.whl \
    && rm -rf /wheels \
    && ln -s "$(command -v "krmfn-${FUNCTION}")" /usr/local/bin/krmfn-function \
    && /usr/local/bin/krmfn-function --help > /dev/null \
    && pip uninstall --yes --no-cache-dir pip setuptools wheel
USER 65534:65534
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/krmfn-function"]
