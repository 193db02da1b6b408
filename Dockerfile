# Builds the single `tranche` binary; templates and the stylesheet are compiled into it.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin tranche

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/tranche /usr/local/bin/tranche
USER nobody
ENV TRANCHE_LISTEN=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["tranche"]
CMD ["serve"]
