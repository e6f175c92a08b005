# dcserve container image. No Docker engine runs on the project's machines: the build stage runs
# exactly the Makefile's `make build` (the path CI tests), and Tests/integration/test_dockerfile.py
# checks this file's structure so it cannot rot silently.
#
#   docker build -t dcserve .
#   docker run -p 8080:8080 -p 9090:9090 -v dcserve-dictionaries:/var/lib/dcserve/dictionaries dcserve

# --- build: Swift on Ubuntu 24.04; brotli 1.2.1 is built by the Makefile as in development --------
FROM swift:6.3-noble AS build
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends make \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN make build && cp .build/release/dcserve /usr/local/bin/dcserve && dcserve --version

# --- runtime: slim Swift runtime, non-root, tini as PID 1 forwarding SIGTERM ------------------------
FROM swift:6.3-noble-slim AS runtime
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
       libzstd1 zlib1g libssl3t64 ca-certificates curl tini \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/dcserve --shell /usr/sbin/nologin dcserve \
    && mkdir -p /etc/dcserve /var/lib/dcserve/dictionaries /srv/www \
    && chown -R dcserve:dcserve /var/lib/dcserve
COPY --from=build /usr/local/bin/dcserve /usr/local/bin/dcserve
COPY Config/ /etc/dcserve/
COPY examples/site/ /srv/www/
# The example configuration binds 127.0.0.1 and uses relative paths; in the container it listens on
# all interfaces and uses the volumes below (environment overrides, see README "Configuration").
ENV DCSERVE_SERVER_HOST=0.0.0.0 \
    DCSERVE_SERVER_PORT=8080 \
    DCSERVE_ADMIN_HOST=0.0.0.0 \
    DCSERVE_ADMIN_PORT=9090 \
    DCSERVE_SITE_ROOT=/srv/www \
    DCSERVE_STORE_PATH=/var/lib/dcserve/dictionaries
VOLUME ["/etc/dcserve", "/var/lib/dcserve/dictionaries"]
USER dcserve
WORKDIR /var/lib/dcserve
EXPOSE 8080 8443 9090
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD curl -fsS http://127.0.0.1:8080/healthz || exit 1
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/dcserve"]
CMD ["serve", "--config", "/etc/dcserve/dcserve.json"]
