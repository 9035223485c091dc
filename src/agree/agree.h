/* agree: rank agreement per communicator (docs/agreement.md).
 *
 * The ranks of a communicator (identified by NCCL's commHash) form a group over TCP; its
 * leader is the communicator's rank 0. Agreed maps (NCCLBPF_F_AGREED, policy.h) are
 * reduced by the leader at the end of every epoch of K collectives and published as
 * version v, active from comm_seq S_v = (v + 1) * K on every rank. One service thread
 * per process (listener, connections, shipping, decision-log writer); the NCCL threads
 * never block on it in steady state.
 *
 * Configuration (README.md):
 *   NCCLBPF_AGREE         host:port of the rendezvous listener | off
 *                         (unset: MASTER_ADDR : MASTER_PORT + NCCLBPF_AGREE_PORT_OFFSET)
 *   NCCLBPF_AGREE_SECRET  the job's secret: every connection proves it (agree_auth.h);
 *                         without it only this user's processes on this host are accepted
 *   NCCLBPF_AGREE_WAIT_MS bound of a rank's wait for a version at its activation (5000)
 *   NCCLBPF_DECISION_LOG  directory for decisions-<host>-<pid>.jsonl
 */
#ifndef NCCLBPF_AGREE_AGREE_H
#define NCCLBPF_AGREE_AGREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGREE_PORT_OFFSET 1000 /* default rendezvous port: MASTER_PORT + 1000 */
#define AGREE_DEFAULT_WAIT_MS 5000
#define AGREE_MAX_MAPS 32      /* agreed maps per process (all loaded policies) */

struct agree_comm; /* one per communicator in this process */

/* What the tuner does for one collective. */
enum agree_verdict {
	AGREE_RUN = 0,      /* run the chain; agreed maps read the version active at seq */
	AGREE_FALLBACK = 1, /* agreement is impossible for this communicator: keep NCCL's
			     * defaults (every rank reaches this at the same seq) */
};

/* ---- communicator lifecycle (plugin shims; never fail NCCL) ---- */

/* The tuner's init: returns the communicator's state (created on first use, shared with the
 * profiler by comm_id), or NULL when comm_id is 0 (tuner ABI v3/v4) or out of memory: the
 * tuner then reads all-zero agreed maps (version 0) forever, as every rank does. */
struct agree_comm *agree_comm_tuner_open(uint64_t comm_id, uint32_t n_ranks);
/* The profiler's init knows the rank: the group can form. */
void agree_comm_profiler_open(uint64_t comm_id, int rank, int n_ranks);
/* Finalize of either plugin; the state is freed when both sides closed. A communicator
 * destroyed mid-epoch leaves the group cleanly (its connection is closed). */
void agree_comm_tuner_close(struct agree_comm *ac);
void agree_comm_profiler_close(uint64_t comm_id);

/* ---- tuner decision path (lock-free, allocation-free) ---- */

/* Before running the chain for collective `seq` (ctx->comm_seq, counted by the tuner shim:
 * tuner_core.c tuner_next_seq): activates the version due at seq (waiting
 * bounded and yielding if it has not arrived) and binds this thread's agreed-map lookups to
 * it. ac NULL binds the all-zero version 0. Pair with agree_tuner_end. */
enum agree_verdict agree_tuner_begin(struct agree_comm *ac, uint64_t seq);
void agree_tuner_end(void);
/* True once agree_tuner_begin can do nothing for this communicator any more but bind its
 * read view and return AGREE_RUN, and agree_log_decision nothing at all: its first
 * collective has run without forming a group (agreement off, one rank, no rank known, or
 * no agreed map then) and no decision log is kept; ac NULL (binds the zero view). Never
 * becomes false again. The tuner's straight path then skips begin, end and the log for
 * programs that use no agreed map (tuner_core.c). */
bool agree_tuner_passive(const struct agree_comm *ac);

/* ---- profiler side: writes to agreed maps go to this communicator's contribution ---- */
void agree_profiler_begin(uint64_t comm_id);
void agree_profiler_end(void);

/* ---- decision log (NCCLBPF_DECISION_LOG) ---- */
bool agree_decision_log_enabled(void);
/* Records the decision the tuner chain applied (algo/proto -1 = NCCL's, channels 0 =
 * unchanged), who made it (src: enum nb_dsrc, runtime/decision_src.h) and the policy id
 * when a policy did (0 otherwise). Appends to a per-communicator ring; the service thread
 * formats and writes. */
void agree_log_decision(struct agree_comm *ac, uint64_t seq, int coll, uint64_t n_bytes,
			int algo, int proto, int n_channels, unsigned src, uint32_t policy);

/* The application's per-call tag (ncclCollConfig_t.userProfilerTag, NCCL 2.31+) for the
 * decision log. NCCL reports it only to the profiler (v7), at the collective's API call, on
 * the thread that then ends the group and calls the tuner: the profiler notes each group's
 * start and each CollApi event here, and a decision on that thread takes the tag when the
 * group held exactly one collective of its communicator (grouped calls share tuner calls
 * before 2.31, so a tag would be a guess there: none is logged). Thread-local, no lock. */
void agree_log_call_group(void);
void agree_log_call_tag(uint64_t comm_id, uint64_t tag);

/* ---- host API ---- */
/* Writes a rank-local contribution of this process to an agreed map of a communicator. */
int agree_contribute(uint64_t comm_id, const char *map_name, uint32_t key, const void *value,
		     size_t value_size);
/* Stops the service thread and flushes logs (tests; also at process exit). */
void agree_shutdown(void);

/* ---- statistics (tests, benchmarks, ncclbpf ctl later) ---- */
struct agree_stats {
	uint64_t versions_active;  /* versions this process activated (all comms) */
	uint64_t waits;            /* activations that had to wait */
	uint64_t wait_ns_max;      /* longest wait */
	uint64_t fallbacks;        /* communicators that fell back */
	uint64_t bytes_sent, bytes_received;
	uint64_t msgs_refused;     /* bad token, malformed, wrong version */
	uint64_t leader_cpu_ns;    /* service-thread CPU spent reducing/publishing as leader */
	uint64_t service_cpu_ns;   /* service-thread CPU in total (I/O included) */
	uint64_t epochs_reduced;   /* as leader */
	uint64_t decisions_logged, decisions_dropped;
	uint64_t conns_refused;    /* connections closed unauthenticated, expired or over a limit */
};
void agree_get_stats(struct agree_stats *out);
/* Passes of the service thread's loop so far (a thread that spins shows here). */
uint64_t agree_service_passes(void);

#endif
