/* ncclbpf public API: load eBPF objects, verify and prepare their programs for a hook,
 * run them, and access their maps. Conventions follow libbpf: functions return 0 or a
 * negative errno; where a caller needs to know why, they fill an error buffer.
 *
 * Thread safety: objects are opened/closed by one thread; prepared programs may be run
 * from any number of threads concurrently; map accessors are thread-safe.
 */
#ifndef NCCLBPF_NCCLBPF_H
#define NCCLBPF_NCCLBPF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NCCLBPF_API __attribute__((visibility("default")))

struct ncclbpf_object;
struct ncclbpf_program;
struct ncclbpf_map;

enum ncclbpf_hook {
	NCCLBPF_HOOK_CONFORMANCE = 0,
	NCCLBPF_HOOK_TUNER = 1,
	NCCLBPF_HOOK_TUNER_CHUNK = 2,
	NCCLBPF_HOOK_PROFILER = 3,
	NCCLBPF_HOOK_NET = 4,
	NCCLBPF_HOOK_ENV = 5,
	NCCLBPF_HOOK_TUNER_INIT = 6, /* SEC("tuner/init"): NCCL's tuning constants, once per comm */
	NCCLBPF_HOOK_AUTO = -1, /* from the program's section name */
};

enum ncclbpf_exec_mode {
	NCCLBPF_EXEC_DEFAULT = 0, /* JIT when available and NCCLBPF_JIT != 0, else interpreter */
	NCCLBPF_EXEC_INTERPRET,
	NCCLBPF_EXEC_JIT,         /* fail if the JIT cannot compile */
	NCCLBPF_EXEC_CHECKED,     /* interpreter with every memory access checked */
};

enum ncclbpf_verify_mode {
	NCCLBPF_VERIFY_DEFAULT = 0, /* strict unless NCCLBPF_VERIFY=warn */
	NCCLBPF_VERIFY_STRICT,
	NCCLBPF_VERIFY_WARN,        /* log the rejection, load anyway (development only) */
	NCCLBPF_VERIFY_OFF,         /* no verification: conformance runs only */
};

/* ---- objects ---- */
NCCLBPF_API int ncclbpf_object_open_file(const char *path, struct ncclbpf_object **obj,
					 char *err, size_t errlen);
NCCLBPF_API int ncclbpf_object_open_mem(const void *buf, size_t size, const char *name,
					struct ncclbpf_object **obj, char *err, size_t errlen);
/* Frees the object, its programs and maps. No program of it may be running. */
NCCLBPF_API void ncclbpf_object_close(struct ncclbpf_object *obj);
NCCLBPF_API const char *ncclbpf_object_name(const struct ncclbpf_object *obj);
NCCLBPF_API const char *ncclbpf_object_license(const struct ncclbpf_object *obj);
NCCLBPF_API bool ncclbpf_object_has_btf(const struct ncclbpf_object *obj);

NCCLBPF_API size_t ncclbpf_object_program_count(const struct ncclbpf_object *obj);
NCCLBPF_API struct ncclbpf_program *ncclbpf_object_program(struct ncclbpf_object *obj, size_t i);
NCCLBPF_API struct ncclbpf_program *ncclbpf_object_find_program(struct ncclbpf_object *obj,
								const char *name);
NCCLBPF_API size_t ncclbpf_object_map_count(const struct ncclbpf_object *obj);
NCCLBPF_API struct ncclbpf_map *ncclbpf_object_map(struct ncclbpf_object *obj, size_t i);
NCCLBPF_API struct ncclbpf_map *ncclbpf_object_find_map(struct ncclbpf_object *obj,
							const char *name);

/* ---- programs ---- */
NCCLBPF_API const char *ncclbpf_program_name(const struct ncclbpf_program *prog);
NCCLBPF_API const char *ncclbpf_program_section(const struct ncclbpf_program *prog);
NCCLBPF_API size_t ncclbpf_program_insn_count(const struct ncclbpf_program *prog);
/* Hook named by the section, or NCCLBPF_HOOK_AUTO if the section names none. */
NCCLBPF_API enum ncclbpf_hook ncclbpf_program_section_hook(const struct ncclbpf_program *prog);

