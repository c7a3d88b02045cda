#!/usr/bin/env bash
# Everything a user reads (README, docs, --help and error texts in the sources, job scripts,
# recipes, tools, tests) points only at files in this repository: no internal design notes, no
# folder outside the checkout, no issue numbers. Prints each offending line; exit 1 if any.
#   tests/lint/no_internal_references.sh REPO_ROOT
set -u
root=$1
pattern='DESIGN\.md|DESIGN §|\.\./shared|shared/(data|DESIGN)|\bissue ?#?[0-9]+|\bissues [0-9]+'
# The repository's files: git's list in a checkout, else every file outside build folders.
files() {
  git -C "$root" ls-files 2>/dev/null ||
    (cd "$root" && find . -type f -not -path './build*' -not -path './.git/*' | sed 's|^\./||')
}
found=$(files | grep -v '^tests/lint/no_internal_references.sh$' |
  (cd "$root" && xargs -d '\n' grep -nEI "$pattern" 2>/dev/null))
if [ -n "$found" ]; then
  echo "internal references (a user has none of these; point at a file of this repository):"
  echo "$found"
  exit 1
fi
echo "no internal references in $(files | wc -l) files"
