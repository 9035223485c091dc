/* verifier: static safety proof of one program for one hook type, before it runs.
 *
 * Linux-style path exploration over an abstract state (register types, tnum + s64/u64/s32/
 * u32 bounds for scalars, ids for NULL narrowing, per-byte stack tracking with full spilled
 * register state, bpf-to-bpf frames), pruning by state containment at jump targets, bounded
 * loops by simulation under hook->loop_budget.
 *
 * Rank variance: for hooks whose outputs must agree on every rank (tuner, tuner/chunk,
 * tuner/init, env: the writable fields the hook table marks rank-invariant), a
 * taint bit follows rank-local data (hook table variance column, rank_local_result helpers,
 * loads from writable maps, hash map presence) through registers, stack bytes and control
 * dependence; an output written from it is rejected (E-RANK-LOCAL) unless
 * opts->allow_rank_local.
 *
 * Input is the loader's program (map pseudo LDDW forms unresolved: imm = map index into
 * `maps`). A rejection fills nb_verifier_diag with a stable code, the instruction index,
 * the source position from BTF line info when present, and a one-line explanation.
 */
#ifndef NCCLBPF_VERIFIER_VERIFIER_H
#define NCCLBPF_VERIFIER_VERIFIER_H

#include <stddef.h>
#include <stdint.h>

#include "loader/object.h"
#include "verifier/hooks.h"

/* Stable rejection codes, printed as "[E-NULL-DEREF]" etc. Never renumber. */
enum nb_verr {
	NB_VERR_OK = 0,
	NB_VERR_NULL_DEREF,        /* deref of possibly-NULL map value */
	NB_VERR_NULL_ARITH,        /* arithmetic on possibly-NULL pointer */
	NB_VERR_CTX_ACCESS,        /* out of bounds / misaligned / wrong size ctx access */
	NB_VERR_CTX_WRITE,         /* write to a read-only ctx field */
	NB_VERR_MAP_VALUE_OOB,     /* map value access not proven in bounds */
	NB_VERR_STACK_OOB,         /* stack access outside the frame / variable offset */
	NB_VERR_HELPER_UNKNOWN,    /* unknown helper id */
	NB_VERR_HELPER_DENIED,     /* helper not allowed for this hook */
	NB_VERR_HELPER_ARG,        /* helper argument of the wrong kind */
	NB_VERR_STACK_LIMIT,       /* stack use beyond the frame size */
	NB_VERR_CALL_DEPTH,        /* call depth beyond the limit */
	NB_VERR_INFINITE_LOOP,     /* state repeats exactly at a loop head */
	NB_VERR_BUDGET,            /* exploration budget exhausted */
	NB_VERR_POINTER_LEAK,      /* pointer stored to map/ctx or returned */
	NB_VERR_DIV_ZERO,          /* divisor may be zero */
	NB_VERR_UNINIT_REG,        /* read of an uninitialised register */
	NB_VERR_UNINIT_STACK,      /* read of uninitialised stack bytes */
	NB_VERR_BAD_JUMP,          /* jump out of program / into LDDW */
	NB_VERR_FALL_OFF,          /* falls off the end */
	NB_VERR_BAD_INSN,          /* unknown opcode / malformed encoding */
	NB_VERR_UNREACHABLE,       /* unreachable instruction */
	NB_VERR_PROG_SIZE,         /* too many instructions */
	NB_VERR_POINTER_ARITH,     /* pointer arithmetic not allowed (e.g. ptr * x, ctx += var) */
	NB_VERR_INVALID_MEM,       /* deref of a scalar / non-pointer */
	NB_VERR_READONLY_MAP,      /* write to a read-only map (.rodata) */
	NB_VERR_RETURN,            /* bad return value (uninitialised) */
	NB_VERR_RANK_LOCAL,        /* rank-invariant output decided from rank-local data */
	NB_VERR_POINTER_CMP,       /* comparison whose outcome depends on an address */
	NB_VERR_MISALIGNED,        /* atomic not naturally aligned */
	NB_VERR_WRITEONLY_MAP,     /* read of a map programs may only write (BPF_F_WRONLY_PROG) */
	NB_VERR_COST,              /* worst-case instructions per run above the hook's limit */
	NB_VERR_COUNT
};

