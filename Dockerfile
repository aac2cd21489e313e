# integrity-gym server: every environment over OpenEnv's WebSocket protocol and stateful HTTP.
#   docker build -t integrity-gym .
#   docker run -p 8000:8000 -e IGYM_ADMIN_TOKEN=... integrity-gym
# Several processes behind one address: add --workers N --sessions redis://HOST:6379/0.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install '.[server,redis]' && useradd --create-home igym
USER igym

EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health')"
CMD ["igym", "serve", "--host", "0.0.0.0", "--port", "8000"]
