#!/usr/bin/env bash
# Run commands at the same time: scripts/run-parallel.sh 'command 1' 'command 2' ...
#
# Each command runs through `bash -c` with its output (stdout and stderr) in a log of its
# own. As each one ends, its log is printed in full under a header naming it, so the
# outputs never interleave; a last block lists every command with its exit status and
# seconds. Exits 1 if any command failed (every one still runs to its end), 0 otherwise.
# Ctrl-C or SIGTERM stops every command still running (each is its own process group).
set -uo pipefail

if (($# == 0)); then
  echo "usage: $0 'command' ['command' ...]" >&2
  exit 2
fi

logs=$(mktemp -d "${TMPDIR:-/tmp}/run-parallel.XXXXXX")
commands=("$@")
declare -A index_of=()  # pid -> index in commands
pids=()
status=()
seconds=()

stop() {
  for pid in "${pids[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null
  done
  wait
  rm -rf "$logs"
  exit 130
}
trap stop INT TERM

set -m  # each command in a process group of its own, so stop() reaches its children too
for i in "${!commands[@]}"; do
  bash -c "${commands[$i]}" >"$logs/$i.log" 2>&1 </dev/null &
  pids+=("$!")
  index_of[$!]=$i
  echo "== started: ${commands[$i]}"
done
set +m
start=$SECONDS

running=("${pids[@]}")
while ((${#running[@]})); do
  wait -n -p pid "${running[@]}"
  rc=$?
  i=${index_of[$pid]}
  status[i]=$rc
  seconds[i]=$((SECONDS - start))
  running=()
  for other in "${pids[@]}"; do
    [[ -z ${status[${index_of[$other]}]+x} ]] && running+=("$other")
  done
  outcome=$([[ $rc == 0 ]] && echo ok || echo "FAILED, exit $rc")
  echo
  echo "== ${commands[$i]} ($outcome, ${seconds[i]} s)"
  cat "$logs/$i.log"
done
rm -rf "$logs"

echo
echo "== run-parallel: $# commands at the same time, $((SECONDS - start)) s"
failed=0
for i in "${!commands[@]}"; do
  if [[ ${status[i]} == 0 ]]; then
    echo "   ok      ${seconds[i]} s  ${commands[$i]}"
  else
    echo "   FAILED  ${seconds[i]} s  ${commands[$i]} (exit ${status[i]})"
    failed=1
  fi
done
exit "$failed"
