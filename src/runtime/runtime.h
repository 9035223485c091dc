/* runtime: the object/program/map model behind the public API (api_*.c), the helper
 * implementations per hook, program linking (pseudo LDDW -> addresses), execution-mode
 * selection (JIT / interpreter), and the process-wide policy registry that the plugin shims
 * use: hook chains published through an atomic pointer, so the decision path takes no lock.
 *
 * Configuration read here (all documented in README.md):
 *   NCCLBPF_POLICY  comma-separated list of objects, each optionally "file.o:program"
 *   NCCLBPF_VERIFY  strict (default) | warn
 *   NCCLBPF_JIT     1 (default) | 0
 */
#ifndef NCCLBPF_RUNTIME_RUNTIME_H
#define NCCLBPF_RUNTIME_RUNTIME_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ncclbpf/ncclbpf.h"
#include "verifier/hooks.h"

/* Log levels, numerically equal to NCCL's ncclDebugLogLevel. */
#define NB_LOG_WARN 2
#define NB_LOG_INFO 3
#define NB_LOG_TRACE 5
/* Subsystem flags, equal to NCCL's. */
#define NB_LOG_INIT 0x1
#define NB_LOG_TUNING 0x40
#define NB_LOG_PROFILE 0x4000
#define NB_LOG_NET 0x10
#define NB_LOG_ENV 0x80

/* Same signature as NCCL's ncclDebugLogger_t. */
typedef void (*nb_logger_fn)(int level, unsigned long flags, const char *file, int line,
			     const char *fmt, ...);

/* Sets the process logger (first non-NULL logger NCCL hands to any plugin init wins;
 * later calls are ignored). Without one, WARN lines go to stderr. */
