#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl), the
# OpenTofu binary, Knative Eventing's two source adapters (the ApiServerSource receive adapter and the
# PingSource adapter `mtping`), Cluster API's core manager (with its CRDs and webhook manifests) and clusterctl
# from the Go module proxy into a versioned cache outside the repo. Nothing built is committed.
# A Prometheus server with Kubernetes service discovery (Debian's package is built without it) runs the
# shipped scrape config in the tests.
# The real node (src/local/real-node/) adds the kubelet of the same Kubernetes release, crane
# (go-containerregistry) to assemble OCI images, and a static pause program for the pod sandbox.
# Usage: scripts/build-binaries.sh [k8s|node|etcd|tofu|knative|capi|clusterctl|prometheus|all]   (default: all)
# Env:   CAPTF_CACHE (default ~/.cache/captf)
set -euo pipefail

# shellcheck source=versions.env
source "$(dirname "${BASH_SOURCE[0]}")/versions.env"
# OpenTofu's go.mod replaces hcl with its fork; a wrapper module must repeat that replace (go install refuses).
TOFU_HCL_REPLACE=${TOFU_HCL_REPLACE:-github.com/hashicorp/hcl/v2=github.com/opentofu/hcl/v2@v2.20.2-0.20251021132045-587d123c2828}

CACHE=${CAPTF_CACHE:-$HOME/.cache/captf}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CGO_ENABLED=0 GOFLAGS=-mod=mod
log() { printf '[build-binaries] %s\n' "$*" >&2; }

elapsed() { local s=$1; echo "$(( $(date +%s) - s ))s"; }

