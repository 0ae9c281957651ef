#!/usr/bin/env bash
# Starts the secured NATS deployment of infra/nats/secured in the foreground (Ctrl-C stops it):
#   infra/scripts/start-secured.sh            one node  -> nats://127.0.0.1:4222
#   infra/scripts/start-secured.sh cluster    three nodes -> nats://127.0.0.1:4241,nats://127.0.0.1:4242,nats://127.0.0.1:4243
# The principals' seeds and the authorization block are written once by toolsearch nats-auth into
# infra/nats/secured/auth (kept when they exist). Then start each role with its seed, e.g.
#   toolsearch serve --role gateway --nats nats://127.0.0.1:4222 --nats-nkey infra/nats/secured/auth/gateway.nk
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bin="${NATS_SERVER_BIN:-$(command -v nats-server || echo /usr/sbin/nats-server)}"
if [[ ! -x "$bin" ]]; then
  echo "nats-server not found: install it (Debian: apt-get install nats-server) or set NATS_SERVER_BIN" >&2
  exit 1
fi
auth=infra/nats/secured/auth
if [[ ! -f "$auth/authorization.conf" || ! -f "$auth/cluster-routes.conf" ]]; then
  # Keys already in $auth are kept; the routes of the three loopback nodes get their own user and password.
  node bin/toolsearch.mjs nats-auth --out "$auth" --route 127.0.0.1:6241 --route 127.0.0.1:6242 --route 127.0.0.1:6243 ${NATS_AUTH_ARGS:-}
fi
if [[ "${1:-single}" != "cluster" ]]; then
  mkdir -p .toolsearch/nats-secured
  exec "$bin" -c infra/nats/secured/single.conf
fi
pids=()
stop() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
}
trap stop INT TERM EXIT
for i in 1 2 3; do
  mkdir -p ".toolsearch/nats-secured-cluster/n$i"
  "$bin" -c "infra/nats/secured/cluster-$i.conf" >".toolsearch/nats-secured-cluster/n$i.log" 2>&1 &
  pids+=("$!")
done
for i in 1 2 3; do
  for _ in $(seq 1 100); do
    if curl -fsS "http://127.0.0.1:824$i/healthz" >/dev/null 2>&1; then break; fi
    sleep 0.2
  done
  curl -fsS "http://127.0.0.1:824$i/healthz" >/dev/null 2>&1 || { echo "node sn$i is not healthy; see .toolsearch/nats-secured-cluster/n$i.log" >&2; exit 1; }
done
echo "secured cluster up: nats://127.0.0.1:4241,nats://127.0.0.1:4242,nats://127.0.0.1:4243 (seeds in $auth)"
wait
