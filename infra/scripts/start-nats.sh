#!/usr/bin/env bash
# Starts one JetStream-enabled nats-server for toolsearch in the foreground (Ctrl-C stops it).
#   infra/scripts/start-nats.sh            -> nats://127.0.0.1:4222, store in ./.toolsearch/nats
#   NATS_CONF=path/to.conf infra/scripts/start-nats.sh
# Then: toolsearch serve --nats nats://127.0.0.1:4222   (or NATS_URL=nats://127.0.0.1:4222)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$root"
bin="${NATS_SERVER_BIN:-$(command -v nats-server || echo /usr/sbin/nats-server)}"
if [[ ! -x "$bin" ]]; then
  echo "nats-server not found: install it (Debian: apt-get install nats-server) or set NATS_SERVER_BIN" >&2
  exit 1
fi
mkdir -p .toolsearch/nats
exec "$bin" -c "${NATS_CONF:-infra/nats/single.conf}" "$@"
