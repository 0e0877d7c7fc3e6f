# Finds taihu's Debian-packaged dependencies. None of them ships a CMake
# package that works on Debian 12 for every one, so each is found by hand and
# exposed as an imported target named taihu::<name>. Installed with taihu's
# CMake package, so that find_package(taihu) finds them the same way.
include_guard(GLOBAL)

find_package(Threads REQUIRED)

# OpenBLAS (libopenblas-dev). Debian's build is DYNAMIC_ARCH: the kernel is
# chosen at load time, see core/blas/kernel_selection.cpp.
find_path(OPENBLAS_INCLUDE_DIR cblas.h
  PATHS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas
        /usr/include/x86_64-linux-gnu /usr/include)
find_library(OPENBLAS_LIBRARY NAMES openblas
  PATHS /usr/lib/x86_64-linux-gnu/openblas-pthread /usr/lib/x86_64-linux-gnu)
if(NOT OPENBLAS_INCLUDE_DIR OR NOT OPENBLAS_LIBRARY)
  message(FATAL_ERROR "OpenBLAS not found: apt-get install libopenblas-dev")
endif()
add_library(taihu::openblas INTERFACE IMPORTED)
target_include_directories(taihu::openblas INTERFACE ${OPENBLAS_INCLUDE_DIR})
target_link_libraries(taihu::openblas INTERFACE ${OPENBLAS_LIBRARY})

# spdlog (libspdlog-dev) — compiled library with an external fmt.
find_package(spdlog CONFIG REQUIRED)
add_library(taihu::spdlog INTERFACE IMPORTED)
target_link_libraries(taihu::spdlog INTERFACE spdlog::spdlog)

# Cereal (libcereal-dev) — header only.
find_path(CEREAL_INCLUDE_DIR cereal/cereal.hpp)
if(NOT CEREAL_INCLUDE_DIR)
  message(FATAL_ERROR "Cereal not found: apt-get install libcereal-dev")
endif()
add_library(taihu::cereal INTERFACE IMPORTED)
target_include_directories(taihu::cereal INTERFACE ${CEREAL_INCLUDE_DIR})

# doctest (doctest-dev) — header only.
find_path(DOCTEST_INCLUDE_DIR doctest/doctest.h)

# CAF 0.17.6 (libcaf-dev) has no CMake package on Debian: headers and the
# core/io/openssl libraries are found by hand. Only messages/ and actors/ use it.
# Another build of it is found first when its prefix is on CMAKE_PREFIX_PATH:
# the ThreadSanitizer check's (tests/sanitizers/build_caf_tsan.sh, tsan.sh). The
# build tree's executables then load it through the RPATH CMake gives them.
find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY NAMES caf_core)
find_library(CAF_IO_LIBRARY NAMES caf_io)
if(CAF_INCLUDE_DIR AND CAF_CORE_LIBRARY AND CAF_IO_LIBRARY)
  add_library(taihu::caf INTERFACE IMPORTED)
  target_include_directories(taihu::caf INTERFACE ${CAF_INCLUDE_DIR})
  target_link_libraries(taihu::caf INTERFACE ${CAF_CORE_LIBRARY} ${CAF_IO_LIBRARY} Threads::Threads)
  set(TAIHU_HAVE_CAF ON)
else()
  message(FATAL_ERROR "CAF 0.17 not found: apt-get install libcaf-dev")
endif()

# Asio (libasio-dev) — standalone, header only.
find_path(ASIO_INCLUDE_DIR asio.hpp)

# PMIx (libpmix-dev), optional: the key-value store of Open MPI's mpirun and
# Slurm's srun --mpi=pmix, through which launched ranks meet
# (transport/launcher_store.hpp). taihu::pmix is empty without it.
find_package(PkgConfig QUIET)
if(PKG_CONFIG_FOUND)
  pkg_check_modules(PMIX QUIET IMPORTED_TARGET GLOBAL pmix)
endif()
add_library(taihu::pmix INTERFACE IMPORTED)
if(PMIX_FOUND)
  target_link_libraries(taihu::pmix INTERFACE PkgConfig::PMIX)
  set(TAIHU_HAVE_PMIX ON)
else()
  set(TAIHU_HAVE_PMIX OFF)
endif()

