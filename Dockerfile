# integrity-gym server: every environment over OpenEnv's WebSocket protocol and stateful HTTP, on
# port 7860 (what a Hugging Face Space expects), as the non-root user igym (uid 1000).
#
# Built by `make image` (docs/container.md), which needs no image registry:
#   1. docker/base.sh makes the base image (debootstrap'ed Debian bookworm + python3) locally;
#   2. the host builds the wheels (`pip wheel`, through the host's own package settings) into
#      build/wheels, the only thing this build reads from the context (.dockerignore);
#   3. they are installed here with --no-index, so the build itself downloads nothing.
#
#   docker run -p 7860:7860 integrity-gym
# Settings come from IGYM_* variables (IGYM_SESSIONS=redis://host:6379/0 to share sessions
# between replicas, IGYM_ADMIN_TOKEN, IGYM_MAX_SESSIONS, ...); see compose.yaml.
ARG BASE=igym-base:bookworm

FROM ${BASE} AS build
COPY build/wheels /wheels
RUN python3 -m venv /opt/igym \
    && /opt/igym/bin/pip install --no-index --no-cache-dir --find-links /wheels 'integrity-gym[server,redis]' \
    && /opt/igym/bin/pip uninstall --yes pip \
    && find /opt/igym -name __pycache__ -prune -exec rm -rf {} +

FROM ${BASE}
COPY --from=build /opt/igym /opt/igym
RUN useradd --create-home --uid 1000 --shell /usr/sbin/nologin igym
ENV PATH=/opt/igym/bin:$PATH PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 LANG=C.UTF-8
USER igym
WORKDIR /home/igym
EXPOSE 7860
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:7860/health', timeout=4)"]
CMD ["python3", "-m", "integrity_gym.server", "--host", "0.0.0.0", "--port", "7860"]
