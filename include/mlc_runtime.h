/* mlc_runtime.h: the C ABI of a library that mlc exported.

   In Python:
       mod = mlc.build(s, [A, B], name="myfunc")      # or graph.build(graph.optimize(g))
       mod.export_library("model.so")                 # LLVM object code, linked by cc

   In C (no Python, no mlc at run time):
       #include "mlc_runtime.h"
       float x[1 * 64], y[1 * 10];                    // C-contiguous, the dtypes and shapes
       void *args[] = {x, y};                         // of mlc_metadata()'s "signature"
       int32_t err = mlc_run(args, NULL);             // 0: done
   Build: cc main.c -I include model.so -Wl,-rpath,'$ORIGIN' -o main

   Every exported library defines the three symbols below. */
#ifndef MLC_RUNTIME_H_
#define MLC_RUNTIME_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* JSON describing the call: {"entry": ..., "signature": {"arguments": [{"buffer": "A",
   "dtype": "float32", "shape": [1, 64], "written": false} or {"scalar": "alpha", "dtype":
   "float32"}, ...], "sizes": ["n", ...]}, "checks": [[kind, expression, store], ...],
   "graph": {"inputs": [...], "outputs": [...]} (graph modules), "target": "llvm ..."}.
   The string is static: do not free it. */
const char *mlc_metadata(void);

/* Run the function once.
   args:  one pointer per argument, in the order of the build's argument list (for a graph:
          its inputs, then its outputs; the weights are inside the library). An array is
          passed as a pointer to its first element (C order, no padding); a scalar as a
          pointer to its value (float32 -> float *, int32 -> int32_t *, bool -> uint8_t *).
   sizes: the symbolic sizes (int64), in the order of the metadata's "sizes"; NULL when the
          shapes are all numbers. Nothing checks them against the arrays: the caller must
          pass arrays of the shapes the metadata gives for these sizes.
   Returns 0, or k >= 1 when the k-th run-time check of "checks" failed (an integer
   division by zero, an index read from data that was out of range, an allocation that
   found no memory; the outputs are then partial), or -1 when args is NULL or sizes is
   NULL although the function has symbolic sizes (nothing ran). One call at a time per
   library. */
int32_t mlc_run(void *const *args, const int64_t *sizes);

/* The function itself is also exported under its build name, with the native signature
   (the data pointers, then the sizes as int64_t, then the scalars by value):
       void myfunc(float *A, float *B);                       // mlc.build(..., name="myfunc")
   A graph's is "<name>_bound" (inputs and outputs; weights bound). */

#ifdef __cplusplus
}
#endif

#endif /* MLC_RUNTIME_H_ */