build_k8s() {
  local out="$CACHE/bin/k8s-v$K8S_VERSION"
  if [[ -x "$out/kube-apiserver" && -x "$out/kube-controller-manager" && -x "$out/kube-scheduler" && -x "$out/kubectl" ]]; then
    log "kubernetes v$K8S_VERSION: cached in $out"; return 0
  fi
  local start; start=$(date +%s)
  local minor=${K8S_VERSION#1.}; minor=${minor%%.*}
  local src="$CACHE/src/k8s-v$K8S_VERSION"
  mkdir -p "$src" "$out"
  cd "$src"
  # k8s.io/kubernetes replaces its staging modules with local paths; pair it with v0.<minor>.<patch> of each.
  local gomod
  gomod=$(go mod download -json "k8s.io/kubernetes@v$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  local goline godebug
  goline=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod")
  godebug=$(sed -n 's/^godebug \(.*\)$/\1/p' "$gomod")
  printf 'module local/k8sbins\n\ngo %s\n' "$goline" > go.mod
  [[ -n "$godebug" ]] && printf '\ngodebug %s\n' "$godebug" >> go.mod
  local m
  for m in $(sed -n 's#^[[:space:]]*\(k8s\.io/[^ ]*\) => \./staging/src/.*#\1#p' "$gomod"); do
    go mod edit -replace="$m=$m@v0.${K8S_VERSION#1.}"
  done
  log "kubernetes v$K8S_VERSION: downloading modules (go $goline)"
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@v$K8S_VERSION" \
    "k8s.io/kubernetes/cmd/kube-controller-manager@v$K8S_VERSION" \
    "k8s.io/kubernetes/cmd/kube-scheduler@v$K8S_VERSION" \
    "k8s.io/kubernetes/cmd/kubectl@v$K8S_VERSION"
  local ldf="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  local c
  for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    [[ -x "$out/$c" ]] && continue
    log "kubernetes v$K8S_VERSION: building $c (a cold build takes many minutes on 2 cores)"
    go build -trimpath -tags selinux,notest -ldflags "$ldf" -o "$out/$c.tmp" "k8s.io/kubernetes/cmd/$c"
    mv "$out/$c.tmp" "$out/$c"
    log "kubernetes v$K8S_VERSION: $c built after $(elapsed "$start")"
  done
}

# The kubelet shares build_k8s's wrapper module, so its module download and warm build cache.
build_node() {
  local out="$CACHE/bin/k8s-v$K8S_VERSION"
  if [[ -x "$out/kubelet" ]]; then
    log "kubelet v$K8S_VERSION: cached in $out"; return 0
  fi
  build_k8s
  local start; start=$(date +%s)
  local minor=${K8S_VERSION#1.}; minor=${minor%%.*}
  cd "$CACHE/src/k8s-v$K8S_VERSION"
  go get -tool "k8s.io/kubernetes/cmd/kubelet@v$K8S_VERSION"
  local ldf="-s -w" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $p.gitVersion=v$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  log "kubernetes v$K8S_VERSION: building kubelet (about a minute with the control plane's build cache)"
  go build -trimpath -tags selinux,notest -ldflags "$ldf" -o "$out/kubelet.tmp" k8s.io/kubernetes/cmd/kubelet
  mv "$out/kubelet.tmp" "$out/kubelet"
  log "kubernetes v$K8S_VERSION: kubelet built after $(elapsed "$start")"
}

build_crane() {
  local out="$CACHE/bin/crane-v$CRANE_VERSION"
  if [[ -x "$out/crane" ]]; then log "crane v$CRANE_VERSION: cached in $out"; return 0; fi
  local start; start=$(date +%s)
  local src="$CACHE/src/crane-v$CRANE_VERSION"
  mkdir -p "$src" "$out"
  cd "$src"
  [[ -f go.mod ]] || go mod init local/cranebin >/dev/null 2>&1
  log "crane v$CRANE_VERSION: downloading modules"
  go get -tool "github.com/google/go-containerregistry/cmd/crane@v$CRANE_VERSION"
  go build -trimpath -ldflags "-s -w" -o "$out/crane.tmp" github.com/google/go-containerregistry/cmd/crane
  mv "$out/crane.tmp" "$out/crane"
  log "crane v$CRANE_VERSION: built in $(elapsed "$start")"
}

# The pause program is the repository's own (infra/local/pause/pause.go): its cache key is its content hash.
build_pause() {
  local source="$ROOT/infra/local/pause/pause.go" hash
  hash=$(sha256sum "$source" | cut -c1-12)
  local out="$CACHE/bin/pause-$hash"
  if [[ -x "$out/pause" ]]; then log "pause $hash: cached in $out"; return 0; fi
  mkdir -p "$out"
  (cd "$(dirname "$source")" && go build -trimpath -ldflags "-s -w" -o "$out/pause.tmp" "$source")
  mv "$out/pause.tmp" "$out/pause"
  log "pause $hash: built in $out"
}

build_etcd() {
  local out="$CACHE/bin/etcd-v$ETCD_VERSION"
  if [[ -x "$out/etcd" ]]; then log "etcd v$ETCD_VERSION: cached in $out"; return 0; fi
  local start; start=$(date +%s)
  local src="$CACHE/src/etcd-v$ETCD_VERSION"
  mkdir -p "$src" "$out"
  cd "$src"
  [[ -f go.mod ]] || go mod init local/etcdbin >/dev/null 2>&1
  log "etcd v$ETCD_VERSION: downloading modules"
  go get -tool "go.etcd.io/etcd/server/v3@v$ETCD_VERSION"
  log "etcd v$ETCD_VERSION: building"
  go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$out/etcd.tmp" "$out/etcd"
  log "etcd v$ETCD_VERSION: built in $(elapsed "$start")"
}

build_tofu() {
  local out="$CACHE/bin/tofu-v$TOFU_VERSION"
  if [[ -x "$out/tofu" ]]; then log "tofu v$TOFU_VERSION: cached in $out"; return 0; fi
  local start; start=$(date +%s)
  local src="$CACHE/src/tofu-v$TOFU_VERSION"
  mkdir -p "$src" "$out"
  cd "$src"
  local gomod goline
  gomod=$(go mod download -json "github.com/opentofu/opentofu@v$TOFU_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')
  goline=$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod")
  printf 'module local/tofubin\n\ngo %s\n' "$goline" > go.mod
  # Repeat every replace directive of OpenTofu's own go.mod (go install refuses modules that have them).
  local r
  while IFS= read -r r; do
    [[ -n "$r" ]] && go mod edit -replace="$r"
  done < <(sed -n 's#^replace \([^ ]*\)\( [^ ]*\)\? => \([^ ]*\) \([^ ]*\)$#\1=\3@\4#p' "$gomod")
  log "tofu v$TOFU_VERSION: downloading modules (go $goline)"
  go get -tool "github.com/opentofu/opentofu/cmd/tofu@v$TOFU_VERSION"
  log "tofu v$TOFU_VERSION: building"
  go build -trimpath -ldflags "-s -w -X github.com/opentofu/opentofu/version.dev=no" -o "$out/tofu.tmp" github.com/opentofu/opentofu/cmd/tofu
  mv "$out/tofu.tmp" "$out/tofu"
  log "tofu v$TOFU_VERSION: built in $(elapsed "$start")"
}

build_knative() {
  local out="$CACHE/bin/knative-v$KNATIVE_EVENTING_VERSION"
  if [[ -x "$out/apiserver_receive_adapter" && -x "$out/mtping" && -f "$out/pingsource-crd.yaml" ]]; then
    log "knative eventing v$KNATIVE_EVENTING_VERSION: cached in $out"; return 0
  fi
  local start; start=$(date +%s)
  local src="$CACHE/src/knative-v$KNATIVE_EVENTING_VERSION"
  local mod="knative.dev/eventing"
  mkdir -p "$src" "$out"
  cd "$src"
  [[ -f go.mod ]] || go mod init local/knativebins >/dev/null 2>&1
  log "knative eventing v$KNATIVE_EVENTING_VERSION: downloading modules"
  go get -tool "$mod/cmd/apiserver_receive_adapter@v$KNATIVE_EVENTING_VERSION" "$mod/cmd/mtping@v$KNATIVE_EVENTING_VERSION"
  # mtping reads PingSource objects: the CRD ships in the module, next to the binaries it belongs to.
  local dir
  dir=$(go mod download -json "$mod@v$KNATIVE_EVENTING_VERSION" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p')
  cp "$dir/config/core/resources/pingsource.yaml" "$out/pingsource-crd.yaml.tmp"
  chmod 0644 "$out/pingsource-crd.yaml.tmp"
  mv "$out/pingsource-crd.yaml.tmp" "$out/pingsource-crd.yaml"
  local c
  for c in apiserver_receive_adapter mtping; do
    [[ -x "$out/$c" ]] && continue
    log "knative eventing v$KNATIVE_EVENTING_VERSION: building $c (a cold build takes minutes on 2 cores)"
    go build -trimpath -ldflags "-s -w" -o "$out/$c.tmp" "$mod/cmd/$c"
    mv "$out/$c.tmp" "$out/$c"
    log "knative eventing v$KNATIVE_EVENTING_VERSION: $c built after $(elapsed "$start")"
  done
}

# The wrapper module Cluster API's binaries build from (the core manager and clusterctl share it, and so its
# module download and build cache): enters it, creating it once, and gets package $1 of the release as a tool.
capi_wrapper_module() {
  local src="$CACHE/src/capi-v$CAPI_VERSION" mod="sigs.k8s.io/cluster-api"
  mkdir -p "$src"
  cd "$src"
  [[ -f go.mod ]] || go mod init local/capibin >/dev/null 2>&1
  # cluster-api's go.mod requires its api module at the placeholder v0.0.0-00010101000000-000000000000 and
  # replaces it with ./api; go ignores a dependency's replace, so the wrapper names the release's api module.
  go mod edit -replace="$mod/api=$mod/api@v$CAPI_VERSION"
  go get -tool "$mod/$1@v$CAPI_VERSION"
}

# Where the go command keeps the release's module source (its CRDs and manifests ship there).
capi_module_dir() {
  go mod download -json "sigs.k8s.io/cluster-api@v$CAPI_VERSION" | sed -n 's/.*"Dir": "\(.*\)",*/\1/p'
}

# The linker flags that stamp Cluster API's release into its binaries (what `version` commands print).
capi_ldflags() {
  local v=sigs.k8s.io/cluster-api/version minor=${CAPI_VERSION#*.}
  minor=${minor%%.*}
  echo "-s -w -X $v.gitVersion=v$CAPI_VERSION -X $v.gitMajor=${CAPI_VERSION%%.*} -X $v.gitMinor=$minor -X $v.gitTreeState=clean"
}

build_capi() {
  local out="$CACHE/bin/capi-v$CAPI_VERSION"
  if [[ -x "$out/cluster-api-manager" && -f "$out/webhooks.yaml" && -d "$out/crds" ]]; then
    log "cluster api v$CAPI_VERSION: cached in $out"; return 0
  fi
  local start; start=$(date +%s)
  local mod="sigs.k8s.io/cluster-api"
  mkdir -p "$out"
  log "cluster api v$CAPI_VERSION: downloading modules"
  capi_wrapper_module core
  # The manager's CRDs and webhook manifests ship in the module, next to the binary they belong to; the
  # local launcher (src/local/capi-manager.ts) points them at the manager on loopback.
  local dir
  dir=$(capi_module_dir)
  rm -rf "$out/crds.tmp"
  mkdir -p "$out/crds.tmp"
  cp "$dir"/core/config/crd/bases/*.yaml "$out/crds.tmp/"
  cp "$dir/core/config/webhook/manifests.yaml" "$out/webhooks.yaml.tmp"
  chmod 0644 "$out"/crds.tmp/*.yaml "$out/webhooks.yaml.tmp"
  rm -rf "$out/crds"
  mv "$out/crds.tmp" "$out/crds"
  mv "$out/webhooks.yaml.tmp" "$out/webhooks.yaml"
  if [[ ! -x "$out/cluster-api-manager" ]]; then
    log "cluster api v$CAPI_VERSION: building the core manager (a cold build takes minutes on 2 cores)"
    go build -trimpath -ldflags "$(capi_ldflags)" -o "$out/cluster-api-manager.tmp" "$mod/core"
    mv "$out/cluster-api-manager.tmp" "$out/cluster-api-manager"
  fi
  log "cluster api v$CAPI_VERSION: built in $(elapsed "$start")"
}

# clusterctl is a package of the same module as the core manager: it shares build_capi's wrapper module (and so
# its module download and build cache); the move e2e (test/e2e/capi-move.test.ts) runs the real `clusterctl move`.
build_clusterctl() {
  local out="$CACHE/bin/capi-v$CAPI_VERSION"
  if [[ -x "$out/clusterctl" && -f "$out/clusterctl-api.yaml" ]]; then
    log "clusterctl v$CAPI_VERSION: cached in $out"; return 0
  fi
  local start; start=$(date +%s)
  local mod="sigs.k8s.io/cluster-api"
  mkdir -p "$out"
  log "clusterctl v$CAPI_VERSION: downloading modules"
  capi_wrapper_module cmd/clusterctl
  # The provider inventory's CRD (`providers.clusterctl.cluster.x-k8s.io`), which `clusterctl init` installs
  # and `clusterctl move` lists on both management clusters: the move e2e installs it the same way.
  local dir
  dir=$(capi_module_dir)
  cp "$dir/cmd/clusterctl/config/manifest/clusterctl-api.yaml" "$out/clusterctl-api.yaml.tmp"
  chmod 0644 "$out/clusterctl-api.yaml.tmp"
  mv "$out/clusterctl-api.yaml.tmp" "$out/clusterctl-api.yaml"
  [[ -x "$out/clusterctl" ]] && { log "clusterctl v$CAPI_VERSION: cached in $out"; return 0; }
  log "clusterctl v$CAPI_VERSION: building (a cold build takes minutes on 2 cores)"
  go build -trimpath -ldflags "$(capi_ldflags)" -o "$out/clusterctl.tmp" "$mod/cmd/clusterctl"
  mv "$out/clusterctl.tmp" "$out/clusterctl"
  log "clusterctl v$CAPI_VERSION: built in $(elapsed "$start")"
}

build_prometheus() {
  local out="$CACHE/bin/prometheus-v$PROMETHEUS_VERSION"
  if [[ -x "$out/prometheus" ]]; then
    log "prometheus v$PROMETHEUS_VERSION: cached in $out"; return 0
  fi
  local start; start=$(date +%s)
  local src="$CACHE/src/prometheus-v$PROMETHEUS_VERSION"
  # Prometheus 3.x is published as the Go module version v0.<major*100+minor>.<patch> (3.16.0 → v0.316.0).
  local major=${PROMETHEUS_VERSION%%.*} rest=${PROMETHEUS_VERSION#*.}
  local minor=${rest%%.*} patch=${rest#*.}
  local modv="v0.$((major * 100 + minor)).$patch" mod="github.com/prometheus/prometheus"
  mkdir -p "$src" "$out"
  cd "$src"
  [[ -f go.mod ]] || go mod init local/prombin >/dev/null 2>&1
  log "prometheus v$PROMETHEUS_VERSION: downloading modules ($mod@$modv)"
  go get -tool "$mod/cmd/prometheus@$modv"
  # Only Kubernetes service discovery (Prometheus's plugins/ build tags): the cloud SDKs of the other
  # mechanisms would double the build. The web UI is not embedded; the HTTP API is all the tests use.
  log "prometheus v$PROMETHEUS_VERSION: building (a cold build takes a few minutes on 2 cores)"
  go build -trimpath -tags remove_all_sd,enable_kubernetes_sd \
    -ldflags "-s -w -X github.com/prometheus/common/version.Version=$PROMETHEUS_VERSION" \
    -o "$out/prometheus.tmp" "$mod/cmd/prometheus"
  mv "$out/prometheus.tmp" "$out/prometheus"
  log "prometheus v$PROMETHEUS_VERSION: built in $(elapsed "$start")"
}

what=${1:-all}
case "$what" in
  k8s) build_k8s ;;
  node) build_node; build_crane; build_pause ;;
  etcd) build_etcd ;;
  tofu) build_tofu ;;
  knative) build_knative ;;
  capi) build_capi ;;
  clusterctl) build_clusterctl ;;
  prometheus) build_prometheus ;;
  all) build_etcd; build_k8s; build_node; build_crane; build_pause; build_tofu; build_knative; build_capi; build_clusterctl; build_prometheus ;;
  *) log "unknown component: $what (want k8s|node|etcd|tofu|knative|capi|clusterctl|prometheus|all)"; exit 2 ;;
esac
