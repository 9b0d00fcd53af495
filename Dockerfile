# The simulator in a container: `docker compose up` (see README.md) or `docker build -t kss . && docker run ...`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml alembic.ini ./
COPY app ./app
COPY syncer ./syncer
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static
# Editable install: migrations/, templates/ and static/ are found beside the package, as in a checkout. Its bytecode
# is compiled here: with PYTHONDONTWRITEBYTECODE every start would compile the app again (~0.5 s of CPU).
RUN pip install -e ".[postgres]" \
    && python -m compileall -q app syncer \
    && useradd --system --uid 10001 --home-dir /data --no-create-home kss \
    && mkdir -p /data && chown kss /data

USER kss
# The database lives on the /data volume so it survives container restarts and re-creation.
ENV KSS_DATABASE_URL=sqlite:////data/kss.db \
    KSS_TLS_DIR=/data/tls
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2)"]
# 0.0.0.0 inside the container only: compose publishes the port on the host's 127.0.0.1.
CMD ["kss", "serve", "--host", "0.0.0.0", "--port", "8000", "--log-level", "info"]
