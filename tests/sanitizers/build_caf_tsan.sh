#!/usr/bin/env bash
# Builds CAF with ThreadSanitizer for the ThreadSanitizer check (tests/sanitizers/tsan.sh,
# docs/checking.md): the same CAF as the libcaf-dev installed here, from Debian's source package
# of it, with Debian's patches, compiled by the same g++ as taihu's TSan build with
# -fsanitize=thread. Only libcaf_core and libcaf_io (what taihu links) are built: no OpenSSL
# module, tests, examples or tools. Installs headers and libraries into PREFIX (include/, lib/);
# taihu is pointed at it with cmake -DTAIHU_CAF_PREFIX=PREFIX.
#
#   bash tests/sanitizers/build_caf_tsan.sh [PREFIX]     (default build-tsan/caf-tsan)
#
# Does nothing when PREFIX/stamp names the same source version, compiler and flags. Needs root
# for apt-get (the package lists and the source go into PREFIX/apt: the system's own apt state
# and sources are not changed). CXX picks the compiler (default g++); ccache is used if present.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
prefix=$(realpath -m "${1:-$src/build-tsan/caf-tsan}")
cxx=${CXX:-g++}
# -std=c++14 as Debian's build (its patch to CAF's CMakeLists.txt); -O1 -g1 as taihu's
# sanitizer builds (CMakeLists.txt).
flags="-std=c++14 -O1 -g1 -fno-omit-frame-pointer -fsanitize=thread"
read -r pkg ver < <(dpkg-query -W -f='${source:Package} ${source:Version}\n' libcaf-dev)
stamp="$pkg $ver; $($cxx --version | head -1); $flags"
if [[ -f $prefix/stamp && $(head -1 "$prefix/stamp") == "$stamp" ]]; then
  echo "build_caf_tsan: $prefix has $stamp"
  exit 0
fi

apt_opts=()
# Private apt state: deb-src entries made from the system's own deb entries, lists and cache
# under PREFIX/apt.
setup_apt() {
  local apt=$prefix/apt
  rm -rf "$apt" && mkdir -p "$apt/parts" "$apt/lists/partial" "$apt/cache/archives/partial"
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [[ -f $f ]] && sed 's/^Types:.*/Types: deb-src/' "$f" >"$apt/parts/$(basename "$f")"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -f $f ]] && sed -n 's/^deb\s/deb-src /p' "$f" >"$apt/parts/$(basename "$f")"
  done
  apt_opts=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt/parts"
            -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
            -o APT::Sandbox::User=root)
  apt-get "${apt_opts[@]}" -qq update
}

# The .dsc, the upstream tarball and Debian's tarball, each checked by apt against the signed
# source index. Unpacked with Debian's patches applied (dpkg-source -x) into $1.
fetch_and_unpack() {
  local dest=$1 dl=$prefix/apt/source
  mkdir -p "$dl"
  (cd "$dl" && apt-get "${apt_opts[@]}" -qq --download-only source "$pkg=$ver") ||
    echo "build_caf_tsan: apt-get source did not fetch every file" >&2
  local dsc=$dl/${pkg}_${ver#*:}.dsc
  [[ -f $dsc ]] || { echo "build_caf_tsan: no $dsc" >&2; exit 1; }
  if compgen -G "$dl/${pkg}_${ver#*:}.debian.tar.*" >/dev/null; then
    rm -rf "$dest"
    dpkg-source -x "$dsc" "$dest"
    patches="Debian's (dpkg-source -x)"
  else
    unpack_without_debian_tarball "$dsc" "$dest"
  fi
}

# Where the mirror serves the .dsc and the upstream tarball but not Debian's tarball (as the one
# this project's machines reach did on 2026-12-05): the upstream tarball, checked against the
# .dsc's SHA-256, with tests/sanitizers/caf-0.17.6-gcc12.patch (the one header change of
# Debian's patches, which the build needs). What that leaves out of Debian's patches: the
# -std=c++14 (given in $flags instead) and upstream's fix for stream slot ids past 65535
# (PR #1135, scheduled_actor.cpp; taihu uses no CAF streams). check_headers below still compares
# every installed header with Debian's.
unpack_without_debian_tarball() {
  local dsc=$1 dest=$2 sum name
  echo "build_caf_tsan: Debian's tarball not available; upstream tarball + caf-0.17.6-gcc12.patch" >&2
  read -r sum _ name < <(sed -n '/^Checksums-Sha256:/,/^[^ ]/p' "$dsc" | grep 'orig\.tar')
  (cd "$(dirname "$dsc")" && echo "$sum  $name" | sha256sum -c --quiet)
  rm -rf "$dest" && mkdir -p "$dest"
  tar -xf "$(dirname "$dsc")/$name" -C "$dest" --strip-components=1
  patch -d "$dest" -p1 --quiet <"$src/tests/sanitizers/caf-0.17.6-gcc12.patch"
  patches="caf-0.17.6-gcc12.patch only (Debian's tarball not available)"
}

build_and_install() {
  local source=$1 build=$prefix/build launcher=()
  command -v ccache >/dev/null && launcher=(-DCAF_USE_CCACHE=ON)
  # CMAKE_BUILD_TYPE=None as Debian's build: only $flags. $ORIGIN: libcaf_io loads the
  # libcaf_core beside it, not Debian's of the same soname.
  # shellcheck disable=SC2016  # $ORIGIN is for the dynamic loader
  cmake -S "$source" -B "$build" -G Ninja -Wno-dev -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=thread \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_INSTALL_RPATH='$ORIGIN' \
    -DCAF_LOG_LEVEL=QUIET \
    -DCAF_NO_OPENSSL=ON -DCAF_NO_OPENCL=ON -DCAF_NO_PYTHON=ON -DCAF_NO_TOOLS=ON \
    -DCAF_NO_EXAMPLES=ON -DCAF_NO_UNIT_TESTS=ON -DCAF_NO_SUMMARY=ON "${launcher[@]}" >/dev/null
  cmake --build "$build" -j "${JOBS:-$(nproc)}" --target libcaf_core_shared libcaf_io_shared
  cmake --install "$build" >/dev/null
}

# taihu's other builds compile against /usr/include/caf: the instrumented CAF must declare the
# same things, or the TSan build would check another program.
check_headers() {
  if ! diff -r -x openssl "$prefix/include/caf" /usr/include/caf; then
    echo "build_caf_tsan: headers differ from libcaf-dev's (above)" >&2
    exit 1
  fi
}

patches=""
rm -rf "${prefix:?}/stamp" "${prefix:?}/include" "${prefix:?}/lib"
setup_apt
fetch_and_unpack "$prefix/src"
build_and_install "$prefix/src"
check_headers
printf '%s\npatches: %s\n' "$stamp" "$patches" >"$prefix/stamp"
echo "build_caf_tsan: $stamp into $prefix; patches: $patches"
