/* Random valid eBPF programs for the interpreter-vs-JIT differential test (jit_diff.c).
 *
 * Programs are deterministic by construction, so any difference between the engines is a
 * bug: every register read has a defined value (r1-r5 are reloaded after helper calls, as
 * the verifier would demand), every stack read hits a window the function initialised, no
 * stack address ever becomes data, all memory accesses stay inside the caller's buffer,
 * the function's stack or an array-map value, and loops are counted. Each function ends by
 * dumping r0-r9 and its stack window into the buffer, so register and stack effects show
 * up as memory effects.
 */
#ifndef NCCLBPF_TESTS_JIT_DIFF_GEN_H
#define NCCLBPF_TESTS_JIT_DIFF_GEN_H

#include <stddef.h>
#include <stdint.h>

#include "isa/isa.h"

#define DG_DATA_BYTES 256 /* random-access part of the buffer */
#define DG_DUMP_BYTES 144 /* per function: r0-r9 then the 64-byte stack window */
#define DG_MAX_FUNCS 3
#define DG_MEM_BYTES (DG_DATA_BYTES + DG_MAX_FUNCS * DG_DUMP_BYTES)
#define DG_MAX_INSNS 4096

#define DG_HELPER_MIX 10     /* deterministic helper (checks stack alignment) */
#define DG_HELPER_MISSING 11 /* never implemented: BAD_HELPER fault */

struct dg_rng {
	uint64_t s;
};

uint64_t dg_next(struct dg_rng *r);

struct dg_params {
	uint64_t mem;       /* buffer address (DG_MEM_BYTES) */
	uint64_t map;       /* struct nb_map * of an array map (key 4, value 8), or 0 */
	uint32_t map_max;   /* its max_entries */
};

/* Fills out (capacity DG_MAX_INSNS); returns the instruction count. */
size_t dg_generate(struct dg_rng *r, const struct dg_params *p, struct bpf_insn *out);

#endif
