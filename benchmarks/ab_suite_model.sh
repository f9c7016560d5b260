#!/bin/bash
# CPU time (user + sys, children included) of a test subset with the built-in model present and
# hidden (hidden: every store keyword-only, as before gitmem shipped a model), alternated:
# load-independent, unlike wall time on a shared machine. From the repository root:
#     bash benchmarks/ab_suite_model.sh [ROUNDS] [TEST FILES...]
# The model folder is moved aside during the "before" runs and always put back.
set -u
cd "$(dirname "$0")/.."
ROUNDS=${1:-2}
shift || true
SUB=${*:-tests/test_quickrecall.py tests/test_cli.py}
MODEL=gitmem/models/minilm-256
ASIDE=$(mktemp -d)/minilm-256
trap '[ -d "$ASIDE" ] && mv "$ASIDE" "$MODEL"' EXIT
TIMEFORMAT="%R %U %S"
for round in $(seq "$ROUNDS"); do
  for mode in after before; do
    [ "$mode" = before ] && mv "$MODEL" "$ASIDE"
    t=$( { time .venv/bin/pytest -q -p no:cacheprovider $SUB > /dev/null 2>&1; } 2>&1 )
    [ "$mode" = before ] && mv "$ASIDE" "$MODEL"
    echo "$mode round $round wall/user/sys s: $t (load $(cut -d' ' -f1 /proc/loadavg))"
  done
done
