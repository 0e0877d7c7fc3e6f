#!/usr/bin/env bash
# taihu across hosts: the cluster run on the test bed (tests/multihost/testbed.sh), each host a
# network, UTS, PID, IPC and mount namespace of its own on a shaped link through one switch.
#
#   short (ctest `multihost`, about 2 minutes): coordinator + 3 nodes on hosts h1..h3 at 1 Gbit/s
#     (the coordinator and one node share h1), LeNet; h3's link cut for 2 s mid-run (less than
#     dead_after): the run waits it out and ends bit for bit where the in-process workers=3 run
#     ends. TLS is on between hosts by default: a capture at the switch holds no config string
#     the coordinator sends and no stream of plaintext floats; the same capture of a tls=off run
#     finds both (so the check can fail); the nodes log TLS on the control plane.
#   certificates, torchrun, mpirun, faults (ctest `multihost_slow`): see each case's function.
#
# Skips (exit 77, one line) without root or namespaces, or without Fashion-MNIST.
#   usage: multihost_test.sh BUILD_DIR SOURCE_DIR [case...]
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
shift 2
cases=("$@")
((${#cases[@]})) || cases=(short)
train="$build/apps/taihu-train"
node="$build/apps/taihu-node"
data=/usr/share/datasets/fashion-mnist
if [[ ! -f $data/train-images-idx3-ubyte.gz && ! -f $data/train-images-idx3-ubyte ]]; then
  echo "SKIP: Fashion-MNIST is not installed ($data; apt-get install dataset-fashion-mnist)"
  exit 77
fi
source "$src/tests/multihost/testbed.sh"
# Every host has its own /tmp; /var/tmp is the file system all of them share.
work=$(mktemp -d -p /var/tmp taihu-multihost.XXXXXX)
chmod 755 "$work"
cleanup() { [[ -n ${KEEP_WORK:-} ]] || rm -rf "$work"; }
trap cleanup EXIT
passed=0
failed=0
check() {  # check NAME STATUS [log file]
  if [[ $2 -eq 0 ]]; then
    passed=$((passed + 1))
    echo "ok: $1"
  else
    failed=$((failed + 1))
    echo "FAIL: $1"
    [[ -n ${3:-} && -f $3 ]] && bash "$src/tests/support/failure_log.sh" "$3"
  fi
}
wait_for_line() {  # wait_for_line FILE PATTERN SECONDS
  for _ in $(seq $(($3 * 10))); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
same_report() {  # same_report LABEL A.json B.json KEY...: the reports agree on every key
  python3 - "$@" <<'PY'
import json, sys
label, pa, pb, *keys = sys.argv[1:]
a, b = json.load(open(pa)), json.load(open(pb))
diff = {k: (a[k], b[k]) for k in keys if a[k] != b[k]}
print(label + ":", {k: a[k] for k in keys}, "differences:", diff or "none")
sys.exit(1 if diff else 0)
PY
}

head -c 32 /dev/urandom | base64 >"$work/secret" && chmod 600 "$work/secret"
config="$src/config/lenet-fashion-cluster.ini"
common=(--config-file="$config" cluster.secret_file="$work/secret" data.limit_test=500 --progress=lines)

# start_coordinator HOST NAME [key=value...]: taihu-train on HOST, listening on HOST's address;
# waits for its port (sets $coordinator, $port).
start_coordinator() {
  local host=$1 name=$2
  shift 2
  rm -f "$work/$name.port"
  tb_exec "$host" "$train" "${common[@]}" cluster.listen="$(tb_addr "$host")" cluster.port=0 \
    cluster.port_file="$work/$name.port" output.dir="$work/$name" "$@" >"$work/$name.log" 2>&1 &
  coordinator=$!
  for _ in $(seq 300); do
    [[ -s $work/$name.port ]] && break
    sleep 0.1
  done
  port=$(cat "$work/$name.port" 2>/dev/null)
}
# start_node HOST NAME COORDINATOR_HOST [option...]: taihu-node on HOST (sets $last).
start_node() {
  local host=$1 name=$2 at=$3
  shift 3
  tb_exec "$host" "$node" --coordinator="$at:$port" --secret-file="$work/secret" --name="$name" \
    --join-timeout=30 "$@" >"$work/$name.log" 2>&1 &
  last=$!
}
# wire_check PCAP: plaintext found in the capture (wire_check.py's JSON) into $work/wire.json.
wire_check() { python3 "$src/tests/multihost/wire_check.py" "$1" "$data" "lenet.ini" >"$work/wire.json"; }
wire_field() { python3 -c "import json,sys; print(json.load(open('$work/wire.json'))$1)"; }

short_case() {
  tb_up 3 1gbit || return $?
  local run=(epochs=1 data.limit_train=9600 display=20)
  tb_capture_start "$work/tls.pcap" || return 1
  start_coordinator h1 short "${run[@]}" --report="$work/short.json"
  [[ -n $port ]]
  check "the coordinator listens on h1 ($(tb_addr h1):$port)" $? "$work/short.log"
  local nodes=()
  start_node h1 a h1 && nodes+=("$last")
  start_node h2 b h1 && nodes+=("$last")
  start_node h3 c h1 && nodes+=("$last")
  wait_for_line "$work/short.log" "epoch 1/1 40/" 90
  check "3 nodes on 3 hosts train (40 iterations)" $? "$work/short.log"
  tb_cut h3
  sleep 2
  tb_restore h3
  back=$(now)
  wait "$coordinator"
  check "the run outlasts a 2 s cut of h3's link (coordinator exit $?)" $? "$work/short.log"
  local n rc
  for n in "${nodes[@]}"; do
    wait "$n"
    rc=$?
    check "a node exits 0 (exit $rc)" $rc "$work/a.log"
  done
  tb_capture_stop
  "$train" "${common[@]}" "${run[@]}" nodes=0 output.dir="$work/inproc" --report="$work/inproc.json" \
    >"$work/inproc.log" 2>&1
  check "in-process workers=3 run" $? "$work/inproc.log"
  same_report "3 hosts vs in-process" "$work/short.json" "$work/inproc.json" train_loss test_loss test_accuracy \
    iterations workers
  check "3 hosts, one link cut for 2 s, train to the in-process result bit for bit" $?
  grep -q "control plane to .* runs TLS 1.3" "$work/b.log" && grep -q "control plane to .* runs TLS 1.3" "$work/c.log"
  check "nodes on other hosts than the coordinator's run TLS on the control plane" $? "$work/b.log"
  no_plaintext "$work/tls.pcap" "tls between hosts"

  # The same capture of a tls=off run finds both: the check above can fail.
  tb_capture_start "$work/plain.pcap" || return 1
  start_coordinator h1 plain epochs=1 data.limit_train=960 cluster.tls=off
  nodes=()
  start_node h1 pa h1 && nodes+=("$last")
  start_node h2 pb h1 && nodes+=("$last")
  start_node h3 pc h1 && nodes+=("$last")
  wait "$coordinator"
  check "a tls=off run on 3 hosts (exit $?)" $? "$work/plain.log"
  for n in "${nodes[@]}"; do wait "$n"; done
  tb_capture_stop
  wire_check "$work/plain.pcap"
  echo "wire (tls=off): $(cat "$work/wire.json")"
  [[ $(wire_field '["marker_hits"]') != "{}" && $(wire_field '["tensor_streams"]') != "[]" ]]
  check "with tls=off the same capture finds the config string and plaintext floats" $?
  tb_down
}

# no_plaintext PCAP LABEL: the capture holds traffic but no config string and no float stream.
no_plaintext() {
  wire_check "$1"
  echo "wire ($2): $(cat "$work/wire.json")"
  [[ $(wire_field '["bytes"]') -gt 1000000 && $(wire_field '["marker_hits"]') == "{}" &&
    $(wire_field '["tensor_streams"]') == "[]" ]]
  check "$2: the switch sees no plaintext (no config string, no stream of floats)" $?
}

# Certificates: coordinator on h1, a node on each of h1..h4 with its own certificate of the
# cluster's CA (made as the README shows), TLS between hosts by default; no plaintext at the
# switch, the in-process result bit for bit.
certificates_case() {
  if ! command -v openssl >/dev/null; then
    echo "certificates: skipped (no openssl command; apt-get install openssl)"
    return 0
  fi
  tb_up 4 1gbit || return $?
  local pki=$work/pki n
  mkdir -p "$pki" && (cd "$pki" &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=cluster CA" \
      -keyout ca.key -out ca.pem 2>/dev/null &&
    for n in coordinator n1 n2 n3 n4; do
      openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$n" -keyout "$n.key" -out "$n.csr" \
        2>/dev/null && openssl x509 -req -in "$n.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out "$n.pem" \
        2>/dev/null
    done && chmod 600 ./*.key)
  check "certificates made with openssl" $?
  local run=(epochs=1 data.limit_train=1920 nodes=4 workers=4)
  tb_capture_start "$work/certificates.pcap" || return 1
  start_coordinator h1 certificates "${run[@]}" cluster.certificate="$pki/coordinator.pem" \
    cluster.key="$pki/coordinator.key" cluster.ca_file="$pki/ca.pem" --report="$work/certificates.json"
  local nodes=()
  for n in 1 2 3 4; do
    start_node "h$n" "n$n" h1 --certificate="$pki/n$n.pem" --key="$pki/n$n.key" --ca-file="$pki/ca.pem" && nodes+=("$last")
  done
  wait "$coordinator"
  check "certificates: coordinator + 4 nodes on 4 hosts finish (exit $?)" $? "$work/certificates.log"
  for n in "${nodes[@]}"; do
    wait "$n"
    check "certificates: a node exits 0 (exit $?)" $? "$work/n1.log"
  done
  tb_capture_stop
  grep -q "control plane to .* runs TLS 1.3 (certificates verified both ways)" "$work/n2.log" &&
    grep -q "data plane on .* (tls = between_hosts, certificates)" "$work/n2.log"
  check "certificates: a node on another host than the coordinator's verifies certificates on both planes" $? \
    "$work/n2.log"
  "$train" "${common[@]}" "${run[@]}" nodes=0 output.dir="$work/cert-inproc" --report="$work/cert-inproc.json" \
    >"$work/cert-inproc.log" 2>&1
  same_report "certificates, 4 hosts vs in-process" "$work/certificates.json" "$work/cert-inproc.json" train_loss \
    test_loss test_accuracy iterations workers
  check "certificates: 4 hosts train to the in-process result bit for bit" $?
  no_plaintext "$work/certificates.pcap" "certificates"
  tb_down
}

# torchrun's variables across hosts: rank 0 on h1 listens on MASTER_PORT, MASTER_ADDR is h1's
# name; the secret is a file every host sees.
torchrun_case() {
  tb_up 3 1gbit || return $?
  local run=(--config-file="$config" cluster.secret_file="$work/secret" cluster.join_timeout=30 data.limit_test=500
             epochs=1 data.limit_train=1440 nodes=3 workers=3 --progress=lines) r ranks=()
  for r in 0 1 2; do
    tb_exec "h$((r + 1))" env RANK=$r WORLD_SIZE=3 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=h1 MASTER_PORT=29500 \
      "$train" "${run[@]}" output.dir="$work/torchrun" --report="$work/torchrun-rank$r.json" \
      >"$work/torchrun-rank$r.log" 2>&1 &
    ranks+=("$!")
  done
  for r in 0 1 2; do
    wait "${ranks[$r]}"
    check "torchrun: rank $r on h$((r + 1)) exits 0 (exit $?)" $? "$work/torchrun-rank$r.log"
  done
  "$train" "${common[@]}" epochs=1 data.limit_train=1440 nodes=0 workers=3 output.dir="$work/torchrun-inproc" \
    --report="$work/torchrun-inproc.json" >"$work/torchrun-inproc.log" 2>&1
  same_report "torchrun, 3 hosts vs in-process" "$work/torchrun-rank0.json" "$work/torchrun-inproc.json" train_loss \
    test_loss test_accuracy
  check "torchrun: 3 hosts train to the in-process result bit for bit" $?
  tb_down
}

# Processes whose exit status and time the fault cases read: spawn NAME HOST CMD... runs CMD on
# HOST in the background, its output in $work/NAME.log, then "STATUS EPOCH_SECONDS" in NAME.exit.
spawn() {
  local name=$1 host=$2
  shift 2
  rm -f "$work/$name.exit"
  { tb_exec "$host" "$@" >"$work/$name.log" 2>&1; echo "$? $(date +%s.%N)" >"$work/$name.exit"; } &
}
wait_exit() {  # wait_exit NAME SECONDS: 0 once NAME has exited, 1 if it still runs after SECONDS
  local _
  for _ in $(seq $(($2 * 10))); do [[ -s $work/$1.exit ]] && return 0; sleep 0.1; done
  return 1
}
exit_status() { awk '{print $1}' "$work/$1.exit" 2>/dev/null; }
exit_time() { awk '{print $2}' "$work/$1.exit" 2>/dev/null; }
now() { date +%s.%N; }
# log_time FILE PATTERN: the epoch seconds of the first log line matching PATTERN (lines start
# with [HH:MM:SS.mmm] of today).
log_time() {
  local stamp
  stamp=$(grep -m1 -- "$2" "$1" 2>/dev/null | sed -E 's/^\[([0-9:.]+)\].*/\1/')
  [[ -n $stamp ]] && date -d "today $stamp" +%s.%N
}
seconds() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$2"; }
figure() {  # figure CASE KEY VALUE: one figure of a fault case, printed and kept in faults.csv
  echo "figure: $1 $2 = $3"
  echo "$1,$2,$3" >>"$work/faults.csv"
}

# start_cluster NAME HOSTS... -- KEY=VALUE...: coordinator on h1 (port 4750), a node on each
# host; node logs NAME-hI.
start_cluster() {
  local name=$1 hosts=() h
  shift
  while (($#)) && [[ $1 != -- ]]; do hosts+=("$1"); shift; done
  (($#)) && shift
  spawn "$name" h1 "$train" "${common[@]}" cluster.listen="$(tb_addr h1)" cluster.port=4750 \
    output.dir="$work/$name" --report="$work/$name.json" "$@"
  sleep 0.5
  for h in "${hosts[@]}"; do
    spawn "$name-$h" "$h" "$node" --coordinator=h1:4750 --secret-file="$work/secret" --name="$name-$h" \
      --join-timeout=30 --dead-after=5
  done
}

# Network faults on 3 hosts (coordinator + a node on h1, nodes on h2, h3; heartbeat 1 s,
# dead_after 5 s), each with its figures (faults.csv): a link cut for longer than dead_after,
# not elastic (the run stops, naming the node; --resume ends where an uninterrupted run ends)
# and elastic (the run goes on over 2 hosts; the cut node exits 8 once its link is back, and a
# node restarted there joins at the next epoch); the coordinator's host cut off; a link
# throttled to 1% of its rate for 10 s (a straggler: no false death).
faults_case() {
  tb_up 3 1gbit || return $?
  : >"$work/faults.csv"
  local run=(epochs=1 data.limit_train=9600 display=20 output.checkpoint_every=20 cluster.dead_after=5) cut back
  "$train" "${common[@]}" "${run[@]}" nodes=0 output.dir="$work/faults-inproc" --report="$work/faults-inproc.json" \
    >"$work/faults-inproc.log" 2>&1
  check "faults: the uninterrupted in-process run" $? "$work/faults-inproc.log"

  # 1. h3 cut for 12 s, not elastic.
  start_cluster cut h1 h2 h3 -- "${run[@]}"
  wait_for_line "$work/cut.log" "epoch 1/1 60/" 120
  cut=$(now)
  tb_cut h3
  wait_exit cut 15
  check "cut: the coordinator ends within 15 s of the cut (exit $(exit_status cut))" $? "$work/cut.log"
  [[ $(exit_status cut) == 2 ]] && grep -q "node [0-9] 'cut-h3' was lost at iteration .*intact" "$work/cut.log"
  check "cut: exit 2, naming the lost node, the checkpoint intact" $? "$work/cut.log"
  figure cut detection_s "$(seconds "$cut" "$(log_time "$work/cut.log" "was lost at iteration")")"
  figure cut coordinator_exit_s "$(seconds "$cut" "$(exit_time cut)")"
  wait_exit cut-h3 10
  check "cut: the cut node ends while still cut (exit $(exit_status cut-h3), 7: coordinator lost)" $? "$work/cut-h3.log"
  [[ $(exit_status cut-h3) == 7 ]]
  check "cut: the cut node exits 7" $? "$work/cut-h3.log"
  figure cut cut_node_exit_s "$(seconds "$cut" "$(exit_time cut-h3)")"
  wait_exit cut-h1 10 && wait_exit cut-h2 10 && [[ $(exit_status cut-h1) == 9 && $(exit_status cut-h2) == 9 ]]
  check "cut: the other nodes exit 9 (the run failed elsewhere)" $? "$work/cut-h2.log"
  tb_restore h3
  # Resumed from the checkpoint on the same hosts, the run ends where the uninterrupted one ends.
  start_cluster resume h1 h2 h3 -- "${run[@]}" output.dir="$work/cut" --resume
  wait_exit resume 120
  [[ $(exit_status resume) == 0 ]]
  check "cut: --resume on 3 hosts finishes" $? "$work/resume.log"
  same_report "cut, resumed vs uninterrupted" "$work/resume.json" "$work/faults-inproc.json" train_loss test_loss \
    test_accuracy iterations
  check "cut: the resumed run ends bit for bit where the uninterrupted one ends" $?
  wait_exit resume-h3 10

  # 2. h3 cut for 10 s, elastic: dropped, the run goes on; the cut node, which cannot tell a cut
  #    from a dead coordinator, exits 7 while still cut; a new node on h3, once the link is back,
  #    joins at the next epoch boundary and the run ends on 3.
  start_cluster elastic h1 h2 h3 -- "${run[@]}" epochs=3 elastic=true sync.step_timeout=60
  wait_for_line "$work/elastic.log" "epoch 1/3 60/" 120
  cut=$(now)
  tb_cut h3
  wait_for_line "$work/elastic.log" "elastic: lost node [0-9] 'elastic-h3'; continuing on 2 nodes with 2 ranks" 15
  check "elastic: h3 dropped, the run goes on over 2 hosts" $? "$work/elastic.log"
  figure elastic detection_s "$(seconds "$cut" "$(log_time "$work/elastic.log" "was lost at iteration")")"
  figure elastic reformed_s "$(seconds "$cut" "$(log_time "$work/elastic.log" "elastic: lost node")")"
  wait_exit elastic-h3 10
  [[ $(exit_status elastic-h3) == 7 ]]
  check "elastic: the cut node ends while still cut (exit $(exit_status elastic-h3), 7: coordinator lost)" $? \
    "$work/elastic-h3.log"
  figure elastic cut_node_exit_s "$(seconds "$cut" "$(exit_time elastic-h3)")"
  sleep 2
  tb_restore h3
  back=$(now)
  spawn elastic-h3b h3 "$node" --coordinator=h1:4750 --secret-file="$work/secret" --name=elastic-h3b \
    --join-timeout=30 --dead-after=5
  wait_exit elastic 180
  [[ $(exit_status elastic) == 0 ]]
  check "elastic: training finishes (exit $(exit_status elastic))" $? "$work/elastic.log"
  grep -q "elastic: nodes joined; continuing on 3 nodes with 3 ranks x batch 16 from epoch [23] batch 0" "$work/elastic.log"
  check "elastic: the node restarted on h3 joins at the next epoch boundary" $? "$work/elastic.log"
  figure elastic restarted_node_joined_after_restore_s "$(seconds "$back" "$(log_time "$work/elastic.log" "'elastic-h3b' joined")")"
  wait_exit elastic-h3b 10

  # 3. The coordinator's host cut off for 12 s: the nodes elsewhere lose it, the coordinator loses them.
  start_cluster coordcut h1 h2 h3 -- "${run[@]}"
  wait_for_line "$work/coordcut.log" "epoch 1/1 60/" 120
  cut=$(now)
  tb_cut h1
  wait_exit coordcut 15 && wait_exit coordcut-h2 15 && wait_exit coordcut-h3 15
  check "coordinator cut off: coordinator and both nodes elsewhere end within 15 s" $? "$work/coordcut.log"
  [[ $(exit_status coordcut) == 2 && $(exit_status coordcut-h2) == 7 && $(exit_status coordcut-h3) == 7 ]]
  check "coordinator cut off: exit 2 there, 7 (coordinator lost) on h2 and h3" $? "$work/coordcut-h2.log"
  wait_exit coordcut-h1 10 && [[ $(exit_status coordcut-h1) == 9 ]]
  check "coordinator cut off: the node beside it exits 9 (exit $(exit_status coordcut-h1))" $? "$work/coordcut-h1.log"
  figure coordcut coordinator_exit_s "$(seconds "$cut" "$(exit_time coordcut)")"
  figure coordcut node_exit_s "$(seconds "$cut" "$(exit_time coordcut-h2)")"
  tb_restore h1

  # 4. A straggler: h3's link at 1% (10 Mbit/s) for 10 s, then back to 1 Gbit/s.
  start_cluster slow h1 h2 h3 -- "${run[@]}" display=2
  wait_for_line "$work/slow.log" "epoch 1/1 60/" 120
  local before after
  before=$(now)
  tb_rate h3 10mbit
  sleep 10
  after=$(now)
  tb_rate h3 1gbit
  wait_exit slow 120
  [[ $(exit_status slow) == 0 ]]
  check "straggler: the run finishes, no node declared dead (exit $(exit_status slow))" $? "$work/slow.log"
  same_report "straggler vs uninterrupted" "$work/slow.json" "$work/faults-inproc.json" train_loss test_loss \
    test_accuracy iterations
  check "straggler: the result is the uninterrupted one bit for bit" $?
  figure straggler iterations_in_10s_at_1pct "$(python3 - "$work/slow.log" "$before" "$after" <<'PY'
import re, sys, datetime
path, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
day = datetime.date.today()
done = []
for line in open(path):
    m = re.match(r"\[(\d+):(\d+):([\d.]+)\].* epoch 1/1 (\d+)/", line)
    if m:
        t = datetime.datetime.combine(day, datetime.time()).timestamp() + int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3])
        if start <= t <= end:
            done.append(int(m[4]))
print(max(done) - min(done) if len(done) > 1 else 0)
PY
)"
  for h in h1 h2 h3; do wait_exit "slow-$h" 10; done
  echo "fault figures:"
  cat "$work/faults.csv"
  tb_down
}

# Slurm (Debian's slurmctld, slurmd, slurm-client, munge; tests/multihost/slurm.sh): slurmctld on
# h1, a slurmd per host. The README's batch script as it stands (sbatch, #SBATCH -N 4
# --ntasks-per-node=1, srun taihu-train ... cluster.secret_file= output.dir=<shared>: the ranks
# meet in the shared directory), then srun -N 4 --mpi=pmix with transport = mpi; each equals the
# in-process run bit for bit.
slurm_case() {
  tb_up 4 1gbit || return $?
  source "$src/tests/multihost/slurm.sh"
  local rc
  tb_slurm_up
  rc=$?
  if ((rc == 77)); then
    tb_down
    return 0
  fi
  check "a Slurm cluster of 4 hosts comes up" $rc
  ((rc == 0)) || return 1
  local small=(data.limit_test=500 epochs=1 data.limit_train=1920 --progress=lines)
  "$train" "${common[@]}" "${small[@]}" nodes=0 workers=4 output.dir="$work/slurm-inproc" \
    --report="$work/slurm-inproc.json" >"$work/slurm-inproc.log" 2>&1
  cat >"$work/job.sh" <<EOF
#!/bin/bash
#SBATCH -N 4 --ntasks-per-node=1
srun $train --config-file=$config nodes=4 workers=4 cluster.secret_file= output.dir=$work/sbatch \\
     ${small[*]} --report=$work/sbatch.json
EOF
  tb_exec h1 sbatch --wait -o "$work/sbatch.log" "$work/job.sh" >"$work/sbatch.out" 2>&1
  check "sbatch -N 4 --ntasks-per-node=1 with the README's srun line finishes (exit $?)" $? "$work/sbatch.log"
  local k placed=0
  for k in 0 1 2 3; do grep -q "node $k 'rank$k@h$((k + 1))'" "$work/sbatch.log" || placed=1; done
  check "sbatch: rank k is node k on host h(k+1)" $placed "$work/sbatch.log"
  same_report "sbatch on 4 hosts vs in-process" "$work/sbatch.json" "$work/slurm-inproc.json" train_loss test_loss \
    test_accuracy iterations
  check "sbatch: 4 hosts train to the in-process result bit for bit" $?
  tb_exec h1 srun -N 4 --ntasks-per-node=1 --mpi=pmix "$train" --config-file="$config" nodes=4 workers=4 \
    cluster.secret_file= cluster.transport=mpi output.dir="$work/srun-pmix" "${small[@]}" \
    --report="$work/srun-pmix.json" >"$work/srun-pmix.log" 2>&1
  check "srun -N 4 --mpi=pmix, transport = mpi (exit $?)" $? "$work/srun-pmix.log"
  grep -q "the ranks meet through the launcher's PMIx store" "$work/srun-pmix.log"
  check "srun --mpi=pmix: the ranks meet through PMIx" $? "$work/srun-pmix.log"
  same_report "srun --mpi=pmix on 4 hosts vs in-process" "$work/srun-pmix.json" "$work/slurm-inproc.json" train_loss \
    test_loss test_accuracy iterations
  check "srun --mpi=pmix: 4 hosts train to the in-process result bit for bit" $?
  tb_down
}

# mpirun across hosts: Open MPI starts its daemons through the bed's rsh agent (tb-rsh, as ssh),
# one rank per host; the ranks meet through PMIx and train over taihu's data plane (transport =
# taihu), then over the
# MPI transport (Open MPI's TCP between the hosts); each equals the in-process run bit for bit.
mpirun_case() {
  if ! command -v mpirun >/dev/null; then
    echo "mpirun: skipped (no mpirun; apt-get install openmpi-bin)"
    return 0
  fi
  tb_up 4 1gbit || return $?
  printf 'h1 slots=1\nh2 slots=1\nh3 slots=1\nh4 slots=1\n' >"$work/hostfile"
  local mpi=(mpirun --allow-run-as-root --hostfile "$work/hostfile" --mca plm_rsh_agent "$src/tests/multihost/tb-rsh"
             --mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 -np 4)
  local run=(--config-file="$config" cluster.secret_file= cluster.join_timeout=30 data.limit_test=500
             epochs=1 data.limit_train=1920 nodes=4 workers=4 --progress=lines)
  "$train" "${common[@]}" epochs=1 data.limit_train=1920 nodes=0 workers=4 output.dir="$work/mpi-inproc" \
    --report="$work/mpi-inproc.json" >"$work/mpi-inproc.log" 2>&1
  check "in-process workers=4 run" $? "$work/mpi-inproc.log"
  local transport
  for transport in taihu mpi; do
    tb_exec h1 "${mpi[@]}" "$train" "${run[@]}" cluster.transport=$transport output.dir="$work/mpirun-$transport" \
      --report="$work/mpirun-$transport.json" >"$work/mpirun-$transport.log" 2>&1
    check "mpirun -np 4 on 4 hosts, transport = $transport (exit $?)" $? "$work/mpirun-$transport.log"
    grep -q "the ranks meet through the launcher's PMIx store" "$work/mpirun-$transport.log"
    check "mpirun ($transport): the ranks meet through PMIx" $? "$work/mpirun-$transport.log"
    local k placed=0
    for k in 1 2 3 4; do grep -q "node $((k - 1)) 'rank$((k - 1))@h$k'" "$work/mpirun-$transport.log" || placed=1; done
    check "mpirun ($transport): rank k runs on host h(k+1)" $placed "$work/mpirun-$transport.log"
    same_report "mpirun ($transport) on 4 hosts vs in-process" "$work/mpirun-$transport.json" "$work/mpi-inproc.json" \
      train_loss test_loss test_accuracy iterations
    check "mpirun ($transport): 4 hosts train to the in-process result bit for bit" $?
  done
  tb_down
}

# Bad input across hosts, each a clear error that names the host or address and says what to do,
# within a bound, nothing left behind: a bed left by a killed run (found and removed by the next
# one), a coordinator address nobody answers at, a port another process holds on the
# coordinator's host, an address that is not the host's own, a hostfile naming a host the bed does
# not have, a user without root (the bed skips with one line). About 20 s.
bad_input_case() {
  local old rc t0 out
  # A bed whose owner was killed (SIGKILL: no trap ran) is found by the next tb_up.
  old=$(bash -c 'source "$1" && tb_up 2 1gbit >/dev/null 2>&1 && echo "$TB_ID" && kill -KILL $$' _ \
    "$src/tests/multihost/testbed.sh")
  [[ -n $old ]] && ip netns list | grep -q "^tb$old-h1"
  check "a killed run leaves its bed behind (tb$old-*)" $?
  tb_up 2 1gbit >"$work/leftover.log" 2>&1 || return $?
  grep -q "removing a test bed left by an earlier run .*: $old" "$work/leftover.log" &&
    ! ip netns list | grep -q "^tb$old-" && [[ ! -e /run/taihu-testbed/$old ]]
  check "the next bed finds it, says so and removes its namespaces and state" $? "$work/leftover.log"

  # A node given an address where no coordinator answers: exit 4 naming it, after join_timeout.
  t0=$(now)
  tb_exec h2 "$node" --coordinator="$TB_SUBNET.9:7777" --secret-file="$work/secret" --join-timeout=3 \
    >"$work/unreachable.log" 2>&1
  rc=$?
  [[ $rc -eq 4 ]] && grep -q "cannot reach the coordinator at $TB_SUBNET.9:7777 within 3 s" "$work/unreachable.log" &&
    python3 -c "import sys; sys.exit(not float(sys.argv[1]) - float(sys.argv[2]) < 8)" "$(now)" "$t0"
  check "a node whose coordinator address nobody answers at exits 4 within 8 s, naming it (exit $rc)" \
    $? "$work/unreachable.log"

  # refused_listen NAME LISTEN PORT PATTERN WHAT: a coordinator on h1 told to listen on LISTEN:PORT
  # exits 2 with PATTERN in its log.
  refused_listen() {
    tb_exec h1 "$train" "${common[@]}" nodes=2 workers=2 cluster.listen="$2" cluster.port="$3" \
      output.dir="$work/$1" >"$work/$1.log" 2>&1
    local rc=$?
    [[ $rc -eq 2 ]] && grep -q -- "$4" "$work/$1.log"
    check "$5 (exit $rc)" $? "$work/$1.log"
  }
  # The coordinator's port is held by another process on its host (h1).
  tb_exec h1 python3 -c "import socket, time; s = socket.socket(); s.bind(('$(tb_addr h1)', 7777)); s.listen();
time.sleep(30)" &
  local holder=$!
  sleep 0.5
  refused_listen busy "$(tb_addr h1)" 7777 \
    "cannot listen on $(tb_addr h1):7777: .*another process on this host holds that port" \
    "a coordinator whose port another process holds on its host exits 2 saying so"
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null
  # An address of another host: the error names this host and lists its own addresses.
  refused_listen other "$(tb_addr h2)" 0 \
    "no network interface of host 'h1' has the address $(tb_addr h2); its addresses: .*$(tb_addr h1)" \
    "a coordinator told to listen on another host's address exits 2 naming its own"

  # A hostfile naming a host the bed does not have: mpirun fails at once, the agent names the host.
  if command -v mpirun >/dev/null; then
    printf 'h1 slots=1\nh9 slots=1\n' >"$work/bad-hostfile"
    tb_exec h1 timeout 60 mpirun --allow-run-as-root --hostfile "$work/bad-hostfile" \
      --mca plm_rsh_agent "$src/tests/multihost/tb-rsh" -np 2 hostname >"$work/bad-hostfile.log" 2>&1
    rc=$?
    [[ $rc -ne 0 && $rc -ne 124 ]] && grep -q "no host 'h9' in this test bed (hosts: h1..h2)" "$work/bad-hostfile.log"
    check "mpirun with a hostfile naming a host that does not exist fails at once, naming it (exit $rc)" $? \
      "$work/bad-hostfile.log"
  fi
  tb_down
  ! ip netns list | grep -q "^tb$TB_ID-"
  check "nothing of the bed is left after tb_down" $?

  # Without root: one line, exit 77 (the skip code), nothing made.
  out=$(setpriv --reuid=65534 --regid=65534 --clear-groups bash -c 'source "$1" && tb_up 2 1gbit' _ \
    "$src/tests/multihost/testbed.sh" 2>&1)
  rc=$?
  [[ $rc -eq 77 && $(wc -l <<<"$out") -eq 1 && $out == *"needs root"* ]]
  check "a user without root gets one line, exit 77 ($out)" $?
}

for c in "${cases[@]}"; do
  case $c in
  short) short_case ;;
  mpirun) mpirun_case ;;
  certificates) certificates_case ;;
  torchrun) torchrun_case ;;
  faults) faults_case ;;
  slurm) slurm_case ;;
  bad_input) bad_input_case ;;
  *)
    echo "unknown case '$c' (cases: short bad_input certificates torchrun mpirun slurm faults)"
    exit 2
    ;;
  esac
  rc=$?
  if [[ $rc -eq 77 ]]; then exit 77; fi
  ((rc == 0)) || check "case $c ran to its end (status $rc)" $rc
done
echo "$passed passed, $failed failed"
((failed == 0))
