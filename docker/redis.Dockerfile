# Redis from Debian's package, on the locally built base image (docker/base.sh): the session store
# the server replicas of compose.yaml share. Sessions are short-lived, so nothing is persisted.
ARG BASE=igym-base:bookworm
FROM ${BASE}
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends redis-server \
    && rm -rf /var/lib/apt/lists/*
USER redis
EXPOSE 6379
HEALTHCHECK --interval=5s --timeout=3s --retries=5 CMD ["redis-cli", "ping"]
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"]
