#!/usr/bin/env bash
# Rebuilds the frontend and fails if the committed bundle in tb_plugin/static differs from
# what the source produces (someone changed frontend/ without rebuilding, or vice versa).
# Usage: frontend/check_bundle.sh   (from anywhere; needs Node.js 20.19+ and npm)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
cd "$here"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
npm run build
cd "$repo"
changes="$(git status --porcelain -- tb_plugin/static)"
if [ -n "$changes" ]; then
  echo "tb_plugin/static is out of date with frontend/ (rebuild with: cd frontend && npm ci && npm run build, then commit):" >&2
  echo "$changes" >&2
  git --no-pager diff --stat -- tb_plugin/static >&2 || true
  exit 1
fi
echo "tb_plugin/static matches the frontend source."
