#!/usr/bin/env bash
# `make fuzz`: run every Go fuzz target of the module for FUZZTIME each
# (default 30s), one after another. `make test` already runs each target's
# seed corpus (testdata/fuzz/<Target> and its f.Add calls) as ordinary tests;
# this is the longer, coverage-guided search. A finding is written by Go to
# <package>/testdata/fuzz/<Target>/<hash>: commit it as a seed with the fix.
# Narrow the run with FUZZ='FuzzSSE|FuzzBody' (a regexp on target names).
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-30s}
only=${FUZZ:-.}
targets=()
# Found by name in the _test.go files (listing them with `go test -list`
# would build every test binary first).
while IFS=: read -r file line; do
  name=$(sed -E 's/^func (Fuzz[A-Za-z0-9_]*)\(.*/\1/' <<<"$line")
  [[ $name =~ $only ]] || continue
  targets+=("./$(dirname "$file") $name")
done < <(grep -rE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(f \*testing\.F\)' . | sed 's|^\./||' | sort)

if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no target matches FUZZ='$only'" >&2
  exit 1
fi
echo "==> ${#targets[@]} fuzz targets, $fuzztime each" >&2
failed=()
i=0
for t in "${targets[@]}"; do
  i=$((i + 1))
  read -r pkg name <<<"$t"
  echo "==> [$i/${#targets[@]}] $name in $pkg for $fuzztime" >&2
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"; then
    failed+=("$name ($pkg)")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  printf 'fuzz: %s found a failing input (see its testdata/fuzz)\n' "${failed[@]}" >&2
  exit 1
fi
echo "==> fuzz: every target ran $fuzztime without a finding" >&2
