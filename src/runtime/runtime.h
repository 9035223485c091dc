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
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maps/epoch_fast.h"
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
struct registry_obj;
struct nb_attachment {
	struct ncclbpf_program *prog;
	const char *label; /* "size_aware.bpf.o:pick" */
	struct registry_obj *owner; /* the registry's reference to the object (NULL: none) */
};

/* Immutable once published (except `gated`). Readers enter a section
 * (runtime_chain_enter), use the chain, and leave it (runtime_chain_exit); a replaced chain
 * and the objects behind it are freed once every section that could have seen it has been
 * left (epoch-based, the maps' mechanism: src/maps/epoch.c), so memory does not grow with
 * the number of reloads (registry.c). */
struct nb_hook_chain {
	enum nb_hook_type hook;
	size_t len;
	uint64_t version;           /* reload generation that published it (1 = first load) */
	/* Activation across ranks (runtime_chain_for): while non-zero, each communicator keeps
	 * `prev` until the activation layer names the collective seq at which it switches. */
	_Atomic uint32_t gated;
	/* one program whose JIT code runs as a plain call (its fast_entry) and reads no agreed
	 * map: that entry, for the tuner's straight path; NULL otherwise. epoch_entry: the
	 * same for JIT code that cannot fault but uses hash/LRU maps (the caller enters the
	 * thread's epoch around the call). Set by registry_publish; immutable. */
	uint64_t (*direct_entry)(uint64_t ctx, uint64_t ctx_size);
	uint64_t (*epoch_entry)(uint64_t ctx, uint64_t ctx_size);
	const struct nb_hook_chain *prev;
	/* registry bookkeeping, under its lock */
	struct nb_hook_chain *retired_next;
	uint64_t retire_tag;
	struct nb_attachment items[];
};

/* FNV-1a (64-bit) over n bytes, continuing from h (0xcbf29ce484222325 to start). */
uint64_t runtime_fnv1a(uint64_t h, const void *p, size_t n);
/* What chain c decides with, as one number (chain_content.c): each program's name, section,
 * instructions and verification mode, its object's map declarations and global data
 * (`.rodata` configuration). 0 for no chain or an empty one. The agreement layer compares
 * it across ranks when they join (docs/agreement.md "Joining"). */
uint64_t runtime_chain_content(const struct nb_hook_chain *c);

/* Loads NCCLBPF_POLICY once per process (later calls return the first result).
 * Objects that fail to open, verify or prepare are skipped with one WARN line carrying
 * the diagnostic; the rest are attached in order. Never fails: returns the number of
 * programs attached (0 = pure pass-through). Thread-safe. */
int runtime_load_policies_from_env(void);
/* Same from an explicit spec string (tests, CLI). Replaces every hook's chain; entries that
 * fail are skipped (init semantics). */
int runtime_load_policies(const char *spec);
/* Drops every chain and object. Only when no hook can be running (process teardown,
 * tests): it does not wait for readers. */
void runtime_unload_policies(void);

/* Hot reload (reload.c): loads `spec` (NCCLBPF_POLICY syntax) all-or-nothing and replaces
 * the chain of `hook`, or of every hook when hook is NB_HOOK_COUNT (hooks the spec has no
 * program for become empty). Load, verify and JIT run on the caller's thread; the swap is
 * one atomic store per hook. Maps of the new objects whose name, type, key/value size,
 * max_entries and flags match a map of a live object are reused (state survives); global
 * data (.rodata/.data/.bss) is never reused. On failure nothing changes and msg holds the
 * full diagnostic. On success msg lists the programs attached and the maps reused / new.
 * Tuner hooks decide for every rank: when a communicator with more than one rank is live
 * and no activation layer takes charge (runtime_activation_ops), ranks would switch at
 * different collectives and could deadlock NCCL, so replacing a tuner or tuner/chunk chain
 * is refused (-EPERM) unless flags has RUNTIME_RELOAD_FORCE.
 * Returns programs attached (> 0), or -EINVAL (bad spec / load / verify failure), -ENOENT
 * (no program for the hook), -EBUSY (an earlier reload is still activating across ranks),
 * -EPERM (see above), -ENOMEM. */
