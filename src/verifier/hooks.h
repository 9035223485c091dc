/* Hook descriptions: the one place that says, for each hook type, what a program may
 * touch. The verifier enforces these tables; the runtime hands out contexts of exactly
 * ctx_size bytes and helper implementations matching the prototypes.
 * Adding a context field or a helper is an edit of hooks.c only.
 */
#ifndef NCCLBPF_VERIFIER_HOOKS_H
#define NCCLBPF_VERIFIER_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum nb_hook_type {
	NB_HOOK_CONFORMANCE = 0, /* raw programs: r1 = memory of r2 bytes (bpf_conformance) */
	NB_HOOK_TUNER,           /* SEC("tuner"): struct ncclbpf_tuner_ctx */
	NB_HOOK_TUNER_CHUNK,     /* SEC("tuner/chunk"): struct ncclbpf_chunk_ctx */
	NB_HOOK_PROFILER,        /* SEC("profiler"): struct ncclbpf_profiler_ctx (read-only) */
	NB_HOOK_NET,             /* SEC("net"): struct ncclbpf_net_ctx */
	NB_HOOK_ENV,             /* SEC("env"): struct ncclbpf_env_ctx */
	NB_HOOK_TUNER_INIT,      /* SEC("tuner/init"): struct ncclbpf_tuner_init_ctx */
	NB_HOOK_COUNT
};

enum nb_variance {
	NB_RANK_INVARIANT, /* identical on every rank for the same collective */
	NB_RANK_LOCAL,
};

struct nb_ctx_field {
	const char *name;
	uint16_t off;
	uint16_t size;
	bool readable;
	bool writable;
	enum nb_variance variance;
};

/* SEC("tuner/init") fields (hooks_tuner_init.c): 7 inputs + 144 constants, one field each,
 * then n_compcaps and the 15 constants of the fifth compute-capability row (tuner v7) */
#define NB_TUNER_INIT_FIELDS 167
extern const struct nb_ctx_field hook_tuner_init_fields[NB_TUNER_INIT_FIELDS];

enum nb_arg_kind {
	NB_ARG_NONE = 0,
	NB_ARG_ANYTHING,         /* any initialised scalar */
	NB_ARG_CONST_MAP_PTR,    /* a map handle from LDDW pseudo map */
	NB_ARG_PTR_TO_MAP_KEY,   /* initialised stack/map-value memory of the map's key_size */
	NB_ARG_PTR_TO_MAP_VALUE, /* initialised stack/map-value memory of the map's value_size */
	NB_ARG_PTR_TO_MEM,       /* initialised readable memory of size given by next arg */
	NB_ARG_CONST_SIZE,       /* scalar size (> 0, bounded) for the previous PTR_TO_MEM */
	NB_ARG_PTR_TO_FUNC,      /* a function's address (BPF_PSEUDO_FUNC): a callback */
	NB_ARG_PTR_TO_CB_CTX,    /* stack or map value pointer, or NULL: passed to the callback */
};

enum nb_ret_kind {
	NB_RET_INTEGER = 0,
	NB_RET_VOID,
	NB_RET_MAP_VALUE_OR_NULL, /* pointer to value_size bytes of the map in arg 1, or NULL */
};

/* Kernel-compatible helper ids. */
#define NB_HELPER_MAP_LOOKUP_ELEM 1
#define NB_HELPER_MAP_UPDATE_ELEM 2
#define NB_HELPER_MAP_DELETE_ELEM 3
#define NB_HELPER_KTIME_GET_NS 5
#define NB_HELPER_TRACE_PRINTK 6
#define NB_HELPER_GET_PRANDOM_U32 7
#define NB_HELPER_LOOP 181 /* bpf_loop: run by the VM itself (vm.h), verified as a loop */
#define NB_BPF_LOOP_MAX (1u << 23) /* larger nr_loops: -E2BIG, as in Linux */
#define NB_HELPER_CONFORMANCE_IDENTITY 5 /* conformance hook only: returns r1 */
#define NB_HELPER_MAX 256

struct nb_helper_proto {
	int32_t id;
	const char *name;
	enum nb_ret_kind ret;
	enum nb_arg_kind args[5];
	bool rank_local_result; /* e.g. ktime: result differs between ranks */
};

struct nb_hook_desc {
	enum nb_hook_type type;
	const char *name;           /* "tuner", "profiler", ... */
	const char *section_prefix; /* section names matched: exact or prefix + "/" */
	uint32_t ctx_size;          /* r1 points to exactly this many bytes */
	const struct nb_ctx_field *fields;
	size_t field_cnt;
	const struct nb_helper_proto *helpers; /* allowed helpers for this hook */
	size_t helper_cnt;
	uint32_t stack_size;    /* per frame, <= 512 */
	uint32_t max_insns;     /* program size limit */
	uint64_t loop_budget;   /* verifier processed-instruction budget */
	bool ctx_is_raw_memory; /* conformance: r1 = buffer of r2 bytes, no field table */
	/* most instructions one run may execute (the verifier's static bound, E-COST);
	 * 0 = no limit. NCCLBPF_MAX_INSNS overrides it per hook (runtime/env.c). */
	uint64_t run_limit;
};

const struct nb_hook_desc *hook_desc(enum nb_hook_type type);
/* Hook for an ELF section name ("tuner", "tuner/chunk", "profiler/coll", ...), or NULL. */
const struct nb_hook_desc *hook_for_section(const char *section);
const struct nb_hook_desc *hook_by_name(const char *name);
/* The prototype of helper `id` if the hook allows it, else NULL. */
const struct nb_helper_proto *hook_helper(const struct nb_hook_desc *hook, int32_t id);
/* True when a store to writable field f must be the same on every rank: a writable field
 * marked NB_RANK_INVARIANT in its hook's table (the tuner decisions, tuner/init constants,
 * the env hook's pick; ranks choosing differently deadlock). The verifier then proves that
 * what is stored depends only on rank-invariant data, in every hook. */
bool hook_output_rank_invariant(const struct nb_hook_desc *hook, const struct nb_ctx_field *f);
/* Context field covering [off, off+size), or NULL. */
const struct nb_ctx_field *hook_ctx_field(const struct nb_hook_desc *hook, uint32_t off,
					  uint32_t size);

#endif