struct ncclbpf_prepare_opts {
	size_t sz;                         /* sizeof(struct ncclbpf_prepare_opts) */
	enum ncclbpf_exec_mode exec_mode;
	enum ncclbpf_verify_mode verify_mode;
	uint64_t verify_budget;            /* 0 = hook default */
};

/* Verifies the program for the hook and prepares it to run (links map references, JIT-
 * compiles unless the interpreter is selected). On rejection returns -EACCES and err holds
 * the compiler-style diagnostic. A JIT failure falls back to the interpreter (and says so
 * in err, returning 0) unless NCCLBPF_EXEC_JIT was asked for. */
NCCLBPF_API int ncclbpf_program_prepare(struct ncclbpf_program *prog, enum ncclbpf_hook hook,
					const struct ncclbpf_prepare_opts *opts, char *err,
					size_t errlen);
NCCLBPF_API bool ncclbpf_program_is_jitted(const struct ncclbpf_program *prog);

/* Runs a prepared program with r1 = ctx (r2 = ctx_size). ctx_size must equal the hook's
 * context size (the conformance hook takes any size). Returns 0 and *ret = r0, or
 * -EFAULT when the program faulted (checked mode, or a helper failure), with err filled. */
NCCLBPF_API int ncclbpf_program_run(const struct ncclbpf_program *prog, void *ctx,
				    size_t ctx_size, uint64_t *ret, char *err, size_t errlen);

/* Disassembly of the program, one instruction per line, llvm-objdump syntax, with
 * "; <source line>" lines interleaved when line info is present. Returns the length that
 * would have been written (snprintf semantics) or a negative errno. */
NCCLBPF_API int ncclbpf_program_disasm(const struct ncclbpf_program *prog, char *buf,
				       size_t buflen);

/* ---- maps ---- */
NCCLBPF_API const char *ncclbpf_map_name(const struct ncclbpf_map *map);
NCCLBPF_API uint32_t ncclbpf_map_type(const struct ncclbpf_map *map);
NCCLBPF_API uint32_t ncclbpf_map_key_size(const struct ncclbpf_map *map);
NCCLBPF_API uint32_t ncclbpf_map_value_size(const struct ncclbpf_map *map);
NCCLBPF_API uint32_t ncclbpf_map_max_entries(const struct ncclbpf_map *map);
/* Copies the value out (the host never holds a pointer into the map). -ENOENT if absent. */
NCCLBPF_API int ncclbpf_map_lookup(struct ncclbpf_map *map, const void *key, void *value);
NCCLBPF_API int ncclbpf_map_update(struct ncclbpf_map *map, const void *key, const void *value,
				   uint64_t flags);
NCCLBPF_API int ncclbpf_map_delete(struct ncclbpf_map *map, const void *key);
NCCLBPF_API int ncclbpf_map_get_next_key(struct ncclbpf_map *map, const void *key,
					 void *next_key);

/* Name of a hook ("tuner", ...) and back. */
NCCLBPF_API const char *ncclbpf_hook_name(enum ncclbpf_hook hook);
NCCLBPF_API int ncclbpf_hook_from_name(const char *name, enum ncclbpf_hook *hook);

/* ---- tuner plugin ---- */
/* Decisions the tuner plugin could not apply as a policy asked (a fault, an algorithm or
 * protocol out of range or marked unavailable by NCCL, a clamped channel count, ...),
 * counted per reason in this process: what `ncclbpf run` reports per collective. Copies up
 * to n counts into counts (may be NULL when n is 0) and returns the number of reasons;
 * ncclbpf_tuner_issue_name(i) names reason i ("algorithm/protocol marked unavailable by
 * NCCL"), NULL past the last. Reasons are only ever appended. */
NCCLBPF_API size_t ncclbpf_tuner_issue_counts(uint64_t *counts, size_t n);
NCCLBPF_API const char *ncclbpf_tuner_issue_name(size_t i);

#ifdef __cplusplus
}
#endif
#endif
