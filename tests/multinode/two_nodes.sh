#!/usr/bin/env bash
# Two nodes of two ranks each on this one machine: each node is a network namespace with its own
# hostname (UTS namespace), its own address on a veth link between the two, and its own
# node-local scratch folder (a tmpfs in a mount namespace). mpirun runs on node 1 and starts
# node 2's ranks through an rsh agent that enters node 2's namespaces, and MPI carries
# everything over TCP across the link. What is checked:
#   - the ranks are placed and numbered per node (global ranks 0,1 on node1 and 2,3 on node2;
#     local ranks 0 and 1 on each), as rank 0 reports;
#   - the node-local duties: the synthetic dataset, written into node-local scratch, is made
#     once per node; rank 0 alone logs; rank 0 alone writes the checkpoints;
#   - the training matches 4 ranks on one node step for step, and resumes from its checkpoint;
#   - a rank failing, hanging or killed on node 2 ends the whole job, on both nodes, in bounded
#     time.
# Exits 77 (skipped) with the reason where namespaces cannot be made (no root, a container
# without CAP_SYS_ADMIN, no iproute2).
#   tests/multinode/two_nodes.sh MPIEXEC build/ringtrain
set -u
mpiexec=$1
bin=$(readlink -f "$2")
skip() {
  echo "SKIPPED: $1"
  exit 77
}
command -v ip >/dev/null || skip "no 'ip' command (iproute2) to make network namespaces"
command -v unshare >/dev/null || skip "no 'unshare' (util-linux) to make UTS and mount namespaces"
tag=rt$$
ns1=${tag}n1 ns2=${tag}n2
ip netns add "$ns1" 2>/dev/null || skip "network namespaces not permitted here (need root/CAP_SYS_ADMIN)"
dir=$(mktemp -d)
cleanup() {
  ip netns pids "$ns1" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns pids "$ns2" 2>/dev/null | xargs -r kill -9 2>/dev/null
  ip netns del "$ns1" 2>/dev/null
  ip netns del "$ns2" 2>/dev/null
  [ -n "${KEEP:-}" ] || rm -rf "$dir"
}
trap cleanup EXIT
ip netns add "$ns2" || skip "cannot make a second network namespace"
# A /30 of the documentation range, inside namespaces this test made: no traffic leaves them.
addr1=198.51.100.1 addr2=198.51.100.2
ip link add "${tag}a" type veth peer name "${tag}b" || skip "cannot make a veth pair"
ip link set "${tag}a" netns "$ns1" && ip link set "${tag}b" netns "$ns2" || exit 1
for n in 1 2; do
  ns=${tag}n$n link=${tag}$([ "$n" = 1 ] && echo a || echo b) a=$([ "$n" = 1 ] && echo "$addr1" || echo "$addr2")
  ip netns exec "$ns" ip link set lo up &&
    ip netns exec "$ns" ip addr add "$a/30" dev "$link" &&
    ip netns exec "$ns" ip link set "$link" up || exit 1
done
unshare --uts --mount --propagation private true 2>/dev/null || skip "UTS/mount namespaces not permitted"

# node_shell NODE COMMAND: COMMAND (a shell string) on NODE: its network namespace, hostname
# node1/node2, and a private tmpfs on $dir/scratch (the node's local disk).
mkdir -p "$dir/scratch" "$dir/shared"
cat >"$dir/agent.sh" <<EOF
#!/usr/bin/env bash
# rsh agent for mpirun: "agent.sh HOST COMMAND..." runs COMMAND on node HOST.
case \$1 in
  $addr1) ns=$ns1 name=node1 ;;
  $addr2) ns=$ns2 name=node2 ;;
  *) echo "agent: unknown host \$1" >&2; exit 1 ;;
esac
shift
exec ip netns exec "\$ns" unshare --uts --mount --propagation private \
  bash -c "hostname \$name && mount -t tmpfs -o size=64m scratch $dir/scratch && \$*"
EOF
chmod +x "$dir/agent.sh"
printf '%s slots=2\n%s slots=2\n' "$addr1" "$addr2" >"$dir/hosts"
failures=0
fail() {
  echo "FAIL $1"
  [ -f "${2:-}" ] && tail -n 25 "$2"
  failures=$((failures + 1))
}

# on_two_nodes LOG ARGS...: ringtrain ARGS as 2 nodes x 2 ranks; mpirun itself runs on node1.
on_two_nodes() {
  local log=$1
  shift
  timeout 180 "$dir/agent.sh" "$addr1" "$mpiexec" --hostfile "$dir/hosts" -n 4 \
    --mca plm_rsh_agent "$dir/agent.sh" --mca btl tcp,self \
    --mca btl_tcp_if_include "$addr1/30" --mca oob_tcp_if_include "$addr1/30" \
    "$bin" "$@" >"$log" 2>&1
}

run=(train --device cpu --depth 18 --width 0.125 --threads 1 --workers 1 --batch-size 4
  --log-interval 0 --seed 3)
local_data=(--synth-path "$dir/scratch/synth.h5")
shared_data=(--synth-path "$dir/shared/synth.h5")  # written by the one-node run
# The same data and steps as 4 ranks on one node, over TCP too, as the reference.
timeout 180 "$mpiexec" -n 4 --oversubscribe --mca btl tcp,self "$bin" "${run[@]}" \
  --synth-path "$dir/shared/synth.h5" --steps 8 >"$dir/one_node.log" 2>&1 ||
  fail "4 ranks on one node" "$dir/one_node.log"

on_two_nodes "$dir/two.log" "${run[@]}" "${local_data[@]}" --steps 8 --checkpoint-dir "$dir/shared/ckpt" \
  --checkpoint-every 4
