# taugrid container image: tau-aggregator, tau-node-agent and tau on Debian bookworm-slim.
# Build with a container engine:  docker build -t taugrid:0.1.0 .
# Without one, `make image` builds the same content as an OCI layout (scripts/build-image:
# mmdebstrap + umoci); docs/install.md, "Image".

# --- build stage: the toolchain and the -dev packages, never shipped --------------------------
FROM debian:bookworm AS build
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake make pkg-config gcc libcurl4-openssl-dev libcjson-dev libprotobuf-c-dev \
      protobuf-c-compiler protobuf-compiler libgrpc-dev grpc-proto libssl-dev \
      libmicrohttpd-dev libyaml-dev ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DTAU_PYTHON_TESTS=OFF \
    && cmake --build /build -j"$(nproc)" --target tau-aggregator tau-node-agent tau-cli \
    && mkdir /out \
    && for b in tau-aggregator tau-node-agent tau; do strip --strip-unneeded -o /out/$b /build/$b; done

# --- runtime stage: only the shared libraries the binaries link --------------------------------
FROM debian:bookworm-slim
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libcurl4 libcjson1 libprotobuf-c1 libgrpc29 libssl3 libmicrohttpd12 \
      libyaml-0-2 \
    && rm -rf /var/lib/apt/lists/* /var/cache/* /var/log/* \
    && echo "nonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin" >> /etc/passwd \
    && echo "nonroot:x:65532:" >> /etc/group
COPY --from=build /out/ /usr/bin/
USER 65532:65532
ENTRYPOINT ["/usr/bin/tau-aggregator"]
