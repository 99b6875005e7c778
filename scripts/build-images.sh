#!/usr/bin/env bash
# Builds the controller and runner images (images/controller.dockerfile, images/runner.dockerfile) with the
# first container builder found: docker (with a reachable engine), podman or buildah. Tags them with the
# references in infra/kustomization.yaml (the `captf-images` block), the one place they are set.
# Usage: scripts/build-images.sh [--push]
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

push=false
[[ ${1:-} == --push ]] && push=true

reference() {
  sed -n "s/^ *- $1=\(.*\)$/\1/p" infra/kustomization.yaml | head -n1
}
controller=$(reference controller)
runner=$(reference runner)
[[ -n $controller && -n $runner ]] || die "read infra/kustomization.yaml: no controller= or runner= in captf-images"

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
  build() { docker build -f "$1" -t "$2" .; }
  push_image() { docker push "$1"; }
elif command -v podman >/dev/null; then
  build() { podman build -f "$1" -t "$2" .; }
  push_image() { podman push "$1"; }
elif command -v buildah >/dev/null; then
  build() { buildah bud -f "$1" -t "$2" .; }
  push_image() { buildah push "$1"; }
else
  die "no container builder: need docker with a running engine, podman or buildah (docker info: $(docker info 2>&1 | tail -n1 || true))"
fi

say "building $controller (images/controller.dockerfile)"
build images/controller.dockerfile "$controller"
say "building $runner (images/runner.dockerfile)"
build images/runner.dockerfile "$runner"
if $push; then
  push_image "$controller"
  push_image "$runner"
fi
say "built $controller and $runner"
