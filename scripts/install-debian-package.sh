#!/usr/bin/env bash
# Install Debian packages the benchmark needs on demand (make bench-peers: redis-server),
# as scripts/provision.sh installs make test's: apt-get as root or through passwordless sudo,
# after one apt-get update, without starting the packages' services (a policy-rc.d, unless
# the system has one): the benchmark starts private instances on free ports.
set -euo pipefail
(($#)) || { echo "usage: $0 PACKAGE..." >&2; exit 2; }
POLICY_RC_D="${PROVISION_POLICY_RC_D:-/usr/sbin/policy-rc.d}"
as_root() {
  if [[ "$(id -u)" == 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo -n "$@"
  else
    echo "installing $* needs root or passwordless sudo" >&2
    return 1
  fi
}
command -v apt-get >/dev/null || { echo "not a Debian system (no apt-get): install $* by hand" >&2; exit 1; }
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || echo "apt-get update failed" >&2
created_policy=""
if [[ ! -e "$POLICY_RC_D" ]]; then
  as_root sh -c "printf '#!/bin/sh\nexit 101\n' > $POLICY_RC_D && chmod +x $POLICY_RC_D"
  created_policy=1
fi
status=0
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null || status=$?
if [[ -n "$created_policy" ]]; then as_root rm -f "$POLICY_RC_D"; fi
exit "$status"