# MPI (libopenmpi-dev), optional: [cluster] transport = mpi carries the shard
# actors' chunks over MPI (transport/mpi_transport.hpp), and so over whatever
# fabric Open MPI reaches (InfiniBand, RoCE, Omni-Path through UCX or OFI).
# taihu::mpi is empty without it.
# (MPI's C interface, found for C++; MPI_CXX_SKIP_MPICXX: not the removed C++ bindings.)
set(MPI_CXX_SKIP_MPICXX ON)
find_package(MPI QUIET COMPONENTS CXX)
add_library(taihu::mpi INTERFACE IMPORTED)
if(MPI_CXX_FOUND)
  target_link_libraries(taihu::mpi INTERFACE MPI::MPI_CXX)
  set(TAIHU_HAVE_MPI ON)
else()
  set(TAIHU_HAVE_MPI OFF)
endif()

# Image data (core/data/image_codec.hpp, lmdb_database.hpp):
#   libjpeg-turbo's TurboJPEG API (libturbojpeg0-dev): SIMD JPEG decoding and
#     decoding at 1/2, 1/4, 1/8 scale, which torchvision's PIL path lacks;
#   libpng (libpng-dev): the reference PNG codec;
#   LMDB (liblmdb-dev): the key-value store of Caffe's image databases,
#     read in place through its memory map.
find_path(TURBOJPEG_INCLUDE_DIR turbojpeg.h)
find_library(TURBOJPEG_LIBRARY NAMES turbojpeg)
if(NOT TURBOJPEG_INCLUDE_DIR OR NOT TURBOJPEG_LIBRARY)
  message(FATAL_ERROR "libjpeg-turbo's TurboJPEG API not found: apt-get install libturbojpeg0-dev")
endif()
add_library(taihu::turbojpeg INTERFACE IMPORTED)
target_include_directories(taihu::turbojpeg INTERFACE ${TURBOJPEG_INCLUDE_DIR})
target_link_libraries(taihu::turbojpeg INTERFACE ${TURBOJPEG_LIBRARY})

find_package(PNG QUIET)
if(NOT PNG_FOUND)
  message(FATAL_ERROR "libpng not found: apt-get install libpng-dev")
endif()
add_library(taihu::png INTERFACE IMPORTED)
target_link_libraries(taihu::png INTERFACE PNG::PNG)

find_path(LMDB_INCLUDE_DIR lmdb.h)
find_library(LMDB_LIBRARY NAMES lmdb)
if(NOT LMDB_INCLUDE_DIR OR NOT LMDB_LIBRARY)
  message(FATAL_ERROR "LMDB not found: apt-get install liblmdb-dev")
endif()
add_library(taihu::lmdb INTERFACE IMPORTED)
target_include_directories(taihu::lmdb INTERFACE ${LMDB_INCLUDE_DIR})
target_link_libraries(taihu::lmdb INTERFACE ${LMDB_LIBRARY})

# oneDNN (libdnnl-dev): JIT-generated direct convolutions for the CPU's own
# vector width (core/kernels/dnnl_convolution.hpp). Its CMake package wants
# OpenCL headers for the GPU runtime taihu does not use, so it is found by
# hand; libgomp comes with it (Debian builds it on OpenMP), and taihu calls
# omp_set_num_threads(1) so that oneDNN computes on taihu's own threads.
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(DNNL_LIBRARY NAMES dnnl)
find_library(GOMP_LIBRARY NAMES gomp libgomp.so.1 PATHS /usr/lib/gcc/x86_64-linux-gnu/12)
if(NOT DNNL_INCLUDE_DIR OR NOT DNNL_LIBRARY OR NOT GOMP_LIBRARY)
  message(FATAL_ERROR "oneDNN not found: apt-get install libdnnl-dev")
endif()
add_library(taihu::dnnl INTERFACE IMPORTED)
target_include_directories(taihu::dnnl INTERFACE ${DNNL_INCLUDE_DIR})
target_link_libraries(taihu::dnnl INTERFACE ${DNNL_LIBRARY} ${GOMP_LIBRARY})

# protobuf (libprotobuf-dev, protobuf-compiler): Caffe's files are protobuf
# (LMDB records are Datum messages, mean files BlobProto; taihu-convert reads
# prototxt and caffemodel files): reading them any other way would be
# hand-writing a protobuf decoder.
find_package(Protobuf QUIET)
if(NOT Protobuf_FOUND)
  message(FATAL_ERROR "protobuf not found: apt-get install libprotobuf-dev protobuf-compiler")
endif()
add_library(taihu::protobuf INTERFACE IMPORTED)
target_link_libraries(taihu::protobuf INTERFACE protobuf::libprotobuf)