#define RUNTIME_RELOAD_FORCE 0x1u
int runtime_reload(const char *spec, enum nb_hook_type hook, unsigned flags, char *msg,
		   size_t msglen);
/* Empties the chain of `hook` (NB_HOOK_COUNT = every hook), same rules. Returns programs
 * detached. */
int runtime_detach(enum nb_hook_type hook, unsigned flags, char *msg, size_t msglen);
/* Frees retired chains (and objects no chain uses) whose readers have all left. Called by
 * the control thread and after every reload. Returns the number still waiting. */
size_t runtime_reclaim(void);
/* Counters for tests and status: chains published so far, retired chains not yet freed,
 * live objects. */
struct runtime_registry_stats {
	uint64_t version;
	uint64_t reloads, reload_failures;
	size_t retired_pending, objects_live;
};
void runtime_registry_stats(struct runtime_registry_stats *out);

/* ---- the decision path ---- */
/* hidden in the declaration too: one rip-relative load per decision (epoch_fast.h) */
extern _Atomic(struct nb_hook_chain *) runtime_hook_slots[NB_HOOK_COUNT]
	__attribute__((visibility("hidden")));
/* The straight-path view of each slot: the published chain when its direct_entry can be
 * called as is (one JIT program, cannot fault, no epoch, no agreed map) and no gate is
 * open on it; NULL otherwise. A decision path that finds a chain here needs no other
 * check (one load and one test instead of four); it reads it inside its section, like
 * the slot, and the registry retires nothing a reader could find here before the usual
 * grace period (registry.c direct_update). */
extern _Atomic(const struct nb_hook_chain *) runtime_hook_direct[NB_HOOK_COUNT]
	__attribute__((visibility("hidden")));

/* Enters a reader section and returns the hook's chain (NULL when nothing is attached). The
 * chain stays valid until runtime_chain_exit. No lock, no allocation; sections nest. */
static inline const struct nb_hook_chain *runtime_chain_enter(enum nb_hook_type hook)
{
	map_epoch_enter_fast();
	return atomic_load_explicit(&runtime_hook_slots[hook], memory_order_acquire);
}
static inline void runtime_chain_exit(void)
{
	map_epoch_exit_fast();
}

/* Chain to run for collective `seq` of communicator `comm_id`: c itself, unless c is gated
 * (a reload activating across ranks), then c or c->prev as the activation layer decides. One
 * relaxed load when not gated. Call inside the section that returned c. */
const struct nb_hook_chain *runtime_chain_gate(const struct nb_hook_chain *c, uint64_t comm_id,
					       uint64_t seq);
static inline const struct nb_hook_chain *runtime_chain_for(const struct nb_hook_chain *c,
							    uint64_t comm_id, uint64_t seq)
{
	if (c && __builtin_expect(atomic_load_explicit(&c->gated, memory_order_relaxed) != 0, 0))
		return runtime_chain_gate(c, comm_id, seq);
	return c;
}

/* The activation seam for reloads across ranks (the agreement layer plugs in here). Without
 * it, or when begin() returns 0, a reload switches every communicator at its next call.
 *   begin(version, content):  a reload is about to publish `version` (service thread,
 *                    registry lock held: do not call back into the registry). `content` is
 *                    a hash of what is being activated (object bytes, program names, hooks:
 *                    identical on every rank that reloads the same files, whatever their
 *                    paths), 0 for a detach. Return 1 to take charge: the chains are
 *                    published gated, every communicator keeps the old ones until
 *                    activation_seq() names its switch point.
 *   activation_seq(comm_id, version): on the decision path (lock-free, no allocation): the
 *                    collective seq from which comm_id runs `version`; UINT64_MAX while not
 *                    decided or when it will not switch.
 * The layer ends the activation with runtime_activation_done(version, committed):
 * committed = every communicator switched or will at its seq (the old chains are retired);
 * !committed = no communicator used `version` (the old chains are restored, the new ones
 * freed). Until then, later reloads fail with -EBUSY.
 *   poll(version):   optional; the control thread asks every 20 ms while `version` is
 *                    activating: 1 = committed, -1 = abandoned (then it calls
 *                    runtime_activation_done for the layer), 0 = not yet.
 */
