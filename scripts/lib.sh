# Shared by the setup, start and test scripts: logging and the "install what is missing" steps.
# Each step dies on failure (exit 1), whatever the caller's `set -e`, so a half-installed machine never
# goes on to run tests.
# shellcheck shell=bash
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CAPTF_CACHE=${CAPTF_CACHE:-$HOME/.cache/captf}

say() { printf '\033[1m[captf]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[31m[captf] error:\033[0m %s\n' "$*" >&2; exit 1; }

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else die "need root for: $*"; fi; }

ensure_npm_packages() {
  cd "$ROOT"
  if [[ -x node_modules/.bin/node && -f node_modules/.package-lock.json && node_modules/.package-lock.json -nt package-lock.json ]]; then
    return 0
  fi
  say "installing npm packages (npm ci; pins Node 24 through the node devDependency)"
  npm ci --no-audit --no-fund || die "npm ci failed (see above)"
  [[ -x node_modules/.bin/node ]] || die "npm ci did not install Node 24 (node_modules/.bin/node is missing)"
}

ensure_debian_packages() {
  local missing=()
  command -v redis-server >/dev/null || missing+=(redis-server)
  command -v openssl >/dev/null || missing+=(openssl)
  # jq: the runbook's commands, run verbatim by test/e2e/runbook-failing-jobs.test.ts.
  command -v jq >/dev/null || missing+=(jq)
  # promtool and prometheus: the alert tests (test/integration/infra/alerts.test.ts, prometheus-scrape.test.ts).
  { command -v promtool && command -v prometheus; } >/dev/null || missing+=(prometheus)
  # The real node (src/local/real-node/): the container runtime, its OCI runtime and the CNI plugins.
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
  command -v nft >/dev/null || missing+=(nftables)
  command -v ip >/dev/null || missing+=(iproute2)
  ((${#missing[@]} == 0)) && return 0
  say "installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq || die "apt-get update failed"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null ||
    die "apt-get install ${missing[*]} failed"
  [[ " ${missing[*]} " == *" prometheus "* ]] && stop_packaged_prometheus
  return 0
}

# moto's server: a real AWS API (SSM Parameter Store here) for the Lambda's secret store tests
# (test/integration/infra/lambda-secrets.test.ts, test/e2e/lambda-harness.ts), from PyPI, pinned in
# versions.env. It goes into a venv of its own in the cache, so neither the system's Python (which Debian
# marks externally managed) nor the user's site-packages is touched; test/env/moto.ts finds it there.
ensure_moto_server() {
  local version venv
  version=$(sed -n 's/^MOTO_VERSION=//p' "$ROOT/scripts/versions.env")
  venv="$CAPTF_CACHE/bin/moto-v$version"
  [[ -x $venv/bin/moto_server ]] && return 0
  command -v python3 >/dev/null || die "python3 is required for moto_server (the Lambda secret store tests)"
  say "installing moto $version into $venv (an AWS API server for the Lambda secret store tests)"
  rm -rf "$venv"
  if ! python3 -m venv "$venv" 2>/dev/null; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null ||
      die "python3 -m venv failed and python3-venv could not be installed"
    python3 -m venv "$venv" || die "python3 -m venv $venv failed"
  fi
  "$venv/bin/python" -m pip install --quiet "moto[server,ssm]==$version" || die "pip install moto==$version failed"
  [[ -x $venv/bin/moto_server ]] || die "no moto_server in $venv/bin after pip install"
}

# The package starts a Prometheus service where an init system runs one; the tests start their own, so the
# packaged one would only hold port 9090. Stopped and disabled; where no init system runs, nothing started.
stop_packaged_prometheus() {
  if command -v systemctl >/dev/null && systemctl is-system-running >/dev/null 2>&1; then
    as_root systemctl disable --now prometheus >/dev/null 2>&1 || true
  elif command -v service >/dev/null; then
    as_root service prometheus stop >/dev/null 2>&1 || true
  fi
}

ensure_go_binaries() {
  command -v go >/dev/null || die "Go is needed to build etcd, Kubernetes, OpenTofu, Knative's adapters and Cluster API's core manager from the Go module proxy; install Go >= 1.26"
  say "checking the local control-plane, kubelet, crane, OpenTofu, Knative adapter and Cluster API binaries in $CAPTF_CACHE/bin (a first build takes a while)"
  bash "$ROOT/scripts/build-binaries.sh" all || die "building the Go binaries failed (see above)"
}

setup_all() {
  ensure_debian_packages
  ensure_moto_server
  ensure_npm_packages
  ensure_go_binaries
}