rc=$?
if [ "$rc" -ne 0 ]; then
  fail "2 nodes x 2 ranks: exit status $rc" "$dir/two.log"
else
  echo "ok   2 nodes x 2 ranks trained over TCP"
fi
grep -q "4 ranks on 2 nodes: node1 ranks 0-1, node2 ranks 2-3" "$dir/two.log" &&
  echo "ok   placement: $(grep -o '4 ranks on 2 nodes.*' "$dir/two.log")" ||
  fail "placement line missing or wrong" "$dir/two.log"
grep -q "wrote the synthetic dataset .* on 2 node(s)" "$dir/two.log" &&
  echo "ok   the synthetic dataset was written once on each node's local disk" ||
  fail "want one 'written on node' line per node" "$dir/two.log"
[ "$(grep -c 'step 8/8' "$dir/two.log")" -eq 1 ] && echo "ok   one progress line per step (rank 0 logs)" ||
  fail "want exactly one 'step 8/8' line" "$dir/two.log"
ckpts=$(ls "$dir/shared/ckpt" 2>/dev/null | tr '\n' ' ')
[ "$ckpts" = "ckpt-step00000004.h5 ckpt-step00000008.h5 " ] && echo "ok   checkpoints: $ckpts" ||
  fail "checkpoints: want steps 4 and 8 and nothing else, got '$ckpts'"
losses() { grep -o 'step [0-9]*/[0-9]* loss [0-9.]*' "$1"; }
if [ -n "$(losses "$dir/two.log")" ] && [ "$(losses "$dir/two.log")" = "$(losses "$dir/one_node.log")" ]; then
  echo "ok   the 8 step losses equal those of 4 ranks on one node"
else
  fail "step losses differ from one node:"
  diff <(losses "$dir/one_node.log") <(losses "$dir/two.log")
fi

# Resume on two nodes from the checkpoint of step 4 (the file of step 8 removed), reading the
# same data from the shared folder now: a checkpoint knows its data by content, not by path.
rm -f "$dir/shared/ckpt/ckpt-step00000008.h5"
on_two_nodes "$dir/resumed.log" "${run[@]}" "${shared_data[@]}" --steps 8 --checkpoint-dir "$dir/shared/ckpt" \
  --resume auto || fail "resume on 2 nodes" "$dir/resumed.log"
if grep -q "resumed from .*step 4" "$dir/resumed.log" &&
  [ "$(losses "$dir/resumed.log" | tail -n 4)" = "$(losses "$dir/one_node.log" | tail -n 4)" ]; then
  echo "ok   resumed at step 4 on 2 nodes; steps 5-8 equal the uninterrupted run"
else
  fail "resume: not at step 4, or other losses" "$dir/resumed.log"
fi

# A rank on node 2 fails: the whole job ends with an error naming it, on both nodes.
start=$(date +%s)
if on_two_nodes "$dir/failed.log" "${run[@]}" "${shared_data[@]}" --steps 8 --debug-fail-rank 3 --debug-fail-step 2; then
  fail "a failing rank on node 2: the job exited 0" "$dir/failed.log"
elif [ $? -eq 124 ]; then
  fail "a failing rank on node 2: the job hung" "$dir/failed.log"
elif ! grep -q "rank 3 of 4: error: .*failure injected" "$dir/failed.log"; then
  fail "a failing rank on node 2: no error naming rank 3" "$dir/failed.log"
else
  echo "ok   a failing rank on node 2 ended the job in $(($(date +%s) - start)) s, naming rank 3"
fi
# A rank on node 2 hangs: the others give up after --comm-timeout and end the job.
start=$(date +%s)
on_two_nodes "$dir/hung.log" "${run[@]}" "${shared_data[@]}" --steps 8 --comm-timeout 5 \
  --debug-hang-rank 3 --debug-hang-step 2
rc=$?
if [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
  fail "a hung rank on node 2: the job exited $rc (0: went on; 124: hung)" "$dir/hung.log"
elif ! grep -q "did not complete within 5 s" "$dir/hung.log"; then
  fail "a hung rank on node 2: no timeout message" "$dir/hung.log"
else
  echo "ok   a hung rank on node 2 ended the job in $(($(date +%s) - start)) s: $(grep -o 'did not complete within 5 s on rank [0-9]*: [^;]*' "$dir/hung.log" | head -n 1)"
fi

# A rank on node 2 is killed (SIGKILL, as the OOM killer does): the job ends on both nodes.
on_two_nodes "$dir/killed.log" "${run[@]}" "${shared_data[@]}" --steps 400 &
job=$!
victim=""
for _ in $(seq 600); do
  grep -q "step 2/400" "$dir/killed.log" 2>/dev/null &&
    victim=$(ip netns pids "$ns2" | xargs -r ps -o pid=,comm= -p | awk '$2 == "ringtrain" {print $1; exit}')
  [ -n "$victim" ] && break
  sleep 0.1
done
start=$(date +%s)
[ -n "$victim" ] && kill -9 "$victim"
wait "$job"
rc=$?
if [ -z "$victim" ]; then
  fail "a killed rank on node 2: found no rank to kill" "$dir/killed.log"
elif [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ]; then
  fail "a killed rank on node 2: the job exited $rc (0: went on; 124: hung)" "$dir/killed.log"
else
  echo "ok   a rank killed on node 2 ended the job in $(($(date +%s) - start)) s (exit $rc)"
fi
sleep 1
left=$( (ip netns pids "$ns1"; ip netns pids "$ns2") 2>/dev/null | wc -l)
[ "$left" -eq 0 ] && echo "ok   no process left on either node" || fail "$left process(es) left on the nodes"

echo "multinode: $failures failed"
[ "$failures" -eq 0 ]
