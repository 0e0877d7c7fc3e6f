#pragma once
// The compute threads of this process: how many threads taihu's pool
// (parallel.hpp) runs every BLAS tile and kernel on. OpenBLAS itself is kept
// single-threaded for good, so that results do not depend on the thread
// count (core/blas/tiling.hpp says why); the count starts from what OpenBLAS
// read at load (OPENBLAS_NUM_THREADS, else one per core).

namespace taihu {

void set_compute_threads(int threads);
int compute_threads();

// Called before every OpenBLAS call (core/blas): the first call, in any
// thread, takes OpenBLAS's thread count as ours and then sets OpenBLAS to one.
void keep_openblas_single_threaded();

}  // namespace taihu