struct runtime_activation_ops {
	int (*begin)(uint64_t version, uint64_t content, void *arg);
	uint64_t (*activation_seq)(uint64_t comm_id, uint64_t version, void *arg);
	int (*poll)(uint64_t version, void *arg);
	void *arg;
};
/* The control thread's step: asks ops->poll about the pending version and ends it. */
void runtime_activation_poll(void);
void runtime_set_activation_ops(const struct runtime_activation_ops *ops); /* NULL = none */
int runtime_activation_done(uint64_t version, bool committed);
/* Inside ops->begin of a reload (control thread, registry lock held): the spec being staged
 * and its hook mask, so that the layer can tell other ranks; NULL elsewhere (detach). */
const char *runtime_reload_in_progress(unsigned *hook_mask);
/* ops->begin of a reload adopted from another rank's request: a later local reload of the
 * same content while it activates answers "staged" instead of -EBUSY. */
void runtime_activation_note_adopted(uint64_t version, uint64_t content);
/* Version being activated across ranks, 0 when none. */
uint64_t runtime_activation_pending(void);

/* The chain for a hook without a section: only to test for presence or when no reload can
 * run concurrently (tests, init). */
const struct nb_hook_chain *runtime_hook_chain(enum nb_hook_type hook);

/* Runs every program of the chain in order on the same ctx (each sees the previous one's
 * writes). A program that faults is counted (runtime_fault_count) and its writes are not
 * rolled back by this function: callers that need "fault = keep NCCL's choice" snapshot
 * the outputs themselves. Returns the number of programs that faulted. Call inside a
 * section (runtime_chain_enter). */
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
/* Calls fn for every pinned map (control plane: maps, dump). */
void runtime_pinned_foreach(void (*fn)(struct nb_map *m, void *arg), void *arg);
/* The spec of a map the plugin pins itself ("ncclbpf_latency", "ncclbpf_sample_ctl"), or
 * NULL. The profiler creates them from these specs. */
#define RUNTIME_SAMPLE_CTL_ENTRIES 65 /* the profiler's size bands (PROFILER_BANDS) */
const struct nb_map_spec *runtime_builtin_pinned(const char *name);
/* true when the process already has a pinned map of that name: its spec (name pointing
 * into the registry, valid until exit) and who declared it. */
bool runtime_pinned_find(const char *name, struct nb_map_spec *spec, char *owner,
			 size_t ownerlen);
/* true (err filled: both declarations, every attribute) when `want` may not bind to the
 * pinned map `have`: every attribute must match. */
bool runtime_pinned_conflict(const struct nb_map_spec *have, const char *have_owner,
			     const struct nb_map_spec *want, const char *want_owner, char *err,
			     size_t errlen);

/* Finds a map by name in the attached policies (first match), or NULL. The pointer is
 * valid until the next reload: use it as a presence test, or with no reload running. */
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
	/* The decision path's fast case, first so it shares one cache line. JIT code of a hook
	 * with a fixed context size that can neither fault nor needs a map epoch has
	 * fast_store (ncclbpf_program_run tail-calls it: it stores r0 itself and returns 0)
	 * and fast_entry (the same code returning r0: runtime_program_run_direct). fast: JIT
	 * code of such a hook that may fault (a fault record per call). All NULL otherwise. */
	vm_jit_store_fn fast_store;
	uint32_t fast_ctx_size;
	vm_jit_fn fast_entry;
	vm_jit_run_fn fast;
	bool needs_epoch;               /* references hash/LRU maps: run inside map_epoch */
	bool uses_agreed;               /* references an agreed map (its reads need a binding) */
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
 * sets prog->needs_epoch. The references were checked by runtime_check_program. Returns 0
 * or -ENOMEM with err. */
int runtime_link_program(struct ncclbpf_program *prog, char *err, size_t errlen);

