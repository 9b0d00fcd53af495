# The simulator in a container: `docker compose up` (see README.md) or `docker build -t kss . && docker run ...`.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# A regular (non-editable) install: the wheel carries templates/, static/ and migrations/ inside the package
# (setup.py), so the sources are removed once it is built and nothing is imported from the working directory. pip
# writes the bytecode as it installs: with PYTHONDONTWRITEBYTECODE every start would compile the app again (~0.5 s).
WORKDIR /tmp/kss-src
COPY pyproject.toml setup.py MANIFEST.in ./
COPY kss_sim ./kss_sim
COPY syncer ./syncer
COPY kss ./kss
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static
RUN pip install --compile ".[postgres]" \
    && cd / && rm -rf /tmp/kss-src \
    && useradd --system --uid 10001 --home-dir /data --no-create-home kss \
    && mkdir -p /data && chown kss /data
WORKDIR /data

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
