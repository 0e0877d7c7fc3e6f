#!/usr/bin/env bash
# taihu's multi-host test bed: H hosts on this machine, each a set of Linux namespaces of its
# own, joined by one switch.
#
#   host hI   network namespace with eth0 = 10.213.77.I/24 and its own loopback; UTS (hostname
#             hI), PID, IPC and mount namespaces held by one holder process, so every process
#             started on the host sees its hostname, its own /dev/shm and /tmp and an /etc/hosts
#             that names h1..hH, and nothing outside the host can see its processes (a same-host
#             probe between two hosts fails, as it does between machines). The rest of the file
#             system stays shared (e.g. /var/tmp): the "directory every host sees" of a cluster.
#   switch    a network namespace holding bridge br0, one port pI per host.
#   links     each host's eth0 and its switch port shaped with tc tbf (rate, burst, queue limit):
#             a host sends and receives at most RATE, as through one NIC on a switch. This kernel
#             has tbf but no netem, so there is no added propagation delay: a round trip is the
#             veth + bridge path (tens of microseconds, `tb_rtt` measures it) plus what waits in
#             the tbf queues, which is the latency that matters for bulk collectives.
#   faults    tb_cut disables a host's switch port (frames to and from it vanish silently, as
#             behind a failed switch port: no carrier loss, no reset, TCP just retransmits);
#             tb_restore brings it back; tb_rate changes a link's rate mid-run.
#
# Traffic stays in the namespaces made here: no host has a route beyond its /24, and nothing is
# added to this machine's own network stack. Needs root (CI runs as root); without it, or without
# ip/tc/bridge/unshare/nsenter, tb_up says why on one line and returns 77 (ctest's skip code).
#
# As a library (what tests/multihost/*.sh do):
#   source tests/multihost/testbed.sh
#   tb_up 3 1gbit || exit $?          # hosts h1..h3; removed on exit, INT, TERM (and by the next
#                                     # tb_up if this shell was SIGKILLed)
#   tb_exec h2 build/apps/taihu-node --coordinator=h1:4750 ... &
#   tb_cut h3; sleep 2; tb_restore h3; tb_rate h2 10mbit; tb_addr h1; tb_rtt h1 h2
#   tb_capture_start FILE; ...; tb_capture_stop   # every frame through the switch, as pcap
#   tb_exec h1 mpirun --mca plm_rsh_agent tests/multihost/tb-rsh ...   # tb-rsh: ssh between hosts
# As a command, for a bed to try things by hand (it stays up until `down`):
#   testbed.sh up H [RATE]   testbed.sh exec HOST CMD...   testbed.sh cut|restore HOST
#   testbed.sh rate HOST RATE    testbed.sh list    testbed.sh down    testbed.sh clean
# (the command form works on the one bed that `up` made; `clean` removes every leftover bed.)

TB_SUBNET=${TB_SUBNET:-10.213.77}  # the bed's private /24; hosts are .1 .. .H
TB_STATE_ROOT=${TB_STATE_ROOT:-/run/taihu-testbed}
TB_BURST=${TB_BURST:-256kb}        # tbf bucket: a few of the largest TSO segments
TB_QUEUE=${TB_QUEUE:-50ms}         # tbf queue limit, as the longest a packet may wait
TB_TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

_tb_say() { echo "testbed: $*" >&2; }

# A host's init: waits for any child, forever.
_TB_INIT='
import os, time
while True:
    try:
        os.wait()
    except ChildProcessError:
        time.sleep(1)
' 

# _tb_start_time PID: the process's start time (clock ticks since boot), to tell a live owner
# from an unrelated process that reuses its pid.
_tb_start_time() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null; }

_tb_missing() {  # prints why this machine cannot hold a bed, or nothing
  if [[ $(id -u) -ne 0 ]]; then
    echo "needs root (network namespaces, tc); run as root, e.g. sudo"
    return
  fi
  local tool
  for tool in ip tc bridge unshare nsenter; do
    command -v "$tool" >/dev/null || { echo "needs '$tool' (apt-get install iproute2 util-linux)"; return; }
  done
  if ! ip netns add "tbprobe$$" 2>/dev/null; then
    echo "cannot make a network namespace here (ip netns add failed: a container without CAP_SYS_ADMIN?)"
    return
  fi
  ip netns del "tbprobe$$" 2>/dev/null
}