/* "E-NULL-DEREF", ... */
const char *verifier_err_code(enum nb_verr code);
struct nb_verifier_diag;
/* The code of a diagnostic as printed: "E-..." for an error, "W-..." for a warning. */
const char *verifier_diag_code(const struct nb_verifier_diag *diag);

struct nb_verifier_diag {
	enum nb_verr code;
	size_t insn;       /* instruction index in the program */
	const char *file;  /* from line info, or NULL */
	uint32_t line;     /* 0 if unknown */
	uint32_t col;
	const char *line_src; /* source text of the line, or NULL */
	char msg[512];     /* one line a policy author can act on */
	bool warning;      /* a warning (accepted program), not the rejection */
};

/* Warnings of an accepted (or rejected) program: code the ISA defines but that is most
 * likely a mistake (a divisor that may be zero). One per instruction, the first
 * NB_VERIFIER_MAX_WARNINGS kept; count says how many there were. */
#define NB_VERIFIER_MAX_WARNINGS 8
struct nb_verifier_warnings {
	size_t count;
	struct nb_verifier_diag w[NB_VERIFIER_MAX_WARNINGS];
};

struct nb_verifier_stats {
	uint64_t insns_processed;
	uint64_t states_stored;
	uint64_t states_pruned;
	uint64_t peak_states;
	uint64_t time_ns;
	uint64_t loops_widened; /* loop heads verified by widening (verifier_widen.c) */
	uint64_t widen_rollbacks; /* widenings whose proof failed (that loop was walked) */
	uint64_t runs;          /* explorations (an error after a widening verifies again) */
	/* Worst-case instructions one run executes (loops x iteration bounds, bpf_loop x
	 * nr_loops x the callback, subprograms): checked against the hook's limit
	 * (E-COST); set when the program is accepted. */
	uint64_t max_insns;
	uint64_t max_insns_limit; /* the limit it was checked against (0 = none) */
	/* bytes of the stored states (with loop bodies, widening and bpf_loop records) of
	 * the last exploration: most of a short verification's time is touching them */
	uint64_t state_bytes;
};

struct nb_verifier_opts {
	uint64_t budget; /* 0 = hook default */
	uint32_t mem_size; /* conformance hook: bytes at r1 (r2 = this length); 0 = none */
	/* Accept tuner decisions that depend on rank-local data (latency map, timers, hash
	 * map presence...): only safe when every rank of the job shares that state. Default
	 * (false): such a program is rejected with NB_VERR_RANK_LOCAL, as ranks deciding
	 * differently deadlock the collective. */
	bool allow_rank_local;
	/* Optional, insn_cnt bytes: on success, 1 for every instruction some verified path
	 * executes, 0 for the rest (proven infeasible). The runtime makes those trap, so code
	 * the verifier never looked at can never run. */
	uint8_t *visited;
	/* Walk every loop iteration by iteration (no widening, verifier_widen.c): for A/B
	 * comparisons in tests and benchmarks. */
	bool no_widen;
	/* Optional: filled with the warnings of the run (cleared first). */
	struct nb_verifier_warnings *warnings;
	/* Most instructions one run may execute (E-COST above); 0 = the hook's limit
	 * (hook->run_limit; NCCLBPF_MAX_INSNS in the runtime). */
	uint64_t max_insns;
};

/* Returns 0 if safe, -EACCES on rejection (diag filled), -ENOMEM. */
int verifier_check(const struct nb_program *prog, const struct nb_map_def *maps,
		   size_t map_cnt, const struct nb_hook_desc *hook,
		   const struct nb_verifier_opts *opts, struct nb_verifier_diag *diag,
		   struct nb_verifier_stats *stats);

/* Formats a diagnostic compiler-style:
 *   policy.bpf.c:14:9: error: <msg> [E-NULL-DEREF]
 *      14 |     return v->count;
 *   insn 7: r0 = *(u64 *)(r0 + 0)
 * Returns the length written (snprintf semantics). */
int verifier_format_diag(const struct nb_verifier_diag *diag, const struct nb_program *prog,
			 char *buf, size_t buflen);

#endif
