#!/usr/bin/env bash
# Multi-process checks of `taihu-train nodes=K` + `taihu-node` on loopback:
#   1. a node with the wrong secret, another protocol version or another build (version and git
#      revision) is refused (exit 5) and logged; the coordinator keeps going
#   2. coordinator + 3 nodes train LeNet to exactly the in-process (workers=3) result
#   3. too few nodes: a clear message after join_timeout
#   4. a node killed with SIGKILL mid-training: detected within seconds, the
#      report names it, the last checkpoint is intact
#   5. a stopped node (SIGSTOP): treated as dead after dead_after
#   6. a 2-node run resumed mid-epoch from its checkpoint ends bit for bit where the uninterrupted one ends
#   7. a dynamic model (gated graph network) on 2 nodes, each replica on the graph actor runtime,
#      trains to the in-process (workers=2) result
#   8. elastic = true: a node killed mid-epoch, training goes on over 2 nodes; a restarted node
#      joins at the next epoch boundary and the run finishes on 3
#   9. elastic = true and a stopped node (SIGSTOP): dropped after dead_after, the run finishes on 2;
#      with compression, the survivors' residuals and momentum carry over to the new ranks
#  10. RedSync compression ([compress]): 3 nodes train to exactly the in-process result,
#      the packed messages crossing the data plane and the control messages crossing the
#      control plane through TLS (cluster.tls=always)
#  11. elastic = true and a node that joins while the cluster re-forms after a loss: it is
#      placed by that re-forming or the next epoch's, never a second forming at once (found by
#      tests/soak: "2 ranks cannot be placed on 3 nodes" ended the run)
#  12. certificates ([cluster] certificate, key, ca_file; taihu-node --certificate --key --ca-file),
#      made with the openssl command as the README shows: nodes of the cluster's CA train; a node
#      without a certificate and one of another CA are refused at once (exit 5), and so are nodes
#      that trust the cluster's CA but whose own certificate another CA signed, that signs itself
#      or that has expired, naming OpenSSL's reason (issue 50: they retried until join_timeout)
#  13. cluster launchers: 3 ranks with Open MPI's variables (rank 0 coordinates and trains; the
#      address, port and a fresh secret pass through the rendezvous directory) and 2 ranks with
#      torchrun's (MASTER_ADDR:MASTER_PORT, a secret file) train to the in-process result; a rank
#      whose rank 0 never comes names the rendezvous file it waited for; a rank whose [cluster] tls
#      differs from rank 0's is refused, naming both (exit 5; issue 50: it took rank 0's)
#  14. [cluster] transport = mpi under mpirun -np 4 (--oversubscribe): LeNet, plain and compressed,
#      equals the in-process 4-worker result bit for bit; a rank killed mid-run ends the job,
#      named, with the last checkpoint intact (it resumes); bad transport configs are exit 2
#  15. where a Slurm cluster answers (srun, sinfo): srun -n 3 trains to the in-process result, over
#      taihu's data plane (ranks meet in a directory) and over MPI (srun --mpi=pmix)
#  16. SIGTERM and SIGINT while waiting (issue 50: a waiting coordinator ignored them until
#      join_timeout): a coordinator waiting for its nodes, a launcher's rank 0 waiting for its ranks
#      (also in mpirun's PMIx fence; its join hint names this host, not 0.0.0.0), a rank waiting at
#      the rendezvous and a node waiting for its coordinator each exit 143 (130) within 2 s, leaving
#      no rendezvous file
# Skips (exit 77) when Fashion-MNIST is absent.
#   usage: cluster_test.sh BUILD_DIR SOURCE_DIR [case...]
set -uo pipefail
build=$1
src=$2
shift 2
cases=("$@")
((${#cases[@]})) || cases=(train timeout kill stop kill-eval resume graph elastic elastic-stop elastic-join compress
                            certificates launcher signals mpi slurm)
train="$build/apps/taihu-train"
node="$build/apps/taihu-node"
data=/usr/share/datasets/fashion-mnist
if [[ ! -f $data/train-images-idx3-ubyte.gz && ! -f $data/train-images-idx3-ubyte ]]; then
  echo "SKIP: Fashion-MNIST is not installed ($data; apt-get install dataset-fashion-mnist)"
  exit 77
fi
work=$(mktemp -d)
pids=()
launcher=()  # a command the coordinator runs under (e.g. prlimit)
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null; done
  [[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"
}
trap cleanup EXIT
passed=0
failed=0
check() {  # check NAME CONDITION-STATUS [details file]
  if [[ $2 -eq 0 ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $1"
    [[ -n ${3:-} && -f $3 ]] && bash "$src/tests/support/failure_log.sh" "$3"
  fi
}

head -c 32 /dev/urandom | base64 >"$work/secret" && chmod 600 "$work/secret"
echo "not the secret" >"$work/wrong" && chmod 600 "$work/wrong"
config="$src/config/lenet-fashion-cluster.ini"
common=(--config-file="$config" cluster.secret_file="$work/secret" cluster.port=0 data.limit_test=500
        output.dir="$work/out" --progress=lines)

# start_coordinator NAME [key=value...]: runs taihu-train in the background, waits for its port
start_coordinator() {
  local name=$1
  shift
  rm -f "$work/$name.port"
  ${launcher[@]+"${launcher[@]}"} "$train" "${common[@]}" cluster.port_file="$work/$name.port" "$@" \
    >"$work/$name.log" 2>&1 &
  coordinator=$!
  pids+=("$coordinator")
  for _ in $(seq 300); do
    [[ -s $work/$name.port ]] && break
    sleep 0.1
  done
  port=$(cat "$work/$name.port" 2>/dev/null)
}
start_node() {  # start_node NAME [options]; sets $last
  local name=$1
  shift
  "$node" --coordinator=127.0.0.1:"$port" --secret-file="$work/secret" --name="$name" --join-timeout=20 "$@" \
    >"$work/$name.log" 2>&1 &
  last=$!
  pids+=("$last")
}
start_nodes() {  # start_nodes NAME... [-- OPTION...]: start_node for each; sets $node_pids
  local names=()
  while (($#)) && [[ $1 != -- ]]; do
    names+=("$1")
    shift
  done
  (($#)) && shift
  node_pids=()
  for n in "${names[@]}"; do
    start_node "$n" "$@"
    node_pids+=("$last")
  done
}
same_report() {  # same_report LABEL A.json B.json KEY...: the two reports agree on every key (printed)
  python3 - "$@" <<'PY'
import json, sys
label, pa, pb, *keys = sys.argv[1:]
a, b = json.load(open(pa)), json.load(open(pb))
diff = {k: (a[k], b[k]) for k in keys if a[k] != b[k]}
print(label + ":", {k: a[k] for k in keys}, "differences:", diff or "none")
sys.exit(1 if diff else 0)
PY
}
# within SECONDS PID [START]: waits for PID; $rc is its exit status, $took the seconds since START (a
# `date +%s.%N`, by default now); true if it ended within SECONDS
within() {
  local t0=${3:-$(date +%s.%N)} t1
  wait "$2"
  rc=$?
  t1=$(date +%s.%N)
  took=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
  python3 -c "import sys; sys.exit(0 if $t1 - $t0 < $1 else 1)"
}
wait_for_line() {  # wait_for_line FILE PATTERN SECONDS
  for _ in $(seq $(($3 * 10))); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}

small=(epochs=1 data.limit_train=960)

# Bad cluster configs fail at once, naming the key.
out=$("$train" "${common[@]}" cluster.secret_file= 2>&1)
[[ $? -eq 2 ]] && grep -q "secret_file.*nodes > 0 needs a cluster secret" <<<"$out"
check "no secret file: exit 2 naming the key" $?
out=$("$train" "${common[@]}" workers=4 2>&1)
[[ $? -eq 2 ]] && grep -q "key 'workers'.*must be a multiple of nodes = 3" <<<"$out"
check "workers not a multiple of nodes: exit 2" $?
out=$("$train" "${common[@]}" cluster.poll_us=-1 2>&1)
[[ $? -eq 2 ]] && grep -q "key 'poll_us'.*must be in 0..1000000" <<<"$out"
check "poll_us out of range: exit 2 naming the key" $?
out=$("$train" "${common[@]}" cluster.tls=sometimes 2>&1)
[[ $? -eq 2 ]] && grep -q "key 'tls'.*must be between_hosts, always or off, not 'sometimes'" <<<"$out"
check "tls not a mode: exit 2 naming the key" $?
out=$("$train" "${common[@]}" cluster.certificate="$work/secret" 2>&1)
[[ $? -eq 2 ]] && grep -q "key 'certificate'.*\[cluster\] key is missing: certificates need all three" <<<"$out"
check "a certificate without its key: exit 2 naming the keys" $?
out=$("$node" --coordinator=127.0.0.1:1 --secret-file="$work/secret" --certificate="$work/secret" \
  --key="$work/wrong" --ca-file="$work/secret" 2>&1)
[[ $? -eq 2 ]] && grep -q "cannot use the private key" <<<"$out"
check "taihu-node: a key that is not a key: exit 2 naming the file" $?
out=$("$train" "${common[@]}" cluster.secret_file="$work/missing" 2>&1)
[[ $? -eq 2 ]] && grep -q "cannot read the cluster secret file" <<<"$out"
check "missing secret file: exit 2" $?

for c in "${cases[@]}"; do
  case $c in
  train)  # also the refused intruder, and strangers at the control and status ports
    # A tight descriptor limit (256 at most), as on many hosts: what strangers hold must not starve it.
    launcher=(prlimit --nofile=256:256 --)
    start_coordinator train "${small[@]}" status.port=0 status.port_file="$work/status.port" \
      --report="$work/cluster.json"
    launcher=()
    [[ -n $port ]]
    check "coordinator listens" $? "$work/train.log"
    rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
    rss_before=$(rss "$coordinator")
    # Garbage bytes, a stranger's HTTP request, and CAF's own handshake header announcing a 4 GB
    # payload (before: the coordinator allocated it unauthenticated, 70 MB -> 3 GB): each dropped
    # at once, the coordinator goes on without growing.
    python3 - "$port" <<'PY'
import socket, struct, sys, time
basp = struct.pack(">BBBBIQQQ", 1, 0, 0, 0, 0xFFFFFFFF, 0, 0, 0)  # client handshake, 4 GB payload
for payload in (bytes(range(256)) * 8, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", basp, basp, basp):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    s.sendall(payload)
    s.settimeout(5)
    start = time.time()
    try:
        while s.recv(4096):
            pass
    except OSError:
        pass
    if time.time() - start > 2:
        sys.exit("the control port kept a garbage connection open for %.1f s" % (time.time() - start))
    s.close()
PY
    check "garbage at the control port is dropped at once" $? "$work/train.log"
    kill -0 "$coordinator" 2>/dev/null
    check "the coordinator survives garbage at its control port" $? "$work/train.log"
    rss_after=$(rss "$coordinator")
    echo "coordinator resident memory before / after garbage and 4 GB headers: ${rss_before} / ${rss_after} kB"
    ((rss_after - rss_before < 65536))
    check "a 4 GB header from a stranger allocates nothing (coordinator RSS ${rss_before} -> ${rss_after} kB)" $?
    "$node" --coordinator=127.0.0.1:"$port" --secret-file="$work/wrong" --name=intruder --join-timeout=20 \
      >"$work/intruder.log" 2>&1
    rc=$?
    [[ $rc -eq 5 ]] && grep -q "did not admit this node: refused: wrong cluster secret" "$work/intruder.log"
    check "a node with the wrong secret is refused (exit $rc)" $? "$work/intruder.log"
    grep -q "refused node 'intruder' (127.0.0.1:[0-9]*): it does not hold the cluster secret" "$work/train.log"
    check "the coordinator logs the refusal" $? "$work/train.log"
    "$node" --coordinator=127.0.0.1:"$port" --secret-file="$work/secret" --name=future --protocol-version=99 \
      --join-timeout=20 >"$work/future.log" 2>&1
    rc=$?
    [[ $rc -eq 5 ]] && grep -q "protocol version 99 (the coordinator speaks [0-9]*)" "$work/future.log" &&
      grep -q "refused node 'future' (127.0.0.1:[0-9]*): it speaks cluster protocol version 99, this side [0-9]*" "$work/train.log"
    check "a node of another protocol version is refused and logged (exit $rc)" $? "$work/future.log"
    "$node" --coordinator=127.0.0.1:"$port" --secret-file="$work/secret" --name=other-build --build="9.9.9 (git other)" \
      --join-timeout=20 >"$work/other-build.log" 2>&1
    rc=$?
    [[ $rc -eq 5 ]] && grep -q "refused: this node runs taihu 9.9.9 (git other), the coordinator [0-9.]* (git " "$work/other-build.log" &&
      grep -q "refused node 'other-build': it runs taihu 9.9.9 (git other), this coordinator" "$work/train.log"
    check "a node of another build is refused, naming both builds (exit $rc)" $? "$work/other-build.log"
    # 1,100 idle connections each to the control and the status port, held while the nodes join and
    # train (before: the coordinator ran out of descriptors, spun at 93% CPU, and no node could join).
    python3 - "$port" "$(cat "$work/status.port")" "$work/flood.ready" <<'PY' &
import resource, socket, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
for port in (int(sys.argv[1]), int(sys.argv[2])):
    for _ in range(1100):
        try:
            held.append(socket.create_connection(("127.0.0.1", port), timeout=2))
        except OSError:
            pass
open(sys.argv[3], "w").write(str(len(held)))
time.sleep(120)
PY
    flood=$!
    pids+=("$flood")
    wait_for_line "$work/flood.ready" "" 60
    echo "idle connections opened: $(cat "$work/flood.ready" 2>/dev/null)"
    start_nodes a b c
    wait "$coordinator"
    check "coordinator + 3 nodes finish while strangers hold 2,200 connections (exit $?)" $? "$work/train.log"
    kill "$flood" 2>/dev/null
    grep -q "control port: 32 connections are open (the most it keeps): closed the oldest" "$work/train.log" &&
      grep -q "status endpoint: 32 connections are open (the most it keeps): closed the oldest" "$work/train.log"
    check "the coordinator caps and logs the held connections" $? "$work/train.log"
    for p in "${node_pids[@]}"; do
      wait "$p"
      check "node exits 0" $? "$work/a.log"
    done
    "$train" "${common[@]}" "${small[@]}" nodes=0 --report="$work/inproc.json" >"$work/inproc.log" 2>&1
    check "in-process workers=3 run" $? "$work/inproc.log"
    same_report "cluster vs in-process" "$work/cluster.json" "$work/inproc.json" train_loss test_loss test_accuracy \
      iterations workers
    check "3 nodes train to the in-process result" $?
    ;;
  resume)
    # A 2-node run resumed mid-epoch from its own checkpoint ends exactly where the uninterrupted
    # run ends (before: the nodes' replicas started from their initial weights and solver state).
    run=(nodes=2 workers=2 epochs=2 data.limit_train=960 output.checkpoint_every=10 output.keep_all=true)
    start_coordinator resume-full "${run[@]}" output.dir="$work/rfull" --report="$work/resume-full.json"
    start_nodes ra rb
    wait "$coordinator"
    check "resume: the uninterrupted 2-node run finishes (exit $?)" $? "$work/resume-full.log"
    for p in "${node_pids[@]}"; do wait "$p"; done
    start_coordinator resume-half "${run[@]}" output.dir="$work/rhalf" --report="$work/resume-half.json" \
      --resume="$work/rfull/lenet-fashion-cluster-iter40.ckpt"
    start_nodes rc rd
    wait "$coordinator"
    check "resume: the 2-node run resumed at iteration 40 finishes (exit $?)" $? "$work/resume-half.log"
    for p in "${node_pids[@]}"; do wait "$p"; done
    grep -q "resumed from .*: epoch 2 batch 10 (iteration 40)" "$work/resume-half.log"
    check "resume: it starts at epoch 2 batch 10" $? "$work/resume-half.log"
    same_report "2 nodes, uninterrupted vs resumed" "$work/resume-full.json" "$work/resume-half.json" train_loss \
      test_loss test_accuracy iterations workers
    check "resume: 2 nodes resumed at iteration 40 end bit for bit where the uninterrupted run ends" $?
    ;;
  graph)
    # A dynamic model's replicas on 2 nodes: the same trajectory as 2 in-process workers.
    saved=("${common[@]}")
    common=(--config-file="$src/config/ggnn-dag.ini" cluster.secret_file="$work/secret" cluster.port=0 epochs=1
            batch_size=16 data.train_size=640 data.dev_size=64 data.test_size=128 output.dir="$work/gout"
            --progress=lines)
    start_coordinator graph nodes=2 --report="$work/graph-cluster.json"
    start_nodes g1 g2
    wait "$coordinator"
    check "graph: coordinator + 2 nodes finish (exit $?)" $? "$work/graph.log"
    for p in "${node_pids[@]}"; do wait "$p"; done
    "$train" "${common[@]}" workers=2 --report="$work/graph-inproc.json" >"$work/graph-inproc.log" 2>&1
    check "graph: in-process workers=2 run" $? "$work/graph-inproc.log"
    # Both on the graph actor runtime (vertex-executor actors in each replica's process).
    same_report "graph model, cluster vs in-process" "$work/graph-cluster.json" "$work/graph-inproc.json" \
      train_loss test_loss test_accuracy dev_accuracy iterations workers runner &&
      grep -q '"runner": "data-parallel, actors"' "$work/graph-cluster.json"
    check "graph: 2 nodes train a dynamic model to the in-process result" $?
    common=("${saved[@]}")
    ;;
  elastic)
    start_coordinator elastic epochs=2 data.limit_train=9600 elastic=true output.checkpoint_every=20 \
      cluster.dead_after=3 sync.step_timeout=60 --report="$work/elastic.json"
    start_nodes a-elastic b-elastic c-elastic -- --dead-after=3
    wait_for_line "$work/elastic.log" "epoch 1/2 100/" 90
    check "elastic: 100 iterations on 3 nodes" $? "$work/elastic.log"
    kill -KILL "${node_pids[1]}"
    wait_for_line "$work/elastic.log" "elastic: lost node [0-9] 'b-elastic'; continuing on 2 nodes with 2 ranks" 20
    check "elastic: the run goes on over the 2 remaining nodes" $? "$work/elastic.log"
    start_node d-elastic --dead-after=3  # the restarted node
    node_pids+=("$last")
    wait "$coordinator"
    rc=$?
    check "elastic: training finishes (exit $rc)" $rc "$work/elastic.log"
    grep -q "elastic: nodes joined; continuing on 3 nodes with 3 ranks x batch 16 from epoch 2 batch 0" "$work/elastic.log"
    check "elastic: the restarted node joins at the epoch boundary" $? "$work/elastic.log"
    python3 - "$work/elastic.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("elastic run:", {k: r[k] for k in ["workers", "test_accuracy", "iterations"]})
sys.exit(0 if r["workers"] == 3 and r["test_accuracy"] > 0.6 else 1)
PY
    check "elastic: 3 workers at the end, a trained model" $?
    for survivor in "a-elastic ${node_pids[0]}" "c-elastic ${node_pids[2]}" "d-elastic ${node_pids[3]}"; do
      read -r survivor_name survivor_pid <<<"$survivor"
      wait "$survivor_pid"
      rc=$?
      check "elastic: each node that was not killed finishes cleanly ($survivor_name: exit $rc)" $rc \
        "$work/$survivor_name.log"
    done
    ;;
  elastic-join)
    # b is killed while a is stopped: the re-forming waits for a (its replicas must be dropped),
    # and d joins meanwhile; a resumes before dead_after.
    start_coordinator ejoin epochs=2 data.limit_train=4800 display=20 elastic=true output.checkpoint_every=20 \
      cluster.dead_after=4 sync.step_timeout=60 --report="$work/ejoin.json"
    start_nodes a-ejoin b-ejoin c-ejoin -- --dead-after=4
    wait_for_line "$work/ejoin.log" "epoch 1/2 20/" 90
    check "elastic-join: 20 iterations on 3 nodes" $? "$work/ejoin.log"
    kill -STOP "${node_pids[0]}"
    kill -KILL "${node_pids[1]}"
    start_node d-ejoin --dead-after=4
    node_pids+=("$last")
    wait_for_line "$work/ejoin.log" "node 3 'd-ejoin' joined" 3
    check "elastic-join: d joins while the cluster re-forms" $? "$work/ejoin.log"
    kill -CONT "${node_pids[0]}"
    wait "$coordinator"
    rc=$?
    check "elastic-join: training finishes (exit $rc)" $rc "$work/ejoin.log"
    grep -q "elastic: lost node [0-9] 'b-ejoin'; continuing on 3 nodes with 3 ranks" "$work/ejoin.log"
    check "elastic-join: the re-forming after the loss places d" $? "$work/ejoin.log"
    python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(0 if r["workers"] == 3 else 1)' \
      "$work/ejoin.json"
    check "elastic-join: 3 workers at the end" $?
    for p in "${node_pids[0]}" "${node_pids[2]}" "${node_pids[3]}"; do
      wait "$p"
      rc=$?
      check "elastic-join: each node that was not killed finishes cleanly (exit $rc)" $rc
    done
    ;;
  elastic-stop)
    # With RedSync compression: the survivors' compressor states carry over to the new ranks.
    start_coordinator estop epochs=1 data.limit_train=9600 elastic=true output.checkpoint_every=20 \
      cluster.dead_after=3 sync.step_timeout=60 --report="$work/estop.json" \
      compress.method=bsearch compress.density=0.01 compress.momentum=0.9 solver.momentum=0
    start_nodes a-estop b-estop c-estop -- --dead-after=3
    wait_for_line "$work/estop.log" "epoch 1/1 100/" 90
    check "elastic-stop: 100 iterations on 3 nodes" $? "$work/estop.log"
    kill -STOP "${node_pids[1]}"
    wait "$coordinator"
    rc=$?
    check "elastic-stop: training finishes without the stopped node (exit $rc)" $rc "$work/estop.log"
    grep -q "elastic: lost node [0-9] 'b-estop'; continuing on 2 nodes with 2 ranks" "$work/estop.log"
    check "elastic-stop: the coordinator names the stopped node" $? "$work/estop.log"
    kill -CONT "${node_pids[1]}"
    for _ in $(seq 150); do kill -0 "${node_pids[1]}" 2>/dev/null || break; sleep 0.1; done
    wait "${node_pids[1]}"
    rc=$?
    [[ $rc -eq 8 ]] && grep -q "this process was stopped or starved for" "$work/b-estop.log"
    check "elastic-stop: the stopped node exits 8 when it resumes (exit $rc)" $? "$work/b-estop.log"
    check "elastic-stop: the stopped node is dropped" $? "$work/estop.log"
    # Each survivor's one old rank goes to its one new rank, weighted 2/3.
    [[ $(cat "$work/a-estop.log" "$work/c-estop.log" |
         grep -c "compressor residuals and momentum of rank(s) [0-9] of 3 carried over (x 0.6667)") -eq 2 ]]
    check "elastic-stop: the survivors' compressor states carry over to the 2 new ranks" $? "$work/a-estop.log"
    ! grep -q "start from zero\|not restored" "$work/a-estop.log" "$work/c-estop.log"
    check "elastic-stop: no compressor state lost on the survivors" $? "$work/c-estop.log"
    for k in 0 2; do
      wait "${node_pids[$k]}"
      check "elastic-stop: surviving node $k exits 0 (exit $?)" $?
    done
    ;;
  compress)
    sparse=(compress.method=bsearch compress.density=0.01 compress.momentum=0.9 solver.momentum=0)
    # TLS on every connection of both planes, although the nodes share a host (no same-host copies).
    start_coordinator compress "${small[@]}" "${sparse[@]}" cluster.tls=always --report="$work/compress.json"
    start_nodes a-compress b-compress c-compress
    wait "$coordinator"
    check "compress: coordinator + 3 nodes finish (exit $?)" $? "$work/compress.log"
    # Each node hears of the run's end through TLS (its relay outlives the coordinator's port): exit 0.
    for p in "${node_pids[@]}"; do
      wait "$p"
      check "compress: node $p exits 0 (exit $?)" $? "$work/a-compress.log"
    done
    grep -q "data plane on .* (tls = always)" "$work/a-compress.log"
    check "compress: the nodes' data planes run TLS" $? "$work/a-compress.log"
    grep -q "control plane to .* runs TLS 1.3" "$work/a-compress.log"
    check "compress: the nodes' control connections run TLS" $? "$work/a-compress.log"
    "$train" "${common[@]}" "${small[@]}" "${sparse[@]}" nodes=0 --report="$work/compress-inproc.json" \
      >"$work/compress-inproc.log" 2>&1
    check "compress: in-process workers=3 run" $? "$work/compress-inproc.log"
    same_report "compressed, cluster vs in-process" "$work/compress.json" "$work/compress-inproc.json" train_loss \
      test_loss test_accuracy iterations workers bytes_sent_per_iteration &&
      python3 -c 'import json, sys; a = json.load(open(sys.argv[1]))
sys.exit(0 if any(x["algorithm"] == "compressed ring allgather" for x in a["buckets"])
         and a["bytes_sent_per_iteration"] < 0.5 * a["dense_bytes_per_iteration"] else 1)' "$work/compress.json"
    check "compress: 3 nodes train to the in-process result, sending fewer bytes" $?
    ;;
  certificates)  # TLS authenticated by certificates, made as the README shows (the openssl command)
    if ! command -v openssl >/dev/null; then
      echo "SKIP certificates: no openssl command (apt-get install openssl)"
      continue
    fi
    pki() {  # pki DIR NAME...: a CA in DIR and a certificate and key for each NAME
      mkdir -p "$1" && (cd "$1" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$(basename "$1") CA" \
          -keyout ca.key -out ca.pem 2>/dev/null &&
        for n in "${@:2}"; do
          openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$n" -keyout "$n.key" \
            -out "$n.csr" 2>/dev/null &&
            openssl x509 -req -in "$n.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out "$n.pem" 2>/dev/null
        done && chmod 600 ./*.key)
    }
    pki "$work/pki" coordinator a-cert b-cert && pki "$work/pki-other" intruder
    check "certificates: made with openssl" $?
    with_cert() { echo "--certificate=$1/$2.pem" "--key=$1/$2.key" "--ca-file=$1/ca.pem"; }
    start_coordinator certificates nodes=2 workers=2 "${small[@]}" cluster.tls=always \
      cluster.certificate="$work/pki/coordinator.pem" cluster.key="$work/pki/coordinator.key" \
      cluster.ca_file="$work/pki/ca.pem" --report="$work/certificates.json"
    # A node with the secret but no certificate, and one whose certificate another CA signed:
    # refused at once (exit 5), naming why.
    start_node no-cert
    wait "$last"
    [[ $? -eq 5 ]] && grep -q "the cluster uses certificates; give this node its own" "$work/no-cert.log"
    check "certificates: a node without one is refused (exit 5)" $? "$work/no-cert.log"
    # shellcheck disable=SC2046  # the flags are words
    start_node intruder $(with_cert "$work/pki-other" intruder)
    wait "$last"
    [[ $? -eq 5 ]] && grep -q "TLS failed: certificate verify failed" "$work/intruder.log" &&
      wait_for_line "$work/certificates.log" "refused node 'intruder' .*failed the TLS handshake" 5
    check "certificates: a node of another CA is refused (exit 5)" $? "$work/intruder.log"
    # Nodes that trust the cluster's CA but whose own certificate the coordinator rejects: another
    # CA's, one that signs itself, an expired one (openssl ca takes dates in the past). Refused at
    # once, naming OpenSSL's reason and what to do, and logged by the coordinator.
    (cd "$work/pki" &&
      openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=self" \
        -keyout self.key -out self.pem 2>/dev/null &&
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=late" -keyout late.key \
        -out late.csr 2>/dev/null &&
      printf '%s\n' "[ca]" "default_ca = cluster" "[cluster]" "database = index.txt" "new_certs_dir = ." \
        "serial = serial" "default_md = sha256" "policy = any" "[any]" "commonName = supplied" >ca.cnf &&
      : >index.txt && echo 01 >serial &&
      openssl ca -batch -config ca.cnf -notext -cert ca.pem -keyfile ca.key -in late.csr \
        -startdate 20200101000000Z -enddate 20200102000000Z -out late.pem 2>/dev/null &&
      cp ../pki-other/intruder.pem stranger.pem && cp ../pki-other/intruder.key stranger.key && chmod 600 ./*.key)
    check "certificates: a self-signed and an expired certificate made with openssl" $?
    declare -A rejected=([stranger]="unable to get local issuer certificate" [self]="self-signed certificate"
                         [late]="certificate has expired")
    declare -A rejected_pid=()
    t_start=$(date +%s.%N)
    for n in stranger self late; do
      start_node "$n" --certificate="$work/pki/$n.pem" --key="$work/pki/$n.key" --ca-file="$work/pki/ca.pem"
      rejected_pid[$n]=$last
    done
    for n in stranger self late; do
      within 10 "${rejected_pid[$n]}" "$t_start"  # (a loaded host may take seconds to start three processes)
      in_time=$?
      [[ $rc -eq 5 && $in_time -eq 0 ]] &&
        grep -q "did not admit this node: the coordinator proved the secret, but rejected this node's certificate: ${rejected[$n]}; give this node a certificate that the cluster's CA" "$work/$n.log"
      check "certificates: a node whose certificate the coordinator rejects (${rejected[$n]}) exits 5 at once, not after its join_timeout (exit $rc in $took s)" $? "$work/$n.log"
    done
    # (At most one such line a second: the three came at once.)
    grep -q "refused node '[a-z]*' .*its certificate failed verification: " "$work/certificates.log"
    check "certificates: the coordinator logs why it rejected a certificate" $? "$work/certificates.log"
    # shellcheck disable=SC2046
    start_node a-cert $(with_cert "$work/pki" a-cert)
    a_pid=$last
    # shellcheck disable=SC2046
    start_node b-cert $(with_cert "$work/pki" b-cert)
    wait "$coordinator"
    check "certificates: coordinator + 2 nodes with certificates finish (exit $?)" $? "$work/certificates.log"
    for p in "$a_pid" "$last"; do
      wait "$p"
      check "certificates: node $p exits 0 (exit $?)" $? "$work/a-cert.log"
    done
    grep -q "control plane to .* runs TLS 1.3 (certificates verified both ways)" "$work/a-cert.log" &&
      grep -q "data plane on .* (tls = always, certificates)" "$work/a-cert.log"
    check "certificates: both planes of the nodes authenticate by certificates" $? "$work/a-cert.log"
    ;;
  timeout)
    start_coordinator timeout nodes=2 workers=2 cluster.join_timeout=2
    start_node lonely
    wait "$coordinator"
    rc=$?
    [[ $rc -eq 2 ]] && grep -q "only 1 of 2 nodes joined within join_timeout = 2 s (joined: 'lonely')" "$work/timeout.log"
    check "too few nodes: exit 2 with a clear message (exit $rc)" $? "$work/timeout.log"
    wait "$last"
    ;;
  kill | stop)
    # Long enough to be mid-training when the node goes; checkpoints every 20 iterations.
    start_coordinator "$c" epochs=1 data.limit_train=48000 solver.base_lr=0.01 output.checkpoint_every=20 \
      cluster.dead_after=3 sync.step_timeout=60 status.port=0 status.port_file="$work/$c.status"
    start_nodes "a-$c" "b-$c" "c-$c" -- --dead-after=3
    wait_for_line "$work/$c.log" "training starts" 60
    check "$c: training starts" $? "$work/$c.log"
    wait_for_line "$work/$c.log" "epoch 1/1 100/" 60  # checkpoints written
    check "$c: 100 iterations" $? "$work/$c.log"
    # The status endpoint: members, topology, Prometheus metrics.
    python3 - "$(cat "$work/$c.status")" <<'PY'
import json, sys, urllib.request
base = f"http://127.0.0.1:{sys.argv[1]}"
status = json.load(urllib.request.urlopen(base + "/status", timeout=5))
assert status["state"] == "training", status
assert [m["state"] for m in status["members"]] == ["training"] * 3, status
assert status["topology"]["rank_node"] == [0, 1, 2], status
assert status["iteration"] >= 100, status
metrics = urllib.request.urlopen(base + "/metrics", timeout=5).read().decode()
values = {l.split(" ")[0]: float(l.split(" ")[1]) for l in metrics.splitlines() if l and not l.startswith("#")}
assert values["taihu_iteration"] >= 100, metrics
assert values['taihu_members{state="training"}'] == 3, metrics
assert any(k.startswith("taihu_collective_bytes_sent_total{bucket=") and v > 0 for k, v in values.items()), metrics
PY
    check "$c: /status and /metrics" $?
    victim=${node_pids[1]}
    if [[ $c == kill ]]; then kill -KILL "$victim"; else kill -STOP "$victim"; fi
    t0=$(date +%s.%N)
    wait "$coordinator"
    rc=$?
    t1=$(date +%s.%N)
    seconds=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
    echo "$c: coordinator stopped ${seconds} s after the node was $( [[ $c == kill ]] && echo killed || echo stopped) (exit $rc)"
    grep -E "error" "$work/$c.log" | tail -n 2 | sed 's/^/    /'
    [[ $rc -eq 2 ]] && grep -qE "node [0-9] 'b-$c'" "$work/$c.log"
    check "$c: training stops with a report naming the node" $? "$work/$c.log"
    limit=$([[ $c == kill ]] && echo 5 || echo 12)
    python3 -c "import sys; sys.exit(0 if $t1 - $t0 < $limit else 1)"
    check "$c: detected within $limit s (took $seconds s)" $?
    grep -q "The last checkpoint .* is intact" "$work/$c.log" && [[ -s $work/out/lenet-fashion-cluster.ckpt ]]
    check "$c: the last checkpoint is intact" $? "$work/$c.log"
    # Logged once (issue 50: by the coordinator's actor and again by the app).
    lines=$(grep -c "The last checkpoint .* is intact" "$work/$c.log")
    [[ $lines -eq 1 ]]
    check "$c: the failure is logged once ($lines lines)" $? "$work/$c.log"
    # It resumes (in one process): the checkpoint is consistent.
    if [[ $c == kill ]]; then
      timeout 5 "$train" "${common[@]}" nodes=0 epochs=1 data.limit_train=48000 solver.base_lr=0.01 \
        --resume="$work/out/lenet-fashion-cluster.ckpt" >"$work/resume.log" 2>&1
      grep -q "resumed from .*: epoch 1 batch [1-9][0-9]*0 " "$work/resume.log"
      check "kill: the checkpoint loads" $? "$work/resume.log"
    fi
    kill -CONT "$victim" 2>/dev/null
    # The survivors learn that the run failed (exit 9, the reason logged); a stopped node that
    # resumes finds itself dropped for its silence (exit 8).
    names=("a-$c" "b-$c" "c-$c")
    for k in 0 1 2; do
      p=${node_pids[$k]}
      n=${names[$k]}
      for _ in $(seq 150); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$p" 2>/dev/null
      wait "$p" 2>/dev/null
      rc=$?
      if [[ $k -ne 1 ]]; then
        [[ $rc -eq 9 ]] && grep -q "the run failed: .*'b-$c'" "$work/$n.log"
        check "$c: surviving node $n exits 9 and logs why the run failed (exit $rc)" $? "$work/$n.log"
      elif [[ $c == stop ]]; then
        [[ $rc -eq 8 ]] && grep -q "this process was stopped or starved for" "$work/$n.log"
        check "stop: the stopped node exits 8 when it resumes (exit $rc)" $? "$work/$n.log"
      fi
    done
    ;;
  kill-eval)
    # Rank 0's node dies while the coordinator waits for its evaluation (the full test set).
    start_coordinator eval epochs=2 data.limit_train=960 data.limit_test=10000 sync.step_timeout=60
    start_nodes a-eval b-eval c-eval
    wait_for_line "$work/eval.log" "epoch 1/2 done" 60
    check "kill-eval: first epoch trained" $? "$work/eval.log"
    # The node of rank 0 is node 0: whichever joined first.
    victim_name=$(grep -o "node 0 '[a-z]*-eval'" "$work/eval.log" | head -1 | grep -o "[a-z]*-eval")
    declare -A pid_of=([a-eval]=${node_pids[0]} [b-eval]=${node_pids[1]} [c-eval]=${node_pids[2]})
    victim=${pid_of[$victim_name]:-}
    [[ -n $victim ]] && kill -KILL "$victim"
    t0=$(date +%s.%N)
    wait "$coordinator"
    rc=$?
    t1=$(date +%s.%N)
    seconds=$(python3 -c "print(f'{$t1 - $t0:.1f}')")
    echo "kill-eval: coordinator stopped ${seconds} s after rank 0's node was killed (exit $rc)"
    [[ $rc -eq 2 ]] && grep -qE "node 0 '$victim_name'" "$work/eval.log"
    check "kill-eval: the report names rank 0's node" $? "$work/eval.log"
    python3 -c "import sys; sys.exit(0 if $t1 - $t0 < 5 else 1)"
    check "kill-eval: detected within 5 s (took $seconds s)" $?
    for p in "${node_pids[@]}"; do
      for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$p" 2>/dev/null
      wait "$p" 2>/dev/null
    done
    ;;
  launcher)
    # As mpirun would start them: no taihu-node, no secret file, no port in the config.
    launched=(--config-file="$config" cluster.secret_file= cluster.join_timeout=30 data.limit_test=500
              "${small[@]}" --progress=lines)
    rank_pids=()
    for r in 0 1 2; do
      env OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=3 OMPI_COMM_WORLD_LOCAL_RANK=$r OMPI_COMM_WORLD_LOCAL_SIZE=3 \
        OMPI_MCA_ess_base_jobid="test$$" "$train" "${launched[@]}" output.dir="$work/mpi" \
        --report="$work/mpi-rank$r.json" >"$work/mpi-rank$r.log" 2>&1 &
      rank_pids+=("$!")
      pids+=("$!")
    done
    for r in 0 1 2; do
      wait "${rank_pids[$r]}"
      check "launcher: Open MPI rank $r exits 0 (exit $?)" $? "$work/mpi-rank$r.log"
    done
    grep -q "this rank coordinates 3 nodes at .* and is node 0" "$work/mpi-rank0.log" &&
      grep -q "node 0 'rank0@.*': joined the coordinator of this process" "$work/mpi-rank0.log" &&
      grep -q "node 2 'rank2@.*': joined the coordinator" "$work/mpi-rank2.log" &&
      grep -q "node 1 'rank1@.*': joined the coordinator" "$work/mpi-rank1.log"
    check "launcher: rank 0 coordinates and is node 0, in one process; node k is rank k" $? "$work/mpi-rank0.log"
    ! ls -A "$work/mpi" | grep -q '^\.taihu-'
    check "launcher: the rendezvous files are removed at the end" $?
    "$train" "${common[@]}" "${small[@]}" nodes=0 workers=3 --report="$work/launch-inproc3.json" \
      >"$work/launch-inproc3.log" 2>&1
    same_report "launcher (Open MPI) vs in-process" "$work/mpi-rank0.json" "$work/launch-inproc3.json" \
      test_loss test_accuracy train_loss
    check "launcher: 3 Open MPI ranks equal workers=3 in one process" $?
    # torchrun's variables: rank 0 listens on MASTER_PORT; the secret is a file both read.
    master_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    rank_pids=()
    for r in 0 1; do
      env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$master_port" \
        "$train" "${launched[@]}" nodes=2 workers=2 cluster.secret_file="$work/secret" output.dir="$work/torchrun" \
        --report="$work/torchrun-rank$r.json" >"$work/torchrun-rank$r.log" 2>&1 &
      rank_pids+=("$!")
      pids+=("$!")
    done
    for r in 0 1; do
      wait "${rank_pids[$r]}"
      check "launcher: torchrun rank $r exits 0 (exit $?)" $? "$work/torchrun-rank$r.log"
    done
    "$train" "${common[@]}" "${small[@]}" nodes=0 workers=2 --report="$work/launch-inproc2.json" \
      >"$work/launch-inproc2.log" 2>&1
    same_report "launcher (torchrun) vs in-process" "$work/torchrun-rank0.json" "$work/launch-inproc2.json" \
      test_loss test_accuracy train_loss
    check "launcher: 2 torchrun ranks equal workers=2 in one process" $?
    # The real mpirun, where Open MPI is installed (bash scripts/quickstart.sh bench-mpi installs it).
    if command -v mpirun >/dev/null; then
      as_root=()
      [[ $(id -u) -eq 0 ]] && as_root=(--allow-run-as-root)
      mpirun "${as_root[@]}" --oversubscribe -np 3 "$train" "${launched[@]}" nodes=3 workers=3 \
        output.dir="$work/mpirun" --report="$work/mpirun.json" >"$work/mpirun.log" 2>&1
      check "launcher: mpirun -np 3 exits 0 (exit $?)" $? "$work/mpirun.log"
      same_report "launcher (mpirun) vs in-process" "$work/mpirun.json" "$work/launch-inproc3.json" \
        test_loss test_accuracy train_loss
      check "launcher: mpirun -np 3 equals workers=3 in one process" $?
      if ! "$train" --version | grep -q "no PMIx"; then
        grep -q "the ranks meet through the launcher's PMIx store" "$work/mpirun.log"
        check "launcher: mpirun's ranks meet through its PMIx store" $? "$work/mpirun.log"
      fi
    else
      echo "launcher: no mpirun here; the Open MPI case ran with its variables set by hand"
    fi
    # A rank whose rank 0 never starts: it names what it waited for, within its join timeout.
    env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 \
      OMPI_MCA_ess_base_jobid="alone$$" "$train" "${launched[@]}" cluster.join_timeout=2 output.dir="$work/alone" \
      >"$work/alone.log" 2>&1
    rc=$?
    [[ $rc -eq 2 ]] && grep -q "\.taihu-alone$$\.host' did not appear in time (rank 0 writes it)" "$work/alone.log"
    check "launcher: a rank without its rank 0 names the rendezvous file (exit $rc)" $? "$work/alone.log"
    # Each rank keeps its own [cluster] tls: rank 1's always is not rank 0's off. Refused when it joins,
    # naming both modes (exit 5; issue 50: it trained in plaintext); rank 0 is then stopped (SIGTERM).
    master_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    rank_pids=()
    for r in 0 1; do
      mode=$([[ $r -eq 0 ]] && echo off || echo always)
      env RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT="$master_port" \
        "$train" "${launched[@]}" nodes=2 workers=2 cluster.secret_file="$work/secret" cluster.tls=$mode \
        output.dir="$work/tls-modes" >"$work/tls-rank$r.log" 2>&1 &
      rank_pids+=("$!")
      pids+=("$!")
    done
    within 20 "${rank_pids[1]}"
    in_time=$?
    [[ $rc -eq 5 && $in_time -eq 0 ]] &&
      grep -q "refused: this node uses \[cluster\] tls = always, the coordinator tls = off" "$work/tls-rank1.log" &&
      grep -q "refused node 'rank1@[^']*' (127.0.0.1:[0-9]*): it uses \[cluster\] tls = always, this side tls = off" \
        "$work/tls-rank0.log"
    check "launcher: a rank whose [cluster] tls differs from rank 0's is refused, naming both (exit $rc)" $? \
      "$work/tls-rank1.log"
    kill -TERM "${rank_pids[0]}" 2>/dev/null
    wait "${rank_pids[0]}"
    ;;
  signals)
    # SIGTERM (scancel's, before its SIGKILL) and SIGINT end every kind of waiting at once, with
    # 128 + the signal (issue 50: a coordinator waiting for its nodes went on until join_timeout).
    for sig in TERM INT; do
      status=$([[ $sig == TERM ]] && echo 143 || echo 130)
      start_coordinator "signal-$sig" nodes=2 workers=2 cluster.join_timeout=10 --report="$work/signal-$sig.json"
      wait_for_line "$work/signal-$sig.log" "waiting for 2 nodes" 30
      kill -"$sig" "$coordinator"
      within 2 "$coordinator"
      in_time=$?
      echo "signals: exit $rc $took s after the signal"
      [[ $rc -eq $status && $in_time -eq 0 ]] && grep -q "stopped while waiting for the nodes (0 of 2 joined)" \
        "$work/signal-$sig.log" && grep -q '"stopped": true' "$work/signal-$sig.json"
      check "signals: SIG$sig to a coordinator waiting for its nodes: exit $status within 2 s (exit $rc in $took s)" \
        $? "$work/signal-$sig.log"
    done
    # A launcher's rank 0 waiting for its ranks: its hint names this host, not the wildcard it
    # listens on (issue 50), and SIGTERM leaves no rendezvous file behind.
    rank0=(env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0
           OMPI_COMM_WORLD_LOCAL_SIZE=1 "$train" --config-file="$config" cluster.secret_file= nodes=2 workers=2
           data.limit_test=500 "${small[@]}" --progress=lines)
    OMPI_MCA_ess_base_jobid="sig$$" "${rank0[@]}" cluster.join_timeout=10 output.dir="$work/sig-rank0" \
      >"$work/sig-rank0.log" 2>&1 &
    p=$!
    pids+=("$p")
    wait_for_line "$work/sig-rank0.log" "waiting for 2 nodes" 30
    grep -q "waiting for 2 nodes .*: taihu-node --coordinator=$(hostname):[0-9]* --secret-file=PATH" \
      "$work/sig-rank0.log" && ! grep -q "coordinator=0\.0\.0\.0" "$work/sig-rank0.log"
    check "signals: a launcher's rank 0 hints at this host's name, not 0.0.0.0" $? "$work/sig-rank0.log"
    ls -A "$work/sig-rank0" | grep -q "^\.taihu-sig$$\."
    check "signals: rank 0 wrote its rendezvous files" $? "$work/sig-rank0.log"
    kill -TERM "$p"
    within 2 "$p"
    in_time=$?
    echo "signals: exit $rc $took s after the signal"
    [[ $rc -eq 143 && $in_time -eq 0 ]] && ! ls -A "$work/sig-rank0" | grep -q '^\.taihu-'
    check "signals: SIGTERM to a launcher's rank 0 waiting for its ranks: exit 143 within 2 s, no rendezvous file left (exit $rc in $took s)" \
      $? "$work/sig-rank0.log"
    # Under mpirun the ranks meet in its PMIx store, where rank 0 waits in a fence that nothing
    # cancels for ranks that have not come: SIGTERM to rank 0 while rank 1 never comes (found: its
    # fence held it until join_timeout).
    if command -v mpirun >/dev/null && ! "$train" --version | grep -q "no PMIx"; then
      as_root=()
      [[ $(id -u) -eq 0 ]] && as_root=(--allow-run-as-root)
      mpirun "${as_root[@]}" --oversubscribe -np 2 bash -c '[[ $OMPI_COMM_WORLD_RANK == 0 ]] || exec sleep 30
        exec "$@"' rank "$train" --config-file="$config" cluster.secret_file= nodes=2 workers=2 \
        cluster.join_timeout=10 output.dir="$work/sig-mpirun" >"$work/sig-mpirun.log" 2>&1 &
      m=$!
      pids+=("$m")
      wait_for_line "$work/sig-mpirun.log" "waiting for 2 nodes" 30
      victim=""
      for p in $(pgrep -P "$m"); do
        tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=0" && victim=$p
      done
      t0=$(date +%s.%N)
      [[ -n $victim ]] && kill -TERM "$victim"
      for _ in $(seq 100); do kill -0 "$victim" 2>/dev/null || break; sleep 0.05; done
      took=$(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')")
      wait "$m"
      rc=$?
      echo "signals: mpirun's rank 0 gone $took s after the signal (mpirun exit $rc)"
      [[ -n $victim && $rc -eq 143 ]] && python3 -c "import sys; sys.exit(0 if $took < 2 else 1)" &&
        grep -q "stopped while waiting for the nodes (1 of 2 joined)" "$work/sig-mpirun.log"
      check "signals: SIGTERM to mpirun's rank 0 waiting in the PMIx fence: exit 143 within 2 s (exit $rc in $took s)" \
        $? "$work/sig-mpirun.log"
    fi
    OMPI_MCA_ess_base_jobid="hint$$" "${rank0[@]}" cluster.join_timeout=1 output.dir="$work/hint-rank0" \
      >"$work/hint-rank0.log" 2>&1
    rc=$?
    [[ $rc -eq 2 ]] && grep -q "start the others with \`taihu-node --coordinator=$(hostname):[0-9]* " "$work/hint-rank0.log"
    check "signals: the join_timeout message of a launcher's rank 0 names this host (exit $rc)" $? "$work/hint-rank0.log"
    # Once (issue 50: rank 0's own node logged the run's failure too).
    lines=$(grep -c "only 1 of 2 nodes joined within join_timeout" "$work/hint-rank0.log")
    [[ $lines -eq 1 ]]
    check "signals: rank 0 logs the failure once ($lines lines)" $? "$work/hint-rank0.log"
    # A rank waiting at the rendezvous for its rank 0, and a node waiting for its coordinator (SIGINT
    # to a node as from a terminal: a script's background job would inherit SIGINT ignored).
    env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 \
      OMPI_MCA_ess_base_jobid="waiting$$" "$train" --config-file="$config" cluster.secret_file= nodes=2 workers=2 \
      cluster.join_timeout=10 output.dir="$work/sig-rank1" >"$work/sig-rank1.log" 2>&1 &
    p=$!
    pids+=("$p")
    free_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' \
      "$node" --coordinator=127.0.0.1:"$free_port" --secret-file="$work/secret" --join-timeout=10 \
      >"$work/sig-node.log" 2>&1 &
    q=$!
    pids+=("$q")
    sleep 1
    kill -TERM "$p"
    within 2 "$p"
    in_time=$?
    echo "signals: exit $rc $took s after the signal"
    [[ $rc -eq 143 && $in_time -eq 0 ]]
    check "signals: SIGTERM to a rank waiting at the rendezvous: exit 143 within 2 s (exit $rc in $took s)" $? \
      "$work/sig-rank1.log"
    kill -INT "$q"
    within 2 "$q"
    in_time=$?
    echo "signals: exit $rc $took s after the signal"
    [[ $rc -eq 130 && $in_time -eq 0 ]]
    check "signals: SIGINT to a node waiting for its coordinator: exit 130 within 2 s (exit $rc in $took s)" $? \
      "$work/sig-node.log"
    ;;
  mpi)
    out=$("$train" "${common[@]}" cluster.transport=pigeons 2>&1)
    [[ $? -eq 2 ]] && grep -q "key 'transport'.*must be taihu or mpi, not 'pigeons'" <<<"$out"
    check "mpi: an unknown transport is exit 2 naming the key" $?
    # Open MPI closes the components it loaded at MPI_Finalize, so a leak in one of them
    # (tests/sanitizers/lsan.supp) names no library unless its whole stack, back into libmpi, was
    # taken at the allocation: in an instrumented build, these ranks unwind without frame pointers.
    [[ -n ${ASAN_OPTIONS:-} ]] && export ASAN_OPTIONS="$ASAN_OPTIONS:fast_unwind_on_malloc=0"
    if ! command -v mpirun >/dev/null || "$train" --version | grep -q "no MPI"; then
      echo "mpi: skipped (no mpirun, or a build without libopenmpi-dev)"
      continue
    fi
    out=$("$train" "${common[@]}" cluster.transport=mpi 2>&1)
    [[ $? -eq 2 ]] && grep -q "key 'transport'.*mpi needs a cluster launcher" <<<"$out"
    check "mpi: transport = mpi without a launcher is exit 2 naming the key" $?
    as_root=()
    [[ $(id -u) -eq 0 ]] && as_root=(--allow-run-as-root)
    out=$(mpirun "${as_root[@]}" --oversubscribe -np 2 "$train" "${common[@]}" cluster.secret_file= nodes=2 \
      workers=2 cluster.transport=mpi elastic=true 2>&1)
    [[ $? -ne 0 ]] && grep -q "key 'transport'.*mpi cannot be elastic" <<<"$out"
    check "mpi: transport = mpi with elastic = true fails naming the key" $?
    mpi_run=(mpirun "${as_root[@]}" --oversubscribe -np 4 "$train" --config-file="$config" cluster.secret_file=
             cluster.join_timeout=30 data.limit_test=500 cluster.transport=mpi nodes=4 workers=4 --progress=lines)
    "${mpi_run[@]}" "${small[@]}" output.dir="$work/mpi-plain" --report="$work/mpi-plain.json" \
      >"$work/mpi-plain.log" 2>&1
    check "mpi: mpirun -np 4 over the MPI transport exits 0 (exit $?)" $? "$work/mpi-plain.log"
    for k in 0 1 2 3; do
      grep -q "node $k 'rank$k@.*chunks go over MPI (.*, MPI rank $k of 4" "$work/mpi-plain.log" || break
    done
    check "mpi: every node's chunks go over MPI, node k = MPI rank k" $? "$work/mpi-plain.log"
    "$train" "${common[@]}" "${small[@]}" nodes=0 workers=4 --report="$work/mpi-inproc.json" \
      >"$work/mpi-inproc.log" 2>&1
    same_report "MPI transport vs in-process" "$work/mpi-plain.json" "$work/mpi-inproc.json" \
      test_loss test_accuracy train_loss iterations
    check "mpi: 4 ranks over MPI equal workers=4 in one process" $?
    # RedSync's packed messages cross MPI the same way.
    sparse=(compress.method=bsearch compress.density=0.01 compress.momentum=0.9 solver.momentum=0)
    "${mpi_run[@]}" "${small[@]}" "${sparse[@]}" output.dir="$work/mpi-sparse" --report="$work/mpi-sparse.json" \
      >"$work/mpi-sparse.log" 2>&1
    check "mpi: compressed, mpirun -np 4 exits 0 (exit $?)" $? "$work/mpi-sparse.log"
    "$train" "${common[@]}" "${small[@]}" "${sparse[@]}" nodes=0 workers=4 --report="$work/mpi-sparse-inproc.json" \
      >"$work/mpi-sparse-inproc.log" 2>&1
    same_report "MPI transport vs in-process, compressed" "$work/mpi-sparse.json" "$work/mpi-sparse-inproc.json" \
      test_loss test_accuracy train_loss bytes_sent_per_iteration
    check "mpi: compressed, 4 ranks over MPI equal workers=4 in one process" $?
    # A rank that dies: mpirun ends the job and names it; the last checkpoint stays intact.
    "${mpi_run[@]}" epochs=1 data.limit_train=48000 solver.base_lr=0.01 output.checkpoint_every=20 \
      output.dir="$work/mpi-kill" >"$work/mpi-kill.log" 2>&1 &
    mpirun_pid=$!
    pids+=("$mpirun_pid")
    wait_for_line "$work/mpi-kill.log" "epoch 1/1 100/" 60
    check "mpi: 100 iterations before the kill" $? "$work/mpi-kill.log"
    victim=""
    for p in $(pgrep -P "$mpirun_pid"); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=2" && victim=$p
    done
    [[ -n $victim ]] && kill -KILL "$victim"
    wait "$mpirun_pid"
    rc=$?
    grep -E "rank 2|node 2" "$work/mpi-kill.log" | grep -vE "info|joined" | head -n 3 | sed 's/^/    /'
    [[ -n $victim && $rc -ne 0 ]] && grep -qE "process rank 2 .*(signal 9|Killed)|node 2 'rank2@" "$work/mpi-kill.log"
    check "mpi: a killed rank ends the job, named (exit $rc)" $? "$work/mpi-kill.log"
    ckpt="$work/mpi-kill/lenet-fashion-cluster.ckpt"
    timeout 10 "$train" "${common[@]}" nodes=0 workers=4 epochs=1 data.limit_train=48000 solver.base_lr=0.01 \
      --resume="$ckpt" >"$work/mpi-resume.log" 2>&1
    grep -q "resumed from .*: epoch 1 batch [1-9][0-9]*0 " "$work/mpi-resume.log"
    check "mpi: the last checkpoint is intact and loads" $? "$work/mpi-resume.log"
    ;;
  slurm)
    if ! command -v srun >/dev/null || ! timeout 5 sinfo -h -o %t 2>/dev/null | grep -qE "idle|mix"; then
      echo "slurm: skipped (no Slurm cluster answers here)"
      continue
    fi
    launched=(--config-file="$config" cluster.secret_file= cluster.join_timeout=30 data.limit_test=500
              "${small[@]}" nodes=3 workers=3 --progress=lines)
    (timeout 120 srun -N 1 -n 3 "$train" "${launched[@]}" output.dir="$work/srun" \
      --report="$work/srun.json" >"$work/srun.log" 2>&1)
    check "slurm: srun -n 3 exits 0 (exit $?)" $? "$work/srun.log"
    grep -q "rank 2 of 3 (Slurm, local rank 2 of 3)" "$work/srun.log"
    check "slurm: the ranks read srun's variables (rank, size, local rank and size)" $? "$work/srun.log"
    [[ -f $work/launch-inproc3.json ]] || "$train" "${common[@]}" "${small[@]}" nodes=0 workers=3 \
      --report="$work/launch-inproc3.json" >"$work/launch-inproc3.log" 2>&1
    same_report "srun vs in-process" "$work/srun.json" "$work/launch-inproc3.json" test_loss test_accuracy train_loss
    check "slurm: srun -n 3 equals workers=3 in one process" $?
    if srun --mpi=list 2>&1 | grep -q pmix && ! "$train" --version | grep -q "no MPI"; then
      (timeout 120 srun -N 1 -n 3 --mpi=pmix "$train" "${launched[@]}" cluster.transport=mpi \
        output.dir="$work/srun-mpi" --report="$work/srun-mpi.json" >"$work/srun-mpi.log" 2>&1)
      check "slurm: srun --mpi=pmix -n 3 over the MPI transport exits 0 (exit $?)" $? "$work/srun-mpi.log"
      grep -q "the ranks meet through the launcher's PMIx store" "$work/srun-mpi.log"
      check "slurm: srun --mpi=pmix's ranks meet through its PMIx store" $? "$work/srun-mpi.log"
      same_report "srun --mpi=pmix, MPI transport, vs in-process" "$work/srun-mpi.json" "$work/launch-inproc3.json" \
        test_loss test_accuracy train_loss
      check "slurm: srun --mpi=pmix over MPI equals workers=3 in one process" $?
    fi
    ;;
  esac
done

echo "cluster: $passed passed, $failed failed"
if ((failed > 0)); then
  # Each process's errors and warnings, to tell from a CI log alone what went wrong where.
  for f in "$work"/*.log; do
    echo "--- $(basename "$f"): errors and warnings"
    grep -E "\] (error|warning|critical) " "$f" | tail -n 8 | sed 's/^/    /'
  done
fi
((failed == 0))
