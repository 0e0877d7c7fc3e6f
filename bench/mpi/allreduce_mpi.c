/* OpenMPI's MPI_Allreduce (float sum) on the sizes bench_remote_allreduce_actors
 * uses: median time per allreduce and algorithm bandwidth (bytes / time).
 * Built and run by bench/allreduce_vs_mpi.sh:
 *   mpicc -O2 -o allreduce_mpi allreduce_mpi.c && mpirun -np 4 ./allreduce_mpi 1,16,100 7 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, ranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const char* list = argc > 1 ? argv[1] : "1,16,100";
  const int runs = argc > 2 ? atoi(argv[2]) : 7;
  char* sizes = strdup(list);
  if (rank == 0) printf("| MB | time ms | algbw GB/s |\n|---|---|---|\n");
  for (char* item = strtok(sizes, ","); item; item = strtok(NULL, ",")) {
    const double mb = atof(item);
    const size_t n = (size_t)(mb * 1024 * 1024 / sizeof(float));
    float* in = malloc(n * sizeof(float));
    float* out = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; ++i) in[i] = (float)(rank + 1);
    double* t = malloc(sizeof(double) * (size_t)runs);
    MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); /* warm-up */
    for (int r = 0; r < runs; ++r) {
      MPI_Barrier(MPI_COMM_WORLD);
      const double start = MPI_Wtime();
      MPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      double local = MPI_Wtime() - start, slowest;
      MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      t[r] = slowest;
    }
    if (out[0] != (float)(ranks * (ranks + 1) / 2)) fprintf(stderr, "rank %d: wrong sum %f\n", rank, out[0]);
    qsort(t, (size_t)runs, sizeof(double), compare);
    if (rank == 0) printf("| %g | %.2f | %.3f |\n", mb, t[runs / 2] * 1e3, (double)(n * sizeof(float)) / t[runs / 2] / 1e9);
    fflush(stdout);
    free(in);
    free(out);
    free(t);
  }
  free(sizes);
  MPI_Finalize();
  return 0;
}