/* ---- load checks (load_check.c): everything the runtime refuses at load, in one place.
 * ncclbpf_object_open_* and ncclbpf_program_prepare call them before they create or link
 * anything; `ncclbpf verify` calls them on a model of one process (struct runtime_load_sim)
 * so that it accepts exactly what the runtime loads. Messages end in a code: [E-MAP] for a
 * map the runtime cannot create, [E-MAP-SHARED] for a pinned map that conflicts with
 * another declaration, [E-BAD-INSN] / [E-BAD-JUMP] for malformed instructions. */
struct nb_verifier_opts;
struct nb_verifier_diag;
struct nb_verifier_stats;

/* What loading objects into one process leaves behind for the next object: pinned maps
 * (they live until exit) and agreed-map slots taken by objects that stay loaded. */
struct runtime_load_sim;
struct runtime_load_sim *runtime_load_sim_new(void);
void runtime_load_sim_free(struct runtime_load_sim *sim);
/* The object stays loaded (some program of it attached): its own agreed maps keep their
 * slots. */
void runtime_load_sim_hold(struct runtime_load_sim *sim, const struct nb_object *nbo);

/* The spec the runtime creates for a map declaration (.rodata is read-only to programs). */
void runtime_map_spec_of(const struct nb_map_def *d, struct nb_map_spec *spec);
/* Every map of the object can be created or bound in this process (sim NULL: the live
 * process; else the model, which then records the object's pinned maps): each declaration
 * passes map_spec_check, pinning is 0 or 1 (LIBBPF_PIN_BY_NAME), a pinned map matches the
 * one of that name declared before (by an object or the plugin), and enough agreed-map
 * slots are free. Nothing is created. 0, or a negative errno with err. */
int runtime_check_maps(const struct nb_object *nbo, const char *owner,
		       struct runtime_load_sim *sim, char *err, size_t errlen);
/* Program checks of ncclbpf_program_prepare for hook h: instruction format (isa_validate),
 * the map and function references the link step resolves, then the verifier when vopts is
 * non-NULL. 0; -EACCES when the verifier rejects it (diag filled, err formatted); another
 * negative errno with err. */
int runtime_check_program(const struct nb_object *nbo, const struct nb_program *p,
			  const struct nb_hook_desc *h, const struct nb_verifier_opts *vopts,
			  struct nb_verifier_diag *diag, struct nb_verifier_stats *stats,
			  char *err, size_t errlen);

/* ncclbpf_program_disasm on the loader's program and map declarations: inspection that
 * needs no maps created (`ncclbpf disasm`). */
int runtime_disasm_loader_program(const struct nb_program *p, const struct nb_map_def *maps,
				  size_t map_cnt, char *buf, size_t buflen);

/* The decision path of a caller that passes its own context of the hook's size (the tuner
 * shim): JIT code that can neither fault nor needs an epoch, called directly (no exported
 * call, no PLT, no checks it already knows hold). Anything else goes to
 * ncclbpf_program_run. Same results and error reporting as ncclbpf_program_run. */
static inline int runtime_program_run_direct(const struct ncclbpf_program *prog, void *ctx,
					     size_t ctx_size, uint64_t *ret, char *err,
					     size_t errlen)
{
	if (__builtin_expect(prog->fast_entry != NULL && ctx_size == prog->fast_ctx_size, 1)) {
		*ret = prog->fast_entry((uint64_t)(uintptr_t)ctx, ctx_size);
		return 0;
	}
	return ncclbpf_program_run(prog, ctx, ctx_size, ret, err, errlen);
}

/* How ncclbpf_program_run runs a prepared program (`ncclbpf verify --stats`, tests). */
enum runtime_run_path {
	RUNTIME_RUN_UNPREPARED = 0,
	RUNTIME_RUN_JIT_DIRECT,     /* tail call of the store entry: no checks beyond the call's */
	RUNTIME_RUN_JIT_FAULT_REC,  /* JIT code that may fault: a fault record per call */
	RUNTIME_RUN_JIT_EPOCH,      /* JIT code inside a map epoch (hash/LRU maps) */
	RUNTIME_RUN_JIT_RAW_MEMORY, /* JIT code of a raw-memory hook (size checks per call) */
	RUNTIME_RUN_INTERPRETER,
	RUNTIME_RUN_CHECKED,        /* checked interpreter (unverified or asked for) */
};
enum runtime_run_path runtime_program_run_path(const struct ncclbpf_program *prog);
const char *runtime_run_path_name(enum runtime_run_path path);

