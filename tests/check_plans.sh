#!/bin/sh
# tests/check_plans.sh SPYRE TRACES: every trace's graph compiled for the
# reference chip and the 4-core one with SPYRE_CHECK_PLANS=1, which plans
# again each row kernel whose plan the compile remembered (be_rows.c,
# rk_plan_key) and aborts where the two differ: a key that misses an input
# of the plan.  A graph that does not compile fails alike with or without
# the check (tools/same-programs compares those); only an abort fails here.
spyre=$1
traces=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
n=0
for g in $(find "$traces" -name graph.txt | sort | xargs -n1 dirname); do
    for chip in spyre spyre-4core; do
        n=$((n + 1))
        SPYRE_CHECK_PLANS=1 "$spyre" compile "$g" --config "$chip" -o "$tmp/out.elf" >/dev/null 2>"$tmp/err"
        rc=$?
        if [ $rc -ge 128 ] || grep -q "remembered plan differs" "$tmp/err"; then
            echo "$g $chip: exit $rc"
            cat "$tmp/err"
            status=1
        fi
    done
done
echo "checked $n compiles"
[ "$n" -gt 0 ] || { echo "check_plans: no graph.txt under '$traces'" >&2; exit 1; }
exit $status