void runtime_set_logger(nb_logger_fn fn);
/* Every line is prefixed "ncclbpf: ". */
void runtime_log(int level, unsigned long flags, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* One prepared program attached to a hook. */
struct nb_attachment {
	struct ncclbpf_program *prog;
	const char *label; /* "size_aware.bpf.o:pick" */
};

/* Immutable once published. Runs are lock-free: readers load the chain pointer with
 * acquire semantics; replaced chains (and their objects) stay valid until
 * runtime_unload_policies, so a reader never sees freed memory (registry.c). */
struct nb_hook_chain {
	enum nb_hook_type hook;
	size_t len;
	struct nb_attachment items[];
};

/* Loads NCCLBPF_POLICY once per process (later calls return the first result).
 * Objects that fail to open, verify or prepare are skipped with one WARN line carrying
 * the diagnostic; the rest are attached in order. Never fails: returns the number of
 * programs attached (0 = pure pass-through). Thread-safe. */
int runtime_load_policies_from_env(void);
/* Same from an explicit spec string (tests, CLI, hot reload later). Replaces the chains. */
int runtime_load_policies(const char *spec);
/* Drops every chain and object (tests). */
void runtime_unload_policies(void);

/* The chain for a hook, or NULL when nothing is attached. Acquire load; no lock. */
const struct nb_hook_chain *runtime_hook_chain(enum nb_hook_type hook);

/* Runs every program of the chain in order on the same ctx (each sees the previous one's
 * writes). A program that faults is counted (runtime_fault_count) and its writes are not
 * rolled back by this function: callers that need "fault = keep NCCL's choice" snapshot
 * the outputs themselves. Returns the number of programs that faulted. */
int runtime_chain_run(const struct nb_hook_chain *chain, void *ctx, size_t ctx_size);

/* Faults seen per hook since load (relaxed counters). */
uint64_t runtime_fault_count(enum nb_hook_type hook);

/* Process-wide registry of maps shared by name (LIBBPF_PIN_BY_NAME in the policy, or
 * built-in maps such as the profiler's "ncclbpf_latency"). Returns the existing map of that
 * name if every attribute matches the spec (type, sizes, max_entries, flags),
 * creates it otherwise; NULL with err filled when an existing map is incompatible.
 * Objects opened later bind their pinned declarations to these maps. Thread-safe. */
struct nb_map_spec;
struct nb_map;
struct nb_map *runtime_pinned_map(const struct nb_map_spec *spec, char *err, size_t errlen);
/* Same, naming the declaring object ("object x.bpf.o") in mismatch messages. Every
 * attribute must match (type, sizes, max_entries, flags). */
struct nb_map *runtime_pinned_map_owned(const struct nb_map_spec *spec, const char *owner,
					char *err, size_t errlen);

/* Finds a map by name in the loaded policies (first match), for the plugin's built-in
 * maps (e.g. "ncclbpf_latency"), or NULL. */
struct ncclbpf_map *runtime_find_map(const char *name);


/* ======================================================================================
 * Runtime-internal object model (api_*.c, link.c, registry.c). Other modules use the
 * public accessors; the plugin shims may read these fields on the decision path.
 * ==================================================================================== */
#include "loader/object.h"
#include "vm/vm.h"

struct ncclbpf_map {
	struct nb_map *map;             /* the storage (owned unless pinned) */
	const struct nb_map_def *def;   /* declaration in the object, NULL for built-ins */
	bool pinned;                    /* bound through runtime_pinned_map: never freed here */
	bool readonly_prog;             /* .rodata / BPF_F_RDONLY_PROG */
};

struct ncclbpf_program {
	/* The decision path's fast case, first so it shares one cache line: JIT code of a hook
	 * with a fixed context size, called directly by ncclbpf_program_run (NULL otherwise);
	 * fast_entry when the code cannot fault (no fault record needed). */
	vm_jit_fn fast_entry;
	vm_jit_run_fn fast;
	uint32_t fast_ctx_size;
	bool needs_epoch;               /* references hash/LRU maps: run inside map_epoch */
	struct ncclbpf_object *obj;
	const struct nb_program *nbp;   /* the loader's program (unlinked instructions) */
	int section_hook;               /* enum nb_hook_type, or -1 when the section names none */
	/* prepared state (ncclbpf_program_prepare) */
	bool prepared;
	bool checked;                   /* interpreter with every access checked */
	bool unverified;                /* loaded without a passing verification (warn/off):
					 * runs only checked, with an instruction budget */
	const struct nb_hook_desc *hook;
	struct bpf_insn *linked;        /* pseudo LDDW replaced by addresses */
	struct vm_program vm;
	vm_helper_fn helpers[NB_HELPER_MAX];
	const struct nb_helper_proto *protos[NB_HELPER_MAX];
	struct vm_jit_image *jit;
	vm_jit_fn entry;                /* non-NULL when JIT-compiled */
	/* raw-memory hooks (conformance) verified for a buffer of mem_size bytes: the verifier
	 * relied on exactly that size and on a non-NULL buffer when mem_size > 0, so runs must
	 * match it */
	bool raw_verified;
	uint32_t raw_mem_size;
	/* from a successful verification: 1 = some verified path runs the instruction; the
	 * others are replaced by a trap when linking (NULL: nothing trapped) */
	uint8_t *visited;
};

struct ncclbpf_object {
	struct nb_object *nbo;          /* loader object; NULL for raw instruction objects */
	struct nb_object raw;           /* used when nbo is NULL (runtime_object_from_insns) */
	struct nb_program raw_prog;
	char name[256];
	struct ncclbpf_program *progs;
	size_t prog_cnt;
	struct ncclbpf_map *maps;
	struct nb_map **map_handles;    /* maps[i].map, for the JIT's inlining */
	size_t map_cnt;
};

/* ncclbpf_program_prepare with the conformance memory size: for NB_HOOK_CONFORMANCE the
 * verifier is told that r1 points to mem_size bytes (r2 = mem_size). */
int runtime_program_prepare_mem(struct ncclbpf_program *prog, enum ncclbpf_hook hook,
				const struct ncclbpf_prepare_opts *opts, uint32_t mem_size,
				char *err, size_t errlen);

/* Wraps raw instructions (bpf_conformance: little-endian 8-byte slots, no ELF) into an
 * object with one program "main" in section ".text". `bytes` must be a multiple of 8. */
int runtime_object_from_insns(const void *insns, size_t bytes, const char *name,
			      struct ncclbpf_object **obj, char *err, size_t errlen);

/* Link step (link.c): copies the program replacing pseudo LDDW forms by map addresses;
 * sets prog->needs_epoch. Returns 0 or -EINVAL with err. */
int runtime_link_program(struct ncclbpf_program *prog, char *err, size_t errlen);

/* ncclbpf_program_disasm on the loader's program and map declarations: inspection that
 * needs no maps created (`ncclbpf disasm`). */
int runtime_disasm_loader_program(const struct nb_program *p, const struct nb_map_def *maps,
				  size_t map_cnt, char *buf, size_t buflen);

/* Frees a program's prepared state (linked copy, JIT image); it must not be running. */
void runtime_program_release(struct ncclbpf_program *prog);

/* Helper implementation for a hook, or NULL (helpers.c). */
vm_helper_fn runtime_helper_impl(enum nb_hook_type hook, int32_t id);

/* Environment (env.c). Read on every call (cheap; prepare/load paths only). */
enum ncclbpf_verify_mode runtime_env_verify_mode(void); /* STRICT or WARN */
bool runtime_env_jit_enabled(void);
bool runtime_env_rank_local_allowed(void); /* NCCLBPF_RANK_LOCAL=allow */

/* Instruction budget of checked-mode runs (unverified programs must not hang the CLI). */
#define RUNTIME_CHECKED_INSN_BUDGET 100000000ull

/* Logs at most `burst` lines per second per limiter; returns true when this one may print. */
struct runtime_ratelimit {
	_Atomic uint64_t window; /* second of the current window */
	_Atomic uint32_t count;
};
bool runtime_ratelimit_ok(struct runtime_ratelimit *rl, uint32_t burst);

#endif
