#!/usr/bin/env bash
# Install the real MCP peers the end-to-end sweep drives (tests/e2e/test_real_peers.py):
#
#   scripts/install_peers.sh npm   # npm reference servers + the TypeScript SDK (1.32, 1.13, 1.10) -> $MCPTAP_NODE_CACHE
#   scripts/install_peers.sh py    # mcp-server-time, mcp-server-git, fastmcp   -> $MCPTAP_PYPEERS venv
#
# Versions are pinned to the ones checked (docs/real-peers.md); set MCPTAP_PEERS_LATEST=1 to take
# the newest instead (older SDK aliases stay pinned: they give the older revisions). Idempotent: does nothing when the pinned versions are present. Needs npm /
# python3 and registry access; exits non-zero with the installer's message otherwise (the tests
# skip with it). Cache defaults: .cache/node and .cache/pypeers (gitignored).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
NODE_CACHE=${MCPTAP_NODE_CACHE:-$ROOT/.cache/node}
PY_VENV=${MCPTAP_PYPEERS:-$ROOT/.cache/pypeers}
LATEST=${MCPTAP_PEERS_LATEST:-}

NPM_PKGS=(     # node_modules dir | npm spec (an alias installs an older SDK next to the newest)
  "@modelcontextprotocol/server-everything|@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem|@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory|@modelcontextprotocol/server-memory@2026.8.31"
  "@modelcontextprotocol/server-sequential-thinking|@modelcontextprotocol/server-sequential-thinking@2026.8.31"
  "@modelcontextprotocol/sdk|@modelcontextprotocol/sdk@1.32.2"
  "sdk-1.13|sdk-1.13@npm:@modelcontextprotocol/sdk@1.13.3"
  "sdk-1.10|sdk-1.10@npm:@modelcontextprotocol/sdk@1.10.2"
)
PY_PKGS=("mcp-server-time==2026.10.19" "mcp-server-git==2026.10.19" "fastmcp==4.2.3")

strip() { [ -n "$LATEST" ] && sed -E 's/(.)@[^@]*$/\1/; s/==.*$//' <<<"$1" || echo "$1"; }

npm_part() {
  command -v npm >/dev/null && command -v node >/dev/null || { echo "node/npm not available" >&2; exit 3; }
  local want=() p dir spec ver have
  for p in "${NPM_PKGS[@]}"; do
    dir=${p%%|*}; spec=${p#*|}; ver=${spec##*@}
    have=$(node -p "try { require('$NODE_CACHE/node_modules/$dir/package.json').version } catch (e) { '' }" 2>/dev/null || true)
    if [ -z "$have" ] || { [ -z "$LATEST" ] && [ "$have" != "$ver" ]; }; then
      case "$spec" in *@npm:*) want+=("$spec") ;; *) want+=("$(strip "$spec")") ;; esac
    fi
  done
  [ ${#want[@]} -eq 0 ] && return 0
  mkdir -p "$NODE_CACHE"
  npm install --prefix "$NODE_CACHE" --no-audit --no-fund --loglevel=error "${want[@]}" >&2
}

py_part() {
  local py=${PYTHON:-python3} want=() p
  [ -x "$PY_VENV/bin/python" ] || "$py" -m venv "$PY_VENV" >&2
  for p in "${PY_PKGS[@]}"; do
    "$PY_VENV/bin/python" - "$p" <<'EOF' 2>/dev/null || want+=("$(strip "$p")")
import sys
from importlib.metadata import version
name, _, ver = sys.argv[1].partition("==")
sys.exit(0 if version(name) == ver else 1)
EOF
  done
  [ ${#want[@]} -eq 0 ] && return 0
  "$PY_VENV/bin/python" -m pip install -q --disable-pip-version-check "${want[@]}" >&2
}

case "${1:-all}" in
  npm) npm_part ;;
  py) py_part ;;
  all) npm_part; py_part ;;
  *) echo "usage: $0 [npm|py|all]" >&2; exit 2 ;;
esac