# _tb_remove_bed DIR: removes one bed's holders, namespaces and state.
_tb_remove_bed() {
  local dir=$1 id pid ns
  id=$(basename "$dir")
  for pid in $(cat "$dir"/holder.* 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^tb$id-"); do
    # Anything still in the namespace (a process started with ip netns exec) goes with it.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  rm -rf "$dir"
}

# _tb_clean_leftovers [all]: removes beds whose owner is gone (all of them with "all"), and
# namespaces of this naming that no bed's state accounts for, each with a message.
_tb_clean_leftovers() {
  local dir owner started ns id
  for dir in "$TB_STATE_ROOT"/*; do
    [[ -d $dir ]] || continue
    read -r owner started <"$dir/owner" 2>/dev/null
    if [[ ${1:-} != all && -n $owner && $(_tb_start_time "$owner") == "$started" ]]; then continue; fi
    _tb_say "removing a test bed left by an earlier run (owner pid ${owner:-?} is gone): $(basename "$dir")"
    _tb_remove_bed "$dir"
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^tb[0-9]+-(h[0-9]+|sw)$'); do
    id=${ns%%-*}
    id=${id#tb}
    [[ -d $TB_STATE_ROOT/$id ]] && continue
    _tb_say "removing namespace $ns, left by an earlier run"
    local pid
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
}

_tb_index() {  # _tb_index HOST: prints I for hI (or its address), or fails naming the hosts
  local host=$1 i=${1#h}
  [[ $host == "$TB_SUBNET".* ]] && i=${host##*.} host=h$i
  if [[ $host != h* || ! $i =~ ^[0-9]+$ || $i -lt 1 || $i -gt ${TB_HOSTS:-0} ]]; then
    _tb_say "no host '$host' in this test bed (hosts: h1..h${TB_HOSTS:-0})"
    return 1
  fi
  echo "$i"
}

tb_addr() { local i; i=$(_tb_index "$1") && echo "$TB_SUBNET.$i"; }
tb_ns() { local i; i=$(_tb_index "$1") && echo "tb$TB_ID-h$i"; }
tb_hosts() { local i; for ((i = 1; i <= TB_HOSTS; i++)); do echo "h$i"; done; }

# tb_exec HOST CMD...: runs CMD on HOST (in all of its namespaces), in the current directory.
# From this machine only: a process on a host cannot join another host's PID namespace, so
# commands started from a host go through the bed's exec server (tests/multihost/tb-rsh).
tb_exec() {
  local host=$1 i holder
  shift
  i=$(_tb_index "$host") || return 2
  read -r _ holder <"$TB_DIR/holder.$i"
  nsenter --target "$holder" --net --uts --ipc --pid --mount --wd="$PWD" -- "$@"
}

# _tb_attach: the bed in $TB_DIR (exported by tb_up), for the exec server's commands.
_tb_attach() {
  TB_ID=$(basename "$TB_DIR")
  TB_HOSTS=$(cat "$TB_DIR/hosts.count")
}

# _tb_shape NS DEV RATE [add|change]: tbf on one side of a link.
_tb_shape() {
  ip netns exec "$1" tc qdisc "${4:-add}" dev "$2" root tbf rate "$3" burst "$TB_BURST" latency "$TB_QUEUE"
}

# tb_rate HOST RATE: the link of HOST (both directions) now runs at RATE (tc units: 100mbit, 1gbit).
tb_rate() {
  local i
  i=$(_tb_index "$1") || return 2
  _tb_shape "tb$TB_ID-h$i" eth0 "$2" change && _tb_shape "tb$TB_ID-sw" "p$i" "$2" change
}

# tb_cut HOST / tb_restore HOST: the switch port of HOST drops every frame / forwards again.
tb_cut() {
  local i
  i=$(_tb_index "$1") || return 2
  ip netns exec "tb$TB_ID-sw" bridge link set dev "p$i" state 0
}
tb_restore() {
  local i
  i=$(_tb_index "$1") || return 2
  ip netns exec "tb$TB_ID-sw" bridge link set dev "p$i" state 3
}

# tb_capture_start FILE / tb_capture_stop: records every frame that crosses the switch (a pcap
# file, read by wire_check.py, Wireshark or tcpdump -r) from start to stop.
tb_capture_start() {
  rm -f "$TB_DIR/capture.ready"
  ip netns exec "tb$TB_ID-sw" python3 "$TB_TOOLS/capture.py" br0 "$1" "$TB_DIR/capture.ready" &
  TB_CAPTURE=$!
  for _ in $(seq 50); do [[ -e $TB_DIR/capture.ready ]] && return 0; sleep 0.1; done
  _tb_say "the capture on the switch did not start"
  return 1
}
tb_capture_stop() {
  [[ -n ${TB_CAPTURE:-} ]] || return 0
  kill -INT "$TB_CAPTURE" 2>/dev/null
  wait "$TB_CAPTURE" 2>/dev/null
  TB_CAPTURE=
}

# tb_rtt A B: the median TCP round trip from A to B in microseconds (1-byte ping-pong).
tb_rtt() {
  local b
  b=$(tb_addr "$2") || return 2
  tb_exec "$2" python3 "$TB_TOOLS/rtt.py" serve "$b" &
  local server=$!
  sleep 0.3
  tb_exec "$1" python3 "$TB_TOOLS/rtt.py" ping "$b"
  wait "$server" 2>/dev/null
}

# tb_up H [RATE]: makes hosts h1..hH on links of RATE (default 1gbit). Sets TB_ID, TB_DIR,
# TB_HOSTS; removes the bed on exit. Returns 77 with one line where the bed cannot be made.
tb_up() {
  local hosts=$1 rate=${2:-1gbit} why i ns sw
  why=$(_tb_missing)
  if [[ -n $why ]]; then
    echo "SKIP: the multi-host test bed $why"
    return 77
  fi
  if [[ ! $hosts =~ ^[0-9]+$ || $hosts -lt 1 || $hosts -gt 200 ]]; then
    _tb_say "hosts must be 1..200, not '$hosts'"
    return 2
  fi
  _tb_clean_leftovers
  TB_ID=${TB_ID_OVERRIDE:-$BASHPID}
  TB_DIR=$TB_STATE_ROOT/$TB_ID
  TB_HOSTS=$hosts
  mkdir -p "$TB_DIR"
  export TB_DIR TB_ID TB_HOSTS  # for tools started on the hosts (tb-rsh)
  echo "$$ $(_tb_start_time $$)" >"$TB_DIR/owner"
  _tb_install_traps
  {
    echo "127.0.0.1 localhost"
    for ((i = 1; i <= hosts; i++)); do echo "$TB_SUBNET.$i h$i"; done
  } >"$TB_DIR/hosts"
  sw="tb$TB_ID-sw"
  ip netns add "$sw" && ip -n "$sw" link add br0 type bridge && ip -n "$sw" link set br0 up || {
    _tb_say "could not make the switch namespace $sw"
    return 1
  }
  for ((i = 1; i <= hosts; i++)); do
    ns="tb$TB_ID-h$i"
    if ! { ip netns add "$ns" &&
      ip link add "tb${TB_ID}a$i" type veth peer name "tb${TB_ID}b$i" &&
      ip link set "tb${TB_ID}a$i" netns "$ns" && ip link set "tb${TB_ID}b$i" netns "$sw" &&
      ip -n "$ns" link set "tb${TB_ID}a$i" name eth0 && ip -n "$sw" link set "tb${TB_ID}b$i" name "p$i" &&
      ip -n "$ns" addr add "$TB_SUBNET.$i/24" dev eth0 && ip -n "$ns" link set eth0 up &&
      ip -n "$ns" link set lo up && ip -n "$sw" link set "p$i" master br0 up &&
      _tb_shape "$ns" eth0 "$rate" && _tb_shape "$sw" "p$i" "$rate"; }; then
      _tb_say "could not make host h$i (namespace $ns)"
      return 1
    fi
    # The holder: PID 1 of the host's PID namespace (when it dies, every process on the host
    # does), reaping the orphans the kernel hands it as init does: a zombie would keep its
    # process group alive, and Slurm's pgid tracking waits for a job's group to be empty.
    ip netns exec "$ns" unshare --uts --pid --ipc --mount --fork --kill-child --mount-proc \
      sh -c 'hostname "$1" && mount -t tmpfs -o mode=1777 tmpfs /dev/shm && mount -t tmpfs -o mode=1777 tmpfs /tmp &&
             mount --bind "$2" /etc/hosts &&
             touch "$3" && exec python3 -c "$4"' holder "h$i" "$TB_DIR/hosts" "$TB_DIR/ready.$i" "$_TB_INIT" \
      </dev/null >/dev/null 2>&1 &
    local unshare_pid=$!
    disown "$unshare_pid"
    for _ in $(seq 100); do [[ -e $TB_DIR/ready.$i ]] && break; sleep 0.05; done
    local holder
    holder=$(pgrep -P "$unshare_pid" | head -1)
    if [[ ! -e $TB_DIR/ready.$i || -z $holder ]]; then
      _tb_say "host h$i did not come up (unshare of UTS, PID, IPC and mount namespaces failed)"
      return 1
    fi
    echo "$unshare_pid $holder" >"$TB_DIR/holder.$i"
  done
  echo "$rate" >"$TB_DIR/rate"
  echo "$hosts" >"$TB_DIR/hosts.count"
  # The remote shell for commands started on a host (mpirun's rsh agent: tb-rsh).
  python3 "$TB_TOOLS/exec_server.py" "$TB_TOOLS/testbed.sh" "$TB_DIR/exec.sock" </dev/null >/dev/null 2>&1 &
  echo "$!" >"$TB_DIR/holder.exec"
  disown $!
  _tb_say "$hosts hosts up (h1..h$hosts = $TB_SUBNET.1..$hosts), links at $rate, bed $TB_ID"
}

# tb_down: removes this shell's bed (every process on its hosts is killed with it).
tb_down() {
  tb_capture_stop
  [[ -n ${TB_DIR:-} && -d $TB_DIR ]] || return 0
  _tb_remove_bed "$TB_DIR"
  TB_DIR=
}

_tb_install_traps() {
  local sig
  # EXIT runs tb_down after whatever the caller already trapped; INT and TERM end the shell
  # with the usual status (and so run the EXIT trap).
  local previous
  previous=$(trap -p EXIT | sed -E "s/^trap -- '(.*)' EXIT$/\1/")
  # shellcheck disable=SC2064
  trap "${previous:+$previous; }tb_down" EXIT
  for sig in INT TERM HUP; do
    [[ -n $(trap -p $sig) ]] || trap "exit $((128 + $(kill -l $sig)))" $sig
  done
}

_tb_load() {  # the command form: finds the one bed this machine holds
  local beds=("$TB_STATE_ROOT"/*)
  if [[ ! -d ${beds[0]} ]]; then
    _tb_say "no test bed is up (testbed.sh up H [RATE])"
    exit 2
  fi
  TB_DIR=${beds[0]}
  TB_ID=$(basename "$TB_DIR")
  TB_HOSTS=$(cat "$TB_DIR/hosts.count")
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  set -uo pipefail
  command=${1:-}
  shift || true
  case $command in
  up)
    # A bed made by hand stays up: it is owned by a process that outlives this command.
    setsid sleep infinity </dev/null >/dev/null 2>&1 &
    owner=$!
    TB_ID_OVERRIDE=$owner
    tb_up "$@" || exit $?
    echo "$owner $(_tb_start_time "$owner")" >"$TB_DIR/owner"
    trap - EXIT INT TERM HUP
    echo "$TB_DIR"
    ;;
  down)
    _tb_load
    read -r owner _ <"$TB_DIR/owner"
    _tb_remove_bed "$TB_DIR"
    kill "$owner" 2>/dev/null
    ;;
  clean) _tb_clean_leftovers all ;;
  list)
    _tb_load
    echo "bed $TB_ID: $TB_HOSTS hosts at $(cat "$TB_DIR/rate")"
    for h in $(tb_hosts); do echo "$h $(tb_addr "$h") $(tb_ns "$h")"; done
    ;;
  exec | cut | restore | rate | rtt)
    _tb_load
    "tb_$command" "$@"
    ;;
  *)
    sed -n '/^# As a command/,/^# (the command form/p' "$0" >&2
    exit 2
    ;;
  esac
fi
