#!/usr/bin/env bash
# A Slurm cluster on the test bed (source after testbed.sh, once tb_up has made the hosts):
# slurmctld on h1 and one slurmd on every host, from Debian's slurmctld, slurmd and
# slurm-client, authenticated by a munged of the bed's own (its key and socket in the bed's
# state). Every host is a node of partition "bed"; jobs run as root.
#
#   tb_slurm_up || exit $?    # 77 with one line where Slurm or munge is not installed
#   tb_exec h1 srun -N 4 --ntasks-per-node=1 hostname
#   tb_exec h1 sbatch --wait job.sh
# Everything goes with the bed (tb_down): the daemons run on its hosts, munged is one of its
# holders. Clients need SLURM_CONF, which tb_slurm_up exports.

# tb_slurm_up: starts the cluster and waits until every node is idle (30 s at most).
tb_slurm_up() {
  local tool
  for tool in slurmctld slurmd srun sbatch sinfo munged; do
    if ! command -v "$tool" >/dev/null; then
      echo "SKIP: Slurm on the test bed needs '$tool' (apt-get install slurmctld slurmd slurm-client munge)"
      return 77
    fi
  done
  local dir=$TB_DIR/slurm i
  mkdir -p "$dir/munge" "$dir/state" "$dir/log"
  for ((i = 1; i <= TB_HOSTS; i++)); do mkdir -p "$dir/spool-h$i"; done
  head -c 1024 /dev/urandom >"$dir/munge/munge.key" && chmod 600 "$dir/munge/munge.key"
  # munged refuses root unless forced; its socket is the bed's own, so a site's munged is untouched.
  munged --force --socket="$dir/munge/socket" --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/pid" \
    --log-file="$dir/munge/log" --seed-file="$dir/munge/seed" || {
    _tb_say "munged did not start (see $dir/munge/log)"
    return 1
  }
  cat "$dir/munge/pid" >"$TB_DIR/holder.munge"
  # The nodes' hardware as slurmd sees it is this machine's, shared by every host: take the
  # configured CPUs as they are (config_overrides). No cgroup hierarchy is mounted on the hosts
  # (ip netns exec gives each a fresh /sys), so processes are tracked by process group.
  cat >"$dir/slurm.conf" <<EOF
ClusterName=taihu-bed
SlurmctldHost=h1($TB_SUBNET.1)
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SelectType=select/linear
SchedulerType=sched/builtin
SlurmdParameters=config_overrides
ReturnToService=2
InactiveLimit=0
KillWait=5
MailProg=/bin/true
NodeName=h[1-$TB_HOSTS] NodeAddr=$TB_SUBNET.[1-$TB_HOSTS] CPUs=2 State=UNKNOWN
PartitionName=bed Nodes=h[1-$TB_HOSTS] Default=YES MaxTime=INFINITE State=UP
EOF
  echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"
  export SLURM_CONF=$dir/slurm.conf
  tb_exec h1 slurmctld -D -i >"$dir/log/slurmctld.out" 2>&1 &
  disown $!
  for ((i = 1; i <= TB_HOSTS; i++)); do
    tb_exec "h$i" slurmd -D -N "h$i" >"$dir/log/slurmd-h$i.out" 2>&1 &
    disown $!
  done
  local _
  for _ in $(seq 60); do
    [[ $(tb_exec h1 sinfo -h -o '%D %t' 2>/dev/null) == "$TB_HOSTS idle" ]] && return 0
    sleep 0.5
  done
  _tb_say "the Slurm cluster did not come up: $(tb_exec h1 sinfo -h 2>&1 | head -3)"
  tail -n 5 "$dir"/log/*.out >&2
  return 1
}
