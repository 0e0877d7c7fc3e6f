#!/usr/bin/env bash
# Soak test of an elastic cluster on loopback (not part of ctest: it runs for MINUTES and then
# about as long again for the undisturbed reference run):
#
#   bash tests/soak/soak.sh MINUTES [BUILD_DIR]     e.g. bash tests/soak/soak.sh 10
#
# A coordinator and 3 taihu-node processes train LeNet on Fashion-MNIST (elastic) while, for
# MINUTES, nodes are killed (SIGKILL) and restarted, stopped (SIGSTOP, some past dead_after) and
# continued, and every listening port (control, status, each node's data plane) gets garbage:
# random bytes, a header announcing a huge payload, HTTP, idle connections held open. Passes when
# the coordinator ends by itself with exit 0, its resident memory grew by less than
# max(64 MB, 50%), every checkpoint it wrote is whole and the sampled ones resume, no node
# ended other than by the soak's own signals (or exit 8 after a stop past dead_after), and the
# final accuracy is within 1 point of the same run undisturbed. Prints the figures as JSON
# (SOAK_JSON=FILE writes them too; SOAK_SEED=N repeats a run; KEEP_WORK=1 keeps its files).
# Skips (exit 77) when Fashion-MNIST is absent.
set -euo pipefail
minutes=${1:?usage: soak.sh MINUTES [BUILD_DIR]}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${2:-$src/build}
data=/usr/share/datasets/fashion-mnist
if [[ ! -f $data/train-images-idx3-ubyte.gz && ! -f $data/train-images-idx3-ubyte ]]; then
  echo "SKIP: Fashion-MNIST is not installed ($data; apt-get install dataset-fashion-mnist)"
  exit 77
fi
exec python3 "$src/tests/soak/soak.py" --minutes="$minutes" --build="$build" --src="$src" \
  ${SOAK_JSON:+--json="$SOAK_JSON"}
