/* The control plane: one Unix stream socket per process (<pid>.sock in the control
 * directory), served by one thread that does all the work (load, verify, JIT, map access),
 * never NCCL's threads. `ncclbpf ctl` is its client. docs/control.md has the user view.
 *
 *   NCCLBPF_CONTROL      off = no socket (default: on)
 *   NCCLBPF_CONTROL_DIR  directory (default $XDG_RUNTIME_DIR/ncclbpf, else
 *                        $TMPDIR/ncclbpf-<uid>, /tmp/ncclbpf-<uid> without TMPDIR)
 *   NCCLBPF_WATCH        1 = reload the policy files when they change (same path as
 *                        `ctl reload`)
 */
#ifndef NCCLBPF_RUNTIME_CONTROL_H
#define NCCLBPF_RUNTIME_CONTROL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/decision_src.h"

/* Plugin init / finalize: the first user starts the socket and its thread, the last one
 * stops it and removes the socket. Never fails NCCL: problems are logged once. */
void runtime_control_acquire(void);
void runtime_control_release(void);
/* A function the service thread runs at each wake (requests, timeouts, kicks); kick wakes
 * it from any thread without blocking (one non-blocking write; for NCCL's threads too). */
void runtime_control_set_tick(void (*fn)(void));
void runtime_control_kick(void);
/* The socket path of this process, or "" when none is served. */
const char *runtime_control_path(void);

/* The control directory (environment as above). Returns 0 or -ENAMETOOLONG. A shared
 * sticky directory (mode 1777, as /tmp) given as NCCLBPF_CONTROL_DIR stands for its
 * subdirectory ncclbpf-<uid>. */
int runtime_control_dir(char *buf, size_t len);
/* The same for a directory given explicitly (`ctl --dir`; NULL or "": the default). */
int runtime_control_dir_resolve(const char *configured, char *buf, size_t len);

/* Per-communicator counters the plugin publishes for `ctl status`. The owner is the only
 * writer (NCCL serializes a communicator's calls): plain relaxed load+store increments. */
struct runtime_comm_stats {
	struct runtime_comm_stats *next, *prev; /* under the control plane's lock */
	const char *kind;                       /* "tuner" */
	uint64_t comm_id;
	uint32_t n_ranks, n_nodes, abi_version;
	_Atomic uint64_t calls, changed, faults, clamps;
	/* version of the chain the last general-path decision ran, and `calls` right after
	 * it. Straight-path decisions store neither (nothing but what they must on the
	 * decision path): they run the active chain, which `ctl status` reports for a
	 * communicator whose decisions since general_mark were straight. */
	_Atomic uint64_t chain_version, general_mark;
	/* decisions that took the tuner's general path, not the straight line (tuner_core.c) */
	_Atomic uint64_t general;
	/* decision provenance (decision_src.h): general-path decisions by source, and how many
	 * of them also counted `changed`. Straight-path decisions are not counted one by one
	 * (a store each): they are the policy's when they changed something, else keep_src's
	 * (runtime_comm_sources adds them) */
	_Atomic uint64_t src[NB_DSRC_COUNT];
	_Atomic uint64_t src_changed;
	uint8_t keep_src; /* the source of a decision that keeps NCCL's choice (set at init) */
};
/* Decisions per source, straight-path ones included (out[NB_DSRC_COUNT]). */
void runtime_comm_sources(const struct runtime_comm_stats *s, uint64_t *out);
static inline void runtime_stat_inc(_Atomic uint64_t *c)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}
/* Registers / unregisters (and acquires / releases the control plane). */
void runtime_comm_register(struct runtime_comm_stats *s);
void runtime_comm_unregister(struct runtime_comm_stats *s);

/* Whether a registered communicator has more than one rank (reload safety). */
bool runtime_comm_multi_rank(void);

/* Status sections contributed by other modules (profiler, agreement): fn emits key/value
 * pairs through the emitter, on the control thread. */
struct runtime_status_emit {
	void (*u64)(struct runtime_status_emit *e, const char *key, uint64_t v);
	void (*str)(struct runtime_status_emit *e, const char *key, const char *v);
};
void runtime_status_provider(const char *section, void (*fn)(struct runtime_status_emit *e));

/* Agreed maps (`ctl dump`): what each communicator's tuner reads is the version the
 * agreement layer published, not the map's own storage. The agree module provides it. */
struct runtime_agreed_view {
	uint64_t comm_id;
	uint64_t version;        /* 0: nothing published yet (all zeros) */
	uint64_t activation_seq; /* the collective it is active from (S_v) */
	uint64_t tuner_seq;      /* the communicator's last collective */
	bool fallback;           /* fell back: NCCL's defaults from fallback_seq on */
	uint64_t fallback_seq;
	const uint8_t *data;     /* max_entries x stride bytes (valid during the callback) */
	uint32_t stride;
};
typedef void (*runtime_agreed_view_cb)(const struct runtime_agreed_view *v, void *arg);
/* fn(slot, generation, cb, arg) calls cb for every communicator that reads the agreed map
 * in that slot (generation: map_agreed_desc's, so a reused slot is not mistaken for it). */
void runtime_agreed_view_provider(void (*fn)(uint32_t slot, uint64_t generation,
					     runtime_agreed_view_cb cb, void *arg));

#endif

#ifndef NCCLBPF_RUNTIME_CONTROL_CLIENT
#define NCCLBPF_RUNTIME_CONTROL_CLIENT
/* Client side (control_client.c, used by `ncclbpf ctl` and the tests): sends one request
 * to the socket at `path` and reads the reply. Returns 0 with *status (the reply's: 0 or a
 * negative errno) and *out (malloc'd, NUL-terminated text); -ECONNREFUSED / -ENOENT when
 * nothing listens there (a stale socket); another negative errno with err otherwise. */
int runtime_control_call(const char *path, unsigned op, unsigned flags, unsigned argc,
			 const char *const *argv, int timeout_ms, int *status, char **out,
			 size_t *outlen, char *err, size_t errlen);
#endif
