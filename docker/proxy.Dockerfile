# The one entry point of compose.yaml: HAProxy from Debian's package, spreading requests over the
# server replicas round-robin (docker/haproxy.cfg), on the locally built base image.
ARG BASE=igym-base:bookworm
FROM ${BASE}
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends haproxy \
    && rm -rf /var/lib/apt/lists/*
COPY haproxy.cfg /etc/haproxy/haproxy.cfg
USER haproxy
EXPOSE 7860
CMD ["haproxy", "-db", "-f", "/etc/haproxy/haproxy.cfg"]
