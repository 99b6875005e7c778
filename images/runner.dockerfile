# The runner image (the controller's CAPTF_RUNNER_IMAGE): the runner's single executable on a distroless
# glibc base. The Job's init container runs `/runner copy /captf/bin`, which copies the executable with the
# loader and libraries it runs under, so module images need no libc (docs/image-contract.md).
# Build from the repository root: scripts/build-images.sh, or
#   docker build -f images/runner.dockerfile -t <ref> .
# The build stage's only layout step is images/tree.ts, which test/integration/images/ runs as well.
FROM node:24.21.0-bookworm AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY functions ./functions
COPY src ./src
COPY images ./images
RUN npm run build:runner && node_modules/.bin/node images/tree.ts runner /out

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/ /
USER 65532:65532
ENTRYPOINT ["/runner"]
