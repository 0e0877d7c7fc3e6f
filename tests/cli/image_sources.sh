#!/usr/bin/env bash
# Fashion-MNIST written out by the test as PNG and JPEG files and as LMDB
# databases trains LeNet as the IDX files do:
#   - a list file in the IDX order, and an LMDB made from it, read the very
#     samples in the very order: the run equals the IDX run bit for bit;
#   - class folders (another sample order) and JPEG files (lossy, listed in
#     the IDX order) reach the IDX run's test accuracy within 1 point.
# The first 20,000 training images (and all 10,000 test images) are enough
# for that and keep the test short under the sanitizers (CI runs it only
# there): at 20,000, 2 epochs, seeds 1, 2, 4 and 5, the folder and JPEG runs
# ended 0.0 to 0.7 points from the IDX run (within 0.5 at 60,000, 3 times slower).
# Then bad data: a truncated image and a file that is no image are skipped
# and counted in the report, a symlink loop and a FIFO are left out and
# counted; a missing folder and a damaged LMDB are errors naming them.
# Skipped (77) without Fashion-MNIST (apt-get install dataset-fashion-mnist).
#   usage: image_sources.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
fm=/usr/share/datasets/fashion-mnist
if [[ ! -f $fm/train-images-idx3-ubyte.gz ]]; then
  echo "Fashion-MNIST not installed (apt-get install dataset-fashion-mnist): skipped"
  exit 77
fi
train="$build/apps/taihu-train"
convert="$build/apps/taihu-convert"
write="$build/tests/taihu_idx_to_images"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
source "$(dirname "$0")/expect.sh"

train_images=20000
for format in png jpg; do
  "$write" $fm/train-images-idx3-ubyte.gz $fm/train-labels-idx1-ubyte.gz "$work/train_$format" $format $train_images \
    || exit 1
  "$write" $fm/t10k-images-idx3-ubyte.gz $fm/t10k-labels-idx1-ubyte.gz "$work/test_$format" $format || exit 1
done
for split in train test; do
  expect "imageset $split" 0 "records of 1 x 28 x 28" -- "$convert" imageset "$work/${split}_png.txt" \
    --out="$work/${split}_lmdb" --gray --progress=quiet
done

# LeNet's config with another [data] section; two epochs.
config() {  # NAME, then the [data] lines
  local name=$1
  shift
  {
    sed -e '/^\[data\]/,$d' -e "s|^net = nets/|net = $src/config/nets/|" "$src/config/lenet-fashion.ini"
    echo "[data]"
    printf '%s\n' "$@" "scale = 0.00392156862745098" "prefetch = 4"
    sed -n '/^\[solver\]/,/^\[output\]/p' "$src/config/lenet-fashion.ini" | sed '$d'
  } >"$work/$name.ini"
}
config idx "source = fashion-mnist" "dir = $fm" "limit_train = $train_images"
config list "source = images" "train = train_png.txt" "test = test_png.txt" "channels = 1"
config lmdb "source = lmdb" "train = train_lmdb" "test = test_lmdb" "classes = 10" "channels = 1"
config folder "source = images" "train = train_png" "test = test_png" "channels = 1" "decoders = 2"
config jpeg "source = images" "train = train_jpg.txt" "test = test_jpg.txt" "channels = 1"

for run in idx list lmdb folder jpeg; do
  expect "$run trains" 0 "test accuracy" -- "$train" --config-file="$work/$run.ini" epochs=2 \
    output.dir="$work/out_$run" --progress=quiet --report="$work/$run.json"
done

field() { grep -oE "\"$2\": [-0-9.e+]+" "$work/$1.json" | head -1 | awk '{print $2}'; }
same() {  # NAME: the run equals the IDX run bit for bit
  local k
  for k in train_loss test_loss test_accuracy; do
    if [[ "$(field "$1" $k)" == "$(field idx $k)" && -n "$(field idx $k)" ]]; then
      passed=$((passed + 1))
    else
      failed=$((failed + 1))
      echo "FAIL: $1 $k $(field "$1" $k) differs from IDX's $(field idx $k)"
    fi
  done
}
close() {  # NAME: test accuracy within 1 point of the IDX run's
  if awk -v a="$(field "$1" test_accuracy)" -v b="$(field idx test_accuracy)" \
      'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0.8 && d <= 0.01) }'; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $1 test accuracy $(field "$1" test_accuracy) not within 1 point of IDX's $(field idx test_accuracy)"
  fi
}
same list
same lmdb
close folder
close jpeg
echo "test accuracy: idx $(field idx test_accuracy), list $(field list test_accuracy), lmdb $(field lmdb test_accuracy)," \
  "folder $(field folder test_accuracy), jpeg $(field jpeg test_accuracy)"

