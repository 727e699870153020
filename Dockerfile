# One image per function: docker build --build-arg FUNCTION=set-image -t krmfn-set-image .
# The entrypoint takes no arguments and reads a ResourceList on stdin, as kpt (`image:`) and
# kustomize (`container:`) run KRM functions. FUNCTION is one of the registry's names or `render`.
# See docs/container.md: the build args, the air-gapped build (WHEELS=local) and a Debian-built base.
#
# PYTHON_IMAGE: any image with python3 (3.11 or newer) and /bin/sh; pip is not needed in it.
# WHEELS=index: the wheels stage runs `pip wheel` against the package index (needs network).
# WHEELS=local: the wheels come from ./wheels in the build context, made on the host with
#   `pip wheel --wheel-dir wheels . pip`; the build then needs no network at all.
ARG PYTHON_IMAGE=python:3.11-slim
ARG WHEELS=index

FROM ${PYTHON_IMAGE} AS wheels-index
WORKDIR /src
COPY pyproject.toml README.md ./
COPY krmfn ./krmfn
# pip's own wheel too: the install stage runs pip from it and never installs it.
RUN pip wheel --no-cache-dir --wheel-dir /wheels . pip

FROM scratch AS wheels-local
COPY wheels/ /wheels/

# hadolint ignore=DL3006
FROM wheels-${WHEELS} AS wheels

# krmfn goes into its own virtual environment, installed offline by pip run from its wheel, so the
# image holds no installer and the base's own Python packages (or a distribution's PEP 668 marker) do
# not matter. pip compiles the bytecode here: at run time the files are read-only to the user.
# A stage of its own, copied below: the wheels stay out of the image's layers, and the copy is
# cached by its content (a RUN with the wheels bind-mounted is not, under buildah).
FROM ${PYTHON_IMAGE} AS install
COPY --from=wheels /wheels /wheels
RUN python3 -m venv --without-pip /opt/krmfn \
    && set -- /wheels/pip-*.whl \
    && /opt/krmfn/bin/python "$1/pip" install --no-cache-dir --no-index \
       --disable-pip-version-check --find-links /wheels krmfn

FROM ${PYTHON_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# A base that ships pip (the default one does) loses it: the image runs functions, it installs nothing.
RUN if python3 -m pip --version > /dev/null 2>&1; then \
      python3 -m pip uninstall --yes --no-cache-dir pip setuptools wheel; fi
# This layer does not depend on FUNCTION, so the images of all functions share it.
COPY --from=install /opt/krmfn /opt/krmfn
ARG FUNCTION=set-image
ENV KRMFN_FUNCTION=${FUNCTION}
# The entrypoint is a symlink made at build time, so running the image needs no shell, and an unknown
# FUNCTION fails the build instead of every run.
RUN ln -s "/opt/krmfn/bin/krmfn-${FUNCTION}" /usr/local/bin/krmfn-function \
    && /usr/local/bin/krmfn-function --help > /dev/null
USER 65534:65534
WORKDIR /tmp
ENTRYPOINT ["/usr/local/bin/krmfn-function"]
