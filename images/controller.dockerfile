# The controller image: the handlers' bundle (Knative Service, infra/knative/service.yaml) and the relay's
# (infra/lambda/relay.yaml), on a distroless glibc base with no shell and no package manager, as non-root.
# Build from the repository root: scripts/build-images.sh, or
#   docker build -f images/controller.dockerfile -t <ref> .
# The build stage's only layout step is images/tree.ts, which test/integration/images/ runs as well.
FROM node:24.21.0-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY functions ./functions
COPY src ./src
COPY images ./images
RUN npm run build:bundles && node_modules/.bin/node images/tree.ts controller /out

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/ /
ENV NODE_ENV=production NODE_COMPILE_CACHE=/app/compile-cache PORT=8080
USER 65532:65532
EXPOSE 8080
# --lite-mode: images/tree.ts NODE_FLAGS (the compile cache was warmed with the same flags).
ENTRYPOINT ["/usr/local/bin/node", "--lite-mode"]
CMD ["/app/controller/server.mjs"]