# Bad data: a small folder with a truncated PNG and a text file named .png.
mkdir -p "$work/small/train" "$work/small/test"
for c in 0 1 2; do
  mkdir -p "$work/small/train/$c" "$work/small/test/$c"
  ls "$work/train_png/$c" | head -40 | while read -r f; do cp "$work/train_png/$c/$f" "$work/small/train/$c/"; done
  ls "$work/test_png/$c" | head -10 | while read -r f; do cp "$work/test_png/$c/$f" "$work/small/test/$c/"; done
done
first=$(ls "$work/small/train/1" | head -1)
head -c 60 "$work/small/train/1/$first" >"$work/small/train/1/truncated.png"
echo "not an image" >"$work/small/train/2/text.png"
echo "notes" >"$work/small/train/2/README.txt"
mkdir -p "$work/small/train/3"  # an empty class folder
ln -s .. "$work/small/train/0/up"  # a symlink loop: not followed (it listed every class again under label 0)
mkfifo "$work/small/train/0/pipe.png"  # not a regular file
config small "source = images" "train = small/train" "test = small/test" "channels = 1"
expect "corrupt images are skipped with a warning" 0 "skipped .*truncated.png" -- "$train" --config-file="$work/small.ini" \
  epochs=1 batch_size=16 output.dir="$work/out_small" --progress=quiet --report="$work/small.json"
expect "the report counts them" 0 '"skipped": 2' -- cat "$work/small.json"
expect "and what listing left out" 0 '"left_out": 4' -- cat "$work/small.json"
expect "the loop is named" 0 "0/up' leads to .*left out" -- "$train" --config-file="$work/small.ini" epochs=1 \
  batch_size=16 output.dir="$work/out_small" --progress=quiet
expect "and the samples are not multiplied" 0 "122 training and 30 test samples" -- "$train" \
  --config-file="$work/small.ini" epochs=1 batch_size=16 output.dir="$work/out_small" --progress=quiet

# Damaged LMDB databases: cut to half or to 300 KB, or 8 KB overwritten in the middle (they ended
# in SIGBUS, SIGBUS and SIGSEGV): an error naming the database and what is wrong.
size=$(stat -c %s "$work/train_lmdb/data.mdb")
python3 -c 'import random, sys; random.seed(1); sys.stdout.buffer.write(random.randbytes(8192))' >"$work/noise"
for damage in half tiny noisy; do
  cp -r "$work/train_lmdb" "$work/${damage}_lmdb"
  case $damage in
    half) truncate -s $((size / 2)) "$work/${damage}_lmdb/data.mdb" ;;
    tiny) truncate -s 300K "$work/${damage}_lmdb/data.mdb" ;;
    noisy) dd if="$work/noise" of="$work/${damage}_lmdb/data.mdb" bs=1 seek=$((size / 2)) conv=notrunc status=none ;;
  esac
  config "$damage" "source = lmdb" "train = ${damage}_lmdb" "test = test_lmdb" "classes = 10" "channels = 1"
done
expect "an LMDB cut in half is an error" 2 "half_lmdb' is truncated: .* holds $((size / 2)) bytes of the $size" \
  -- "$train" --config-file="$work/half.ini" --progress=quiet
expect "an LMDB cut to 300 KB is an error" 2 "tiny_lmdb' is truncated: .* holds 307200 bytes" \
  -- "$train" --config-file="$work/tiny.ini" --progress=quiet
expect "an LMDB overwritten in the middle is an error" 2 "noisy_lmdb' is damaged: .*rebuild it" \
  -- "$train" --config-file="$work/noisy.ini" --progress=quiet

config nowhere "source = images" "train = no/such/folder" "test = small/test" "channels = 1"
expect "a missing folder is an error naming it" 2 "no/such/folder" -- "$train" --config-file="$work/nowhere.ini" --progress=quiet

echo "image sources: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