/* Frees a program's prepared state (linked copy, JIT image); it must not be running. */
void runtime_program_release(struct ncclbpf_program *prog);

/* Helper implementation for a hook, or NULL (helpers.c). */
vm_helper_fn runtime_helper_impl(enum nb_hook_type hook, int32_t id);

/* Environment (env.c). Read on every call (cheap; prepare/load paths only). */
enum ncclbpf_verify_mode runtime_env_verify_mode(void); /* STRICT or WARN */
bool runtime_env_jit_enabled(void);
bool runtime_env_rank_local_allowed(void); /* NCCLBPF_RANK_LOCAL=allow */
/* A boolean NCCLBPF_* variable: 1/0, on/off, yes/no, true/false (any case); unset or empty:
 * def; anything else: def and one WARN per variable saying so. */
bool runtime_env_bool(const char *name, bool def);
/* The same spellings without a variable or a WARN: 1 true, 0 false, -1 neither. */
int runtime_env_parse_bool(const char *value);

/* Append-only record files (logfile.c): created with O_EXCL | O_NOFOLLOW (never following
 * or truncating what is there; NAME-1 ... NAME-15 tried next), written whole records at a
 * time, never killing the process (RLIMIT_FSIZE checked, SIGXFSZ blocked on the writing
 * thread only), and records (one line each, ending in a newline) that could not be
 * written are counted and marked in the file
 * with the caller's marker record (room kept for it). One writer thread at a time. */
typedef int (*runtime_logfile_marker_fn)(char *buf, size_t len, uint64_t lost,
					 const char *reason);
struct runtime_logfile {
	int fd;
	char path[4352];
	uint64_t off;            /* end of the whole records written */
	uint64_t reserved_end;   /* preallocated (fallocate KEEP_SIZE) up to here */
	bool can_reserve;
	bool marked_since_ok;    /* a marker went out since the last record written */
	int last_err;            /* cause of the current loss (-errno), 0 none */
	uint64_t lost;           /* records lost in all */
	uint64_t unmarked;       /* of those, not yet in a marker */
	int unmarked_err;        /* the cause the marker names (-errno; kept after a success) */
	char *buf;               /* records waiting for the next flush */
	size_t len, cap;
	uint64_t records;        /* in buf */
	runtime_logfile_marker_fn marker;
};
/* Creates DIR/BASE+EXT (or BASE-N+EXT). 0 (err non-empty when another name was taken: the
 * caller logs it) or a negative errno with err. */
int runtime_logfile_create(struct runtime_logfile *lf, const char *dir, const char *base,
			   const char *ext, runtime_logfile_marker_fn marker, char *err,
			   size_t errlen);
/* Queues one whole record (flushing first when the buffer is full). */
int runtime_logfile_append(struct runtime_logfile *lf, const char *rec, size_t n);
/* Writes the queued records; final: the last chance for a marker. 0 or the write error. */
int runtime_logfile_flush(struct runtime_logfile *lf, bool final);
void runtime_logfile_close(struct runtime_logfile *lf);
/* NCCLBPF_MAX_INSNS for hook h (0 = the hook's default limit) */
uint64_t runtime_env_max_insns(const struct nb_hook_desc *h);
/* Parses a NCCLBPF_MAX_INSNS / --max-insns value (N, or HOOK=N[,HOOK=N...]) for hook h:
 * *out = its limit, 0 when the value names other hooks only. -EINVAL: malformed. */
int runtime_parse_max_insns(const char *v, const struct nb_hook_desc *h, uint64_t *out);

/* Instruction budget of checked-mode runs (unverified programs must not hang the CLI). */
#define RUNTIME_CHECKED_INSN_BUDGET 100000000ull

/* Logs at most `burst` lines per second per limiter; returns true when this one may print. */
struct runtime_ratelimit {
	_Atomic uint64_t window; /* second of the current window */
	_Atomic uint32_t count;
};
bool runtime_ratelimit_ok(struct runtime_ratelimit *rl, uint32_t burst);

#endif
