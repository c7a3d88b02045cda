#!/usr/bin/env bash
# Renders the Graphviz sources of this folder (layers.dot, step.dot) to SVG beside them.
# Needs `dot` (Debian package graphviz, installed by env/install_deps.sh). Fails on any warning
# of dot, so that a committed SVG never hides a layout problem.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
command -v dot >/dev/null || { echo "render.sh: dot not found: install graphviz (env/install_deps.sh)" >&2; exit 1; }
status=0
for source in "$here"/layers.dot "$here"/step.dot; do
  svg=${source%.dot}.svg
  warnings=$(dot -Tsvg "$source" -o "$svg" 2>&1) || { echo "render.sh: dot failed on $source: $warnings" >&2; exit 1; }
  if [ -n "$warnings" ]; then
    echo "render.sh: dot warned on $source: $warnings" >&2
    status=1
  fi
  echo "render.sh: $svg"
done
exit $status
