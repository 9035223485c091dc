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
 * acquire semantics; replaced chains are freed only after readers drained. */
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
 * name if its type/key/value sizes match the spec (max_entries of the first creator wins),
 * creates it otherwise; NULL with err filled when an existing map is incompatible.
 * Objects opened later bind their pinned declarations to these maps. Thread-safe. */
struct nb_map_spec;
struct nb_map;
struct nb_map *runtime_pinned_map(const struct nb_map_spec *spec, char *err, size_t errlen);

/* Finds a map by name in the loaded policies (first match), for the plugin's built-in
 * maps (e.g. "ncclbpf_latency"), or NULL. */
struct ncclbpf_map *runtime_find_map(const char *name);

#endif
