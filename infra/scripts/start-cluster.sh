#!/usr/bin/env bash
# Starts the three-node JetStream cluster of infra/nats/cluster-{1,2,3}.conf on loopback ports and waits
# until every node answers /healthz. Ctrl-C (or SIGTERM) stops all three.
#   infra/scripts/start-cluster.sh
# Then: toolsearch serve --nats nats://127.0.0.1:4231,nats://127.0.0.1:4232,nats://127.0.0.1:4233
# (the bus creates its streams with 3 replicas when opened with replicas: 3).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bin="${NATS_SERVER_BIN:-$(command -v nats-server || echo /usr/sbin/nats-server)}"
if [[ ! -x "$bin" ]]; then
  echo "nats-server not found: install it (Debian: apt-get install nats-server) or set NATS_SERVER_BIN" >&2
  exit 1
fi
pids=()
stop() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
}
trap stop INT TERM EXIT
for i in 1 2 3; do
  mkdir -p ".toolsearch/nats-cluster/n$i"
  "$bin" -c "infra/nats/cluster-$i.conf" >".toolsearch/nats-cluster/n$i.log" 2>&1 &
  pids+=("$!")
done
for i in 1 2 3; do
  for _ in $(seq 1 100); do
    if curl -fsS "http://127.0.0.1:823$i/healthz" >/dev/null 2>&1; then break; fi
    sleep 0.2
  done
  curl -fsS "http://127.0.0.1:823$i/healthz" >/dev/null 2>&1 || { echo "node n$i is not healthy; see .toolsearch/nats-cluster/n$i.log" >&2; exit 1; }
done
echo "cluster up: nats://127.0.0.1:4231,nats://127.0.0.1:4232,nats://127.0.0.1:4233 (logs in .toolsearch/nats-cluster/)"
wait
