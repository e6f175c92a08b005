# First draft: multi-stage build of dcserve. The build stage follows the Makefile (make build).
FROM swift:6.2-noble AS build
WORKDIR /src
COPY . .
RUN apt-get update && apt-get install -y --no-install-recommends make python3 python3-pip python3-venv \
    libzstd-dev libssl-dev zlib1g-dev pkg-config && rm -rf /var/lib/apt/lists/*
RUN make build

FROM ubuntu:24.04
RUN apt-get update && apt-get install -y --no-install-recommends libzstd1 libssl3t64 zlib1g ca-certificates curl \
    && rm -rf /var/lib/apt/lists/* && useradd --system --home /var/lib/dcserve dcserve
COPY --from=build /src/.build/release/dcserve /usr/local/bin/dcserve
USER dcserve
ENTRYPOINT ["/usr/local/bin/dcserve"]
