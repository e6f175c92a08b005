#!/usr/bin/env bash
# Installs the Debian packages dcserve builds and tests with. Idempotent: apt-get runs only when
# something is missing. Usage: scripts/install-system-deps.sh [build|test]
set -euo pipefail
profile=${1:-build}
pkgs=(libzstd-dev libssl-dev zlib1g-dev pkg-config zstd curl ca-certificates python3 python3-venv python3-pip)
if [ "$profile" = test ]; then
  pkgs+=(chromium wrk nginx openssl strace)
  pkgs+=(prometheus)     # the Prometheus recipes test (deploy/prometheus)
  pkgs+=(postgresql-15)  # throwaway PostgreSQL for the shared-store tests (scripts/throwaway-postgres.sh)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing Debian packages: ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
