/* agree module internals: communicator state shared by the tuner path (agree_core.c), the
 * service thread (agree_service.c, agree_group.c) and the decision log (decision_log.c).
 *
 * Ownership: fields marked [T] belong to the communicator's tuner thread, [S] to the
 * service thread, [A] are atomics both use. Versions are immutable once linked into a
 * stream's list; the service frees a version only after the tuner published (active) a
 * newer one, and the tuner reads only its active version and the ones after it. */
#ifndef NCCLBPF_AGREE_INTERNAL_H
#define NCCLBPF_AGREE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "agree/agree.h"
#include "agree/agree_auth.h"
#include "agree/agree_wire.h"
#include "maps/map.h"

/* gate bit: the version after the committed one never commits here (S_{c+1} >= F) */
#define AGREE_GATE_FALLBACK (1ull << 63)
#define AGREE_NO_FALLBACK UINT64_MAX
#define AGREE_MAX_COMMS 256
#define AGREE_MAX_COMMS_STR "256"
/* bound of a communicator destroy's wait for the service thread to say BYE */
#define AGREE_DETACH_WAIT_MS 300

struct agree_version {
	uint64_t number;                       /* v >= 1 */
	uint64_t activation;                   /* S_v = (v + 1) * K */
	struct agree_version *_Atomic next;    /* newer committed version */
	uint8_t data[];                        /* stride * max_entries bytes */
};

struct agree_peer; /* a follower as the leader sees it (agree_group.c) */

/* A rank's contribution as the leader keeps it: the non-zero entries, sorted by index. */
struct agree_sparse {
	uint32_t n, cap;
	uint32_t *idx;
	uint8_t *vals; /* n x value_size */
};

struct agree_stream {
	struct nb_map_agreed_desc desc;
	uint32_t slot;                         /* map slot (binding index) */
	size_t bytes;                          /* stride * max_entries */
	uint64_t k;                            /* epoch length */
	uint8_t *contrib;                      /* local contribution (profiler writes) */
	/* [T] */
	struct agree_version *active;          /* NULL = version 0 (zeros) */
	/* [A] */
	_Atomic uint64_t active_number;        /* tuner's active version number */
	_Atomic uint64_t gate;                 /* committed version c | AGREE_GATE_FALLBACK */
	_Atomic uint64_t closed_epoch;         /* epochs 0..closed-1 ended on this rank */
	struct agree_version *_Atomic first;   /* oldest committed version still allocated */
	/* [S] */
	struct agree_version *last;            /* newest committed version (append point) */
	uint8_t *shipped;                      /* contribution as last shipped (delta base) */
	uint8_t *snap;                         /* scratch: snapshot of contrib */
	uint64_t shipped_epochs;               /* CONTRIB sent for epochs < this */
	uint8_t *latest;                       /* newest version's data (received or produced) */
	uint64_t latest_number;
	/* [S] follower: versions received, not yet committed */
	struct agree_version **pending;        /* ring by number % pending_cap */
	uint32_t pending_cap;
	/* [S] leader */
	struct agree_sparse *rank_views;       /* n_ranks: latest contribution per rank (sparse) */
	uint32_t *reduce_cnt;                  /* max_entries: contributors per entry (scratch) */
	uint64_t *rank_epochs;                 /* epochs received per rank */
	uint64_t *rank_acked;                  /* highest version acked per rank */
	uint32_t *rank_done;                   /* tree: a relay child's members done at
						* rank_epochs (its PARTIAL's count) */
	uint8_t *part;                         /* tree: partial scratch (value + count) */
	/* [S] relay */
	uint8_t *part_shipped;                 /* the partial as last shipped (delta base) */
	uint64_t part_full_sent;               /* (full, done) last shipped */
	uint32_t part_done_sent;
	bool part_sent_once;
	uint64_t part_last_ns;                 /* when the last PARTIAL went up */
	uint64_t acked_up;                     /* highest version ACKed to the leader */
	uint64_t produced;                     /* versions 1..produced sent as DATA */
	uint64_t first_arrival_ns;             /* when epoch `produced` first got a contribution */
	struct agree_version **produced_ring;  /* produced but uncommitted versions */
};

/* RANKLESS: a member whose rank NCCL never told (ncclbpf's profiler plugin not loaded on
 * it): it cannot join, falls back at S_1 and only announces itself to the leader so that
 * the others fall back there too without waiting out the bound (docs/agreement.md). */
enum agree_role { AGREE_ROLE_NONE, AGREE_ROLE_LEADER, AGREE_ROLE_FOLLOWER, AGREE_ROLE_RANKLESS };

/* The join barrier (docs/agreement.md "Joining"): no rank runs the policy for collective
 * 0 before the leader saw every rank join with the same configuration (READY); a rank
 * that cannot join, or differs, makes every rank fall back from collective 0. */
enum agree_ready { AGREE_READY_PENDING = 0, AGREE_READY_YES = 1, AGREE_READY_FAILED = 2 };

struct agree_comm {
	uint64_t comm_id;
	uint32_t n_ranks;
	_Atomic int rank;                      /* -1 until the profiler tells */
	_Atomic int refs;                      /* tuner + profiler + service */
	bool tuner_open, profiler_open;        /* under the registry lock */
	bool tuner_seen;                       /* a tuner ever opened it */
	bool detached;                         /* its group was left (or never existed) */
	/* [T] */
	uint64_t next_event;                   /* seq at which the slow path must run */
	bool started;                          /* first collective seen */
	bool tuner_fell_back;                  /* the slow path returned FALLBACK: for good */
	struct nb_map_binding read_bind;
	/* [A] */
	_Atomic bool streams_ready;            /* streams[] set up (by the tuner at seq 0) */
	bool grouped;                          /* agreement runs (set before streams_ready) */
	bool rankless;                         /* a member without a rank (set with grouped) */
	bool unlisted;                         /* the registry was full: tuner-only state */
	_Atomic bool multi_rank;               /* two ranks of it in this process (set under the
	                                          registry lock, read at the first collective) */
	_Atomic uint64_t fallback_seq;         /* AGREE_NO_FALLBACK or F */
	_Atomic int ready;                     /* enum agree_ready: the join barrier */
	/* the tuner waits without a verdict (agree_core.c wait_for): at want_seq, phase 1 =
	 * ask the leader, 2 = decide (the service thread does both, after reading its input) */
	_Atomic uint64_t want_seq;
	_Atomic int want_phase;
	struct agree_fingerprint fp;           /* this rank's configuration (set with streams) */
	_Atomic uint32_t why, why_rank, why_detail; /* the first fallback's reason (announced) */
	_Atomic bool fallback_logged;
	_Atomic bool fallback_orderly;        /* the first fallback: a communicator destroyed */
	_Atomic bool closing;                  /* tuner closed: the service says BYE */
	_Atomic uint64_t tuner_seq;            /* last seq the tuner saw (diagnostics) */
	struct nb_map_binding write_bind;      /* immutable once streams_ready */
	uint32_t n_streams;
	struct agree_stream streams[AGREE_MAX_STREAMS];
	/* [S] group state */
	enum agree_role role;
	bool joined;                           /* follower: WELCOME received */
	bool group_dead;                       /* no further agreement possible */
	int fd;                                /* follower: connection to the leader */
	struct agree_buf out;                  /* follower: pending output */
	struct agree_buf in;
	uint64_t next_try_ns;                  /* follower: lookup/connect retry */
	uint64_t announce_until_ns;            /* rankless: stop trying to reach the leader */
	uint64_t heard_ns;                     /* leader: last message from any child */
	uint32_t leader_addr, leader_port;     /* follower: from the hub */
	bool registered;                       /* leader: REGISTER acknowledged / local */
	struct agree_peer **peers;             /* leader: by rank (NULL = not joined) */
	uint32_t joined_count;
	bool fallback_sent;                    /* follower: FALLBACK reported to the leader */
	bool hello_sent;                       /* follower: the leader may count this rank */
	uint64_t asked_seq;                    /* follower: REQUEST sent for this seq */
	int want_done;                         /* the tuner's phase handled for want_seq */
	uint64_t want_done_seq;
	uint64_t want_seen_key, want_seen_pass; /* want_seq + 1 when its phase 2 was first seen,
						 * and that pass (decided after a drained one) */
	/* leader: the newest REQUEST not arbitrated yet (seq, asker; arb_seq
	 * AGREE_NO_FALLBACK: none) and the pass that read it. relay: the newest child
	 * REQUEST not passed up yet (the whole frame's fields). Decided / passed up only after
	 * a later pass read every connection: after the ACKs that arrived with it */
	uint64_t arb_seq, arb_pass;
	uint32_t arb_asker, arb_reason, arb_why, arb_detail;
	uint64_t recov_due_pass;               /* successor: the pass that saw its deadline */
	uint64_t orphan_since_ns;              /* asking the leader for F since (0: not) */
	bool ready_up_sent;                    /* relay: READY sent up */
	char auth_why[160];                    /* a peer refused this rank's credentials */
	uint64_t fallback_sent_seq;            /* leader: F last announced */
	bool peer_bye;                         /* leader: the closing peer said BYE */
	/* [S] fan-in tree (agree_tree.c); fanout 0 = flat */
	uint32_t fanout;
	uint32_t parent;                       /* rank this one connects to (0 = leader) */
	bool relay;                            /* has children: acts as their leader */
	bool orphan;                           /* lost its relay: rescued by the leader */
	bool parent_bye;                       /* the parent said BYE (an orderly end) */
	uint32_t *kids;                        /* leader/relay: direct children */
	uint32_t n_kids;
	uint64_t down_fallback_sent;           /* relay: F last forwarded to its children */
	/* [S] the recovery round after the leader's death (agree_recover.c) */
	enum agree_recov { AGREE_RECOV_NONE, AGREE_RECOV_COLLECTING, AGREE_RECOV_REPORTING,
			   AGREE_RECOV_DECIDED, AGREE_RECOV_FAILED } recov;
	uint64_t recov_until_ns;               /* collecting / waiting for the answer until */
	uint32_t succ_addr, succ_port;         /* participant: rank 1's listener (0: unknown) */
	uint32_t lead_addr, lead_port;         /* below a relay: the leader's listener, kept
						* for an orphan when the hub is gone */
	uint64_t succ_next_try_ns;
	uint32_t succ_tries;
	int *recov_fds;                        /* successor: report connections by rank (-1) */
	bool *recov_got;                       /* successor: reports by rank */
	bool recov_ready;                      /* some survivor saw READY */
	uint64_t recov_f;                      /* the smallest F reported */
	uint64_t recov_committed[AGREE_MAX_STREAMS]; /* the newest commit reported per stream */
	uint64_t recov_decided_f;
	/* decision log ring [T] producer, [S] consumer */
	struct agree_decision *log_ring;
	uint32_t log_cap;
	_Atomic uint64_t log_head, log_tail;
};

struct agree_decision {
	uint64_t seq, n_bytes;
	int32_t coll, algo, proto, channels;
	uint32_t src, policy; /* provenance: enum nb_dsrc, policy id (runtime/decision_src.h) */
	uint64_t tag; /* the call's userProfilerTag when known (agree_log_call_tag), else 0 */
};

/* ---- process-wide (agree_core.c) ---- */
struct agree_config {
	bool enabled;               /* NCCLBPF_AGREE != off */
	char host[256];
	uint16_t port;
	bool have_addr;
	bool secret_set;            /* NCCLBPF_AGREE_SECRET given */
	struct agree_key key;       /* the job key (agree_auth.h) */
	/* why this process cannot take part although agreement is configured (a rendezvous on
	 * another host without a secret); empty when it can */
	char refused[512];
	uint64_t wait_ns;           /* NCCLBPF_AGREE_WAIT_MS */
	uint64_t collect_ns;        /* leader: wait for stragglers' contributions */
	/* a follower's lookup/connect retry period (fault retry_ms: the join must not need it
	 * when the hub and the parent answer) */
	uint64_t retry_ns;
	/* test-only fault injection (NCCLBPF_AGREE_TEST_FAULT, docs/agreement.md) */
	uint64_t fault_leader_delay_ns;
	uint64_t fault_drop_after_epochs;
	uint64_t fault_stall_service_ns;
	uint64_t fault_block_after_ns, fault_block_ns; /* the network blocked for a while */
	uint64_t fault_no_commit_after;                /* the leader commits no version > N */
	uint64_t fault_kill_after_commit;              /* the leader dies once COMMIT N is sent */
	/* the leader (or a relay) sends COMMIT N to its first (last) child only, then dies */
	uint64_t fault_kill_mid_commit, fault_kill_mid_commit_last;
	/* the leader's service thread, once DATA N is on every child's socket, neither reads,
	 * writes nor steps until the file fault_hold_file exists (a process stopped there) */
	uint64_t fault_hold_after_data;
	char fault_hold_file[256];
	uint64_t start_ns;
};
const struct agree_config *agree_config(void);
uint64_t agree_now_ns(void);
/* test-only: the network of this process is blocked now (fault_block_*) */
bool agree_fault_blocked(uint64_t now);
/* test-only: the service thread holds at the top of its next pass (fault_hold_*) */
void agree_fault_hold_arm(void);

/* Registry snapshot for the service thread. */
void agree_registry_lock(void);
void agree_registry_unlock(void);
struct agree_comm *agree_registry_at(size_t i); /* under the lock; NULL = empty slot */
void agree_comm_release(struct agree_comm *ac); /* drops a reference; frees at 0 */
bool agree_registry_remove_detached_locked(struct agree_comm *ac);

/* Falls back from comm_seq F on (the smallest F wins; logs once). Versions activating
 * before F still commit. Returns the effective F. why: enum agree_why with its rank and
 * detail (announced to the other ranks), text: the reason as this rank words it. */
uint64_t agree_comm_fallback(struct agree_comm *ac, uint64_t f, uint32_t why, uint32_t why_rank,
			     uint32_t why_detail, const char *text);
/* Smallest activation seq of a version not yet committed, over all streams; 0 while the
 * join barrier has not passed. */
uint64_t agree_first_uncommitted_seq(struct agree_comm *ac);
/* The reason as words ("rank 2's configuration differs from rank 0's: tuner programs"). */
void agree_why_text(uint32_t why, uint32_t rank, uint32_t detail, char *buf, size_t len);
/* Falls back at F = seq when seq needs something not committed (the barrier, a version):
 * the leader's arbitration, a member's own decision. Closes exactly the versions that
 * activate at or after F (S_v >= F; F is stored first, then the gate's bit where c + 1 is
 * the first of them); a version with S_v < F stays committable. false (nothing done) when
 * everything seq needs is committed already. */
bool agree_fall_at(struct agree_comm *ac, uint64_t seq, uint32_t why, uint32_t why_rank,
		   uint32_t why_detail, const char *text);
/* What collective seq needs and is not committed yet: 1 when it is the join barrier, 2 a
 * version (stream and number in *stream / *need), 0 nothing. */
int agree_needs(struct agree_comm *ac, uint64_t seq, uint32_t *stream, uint64_t *need);

/* ---- service thread (agree_service.c) ---- */
void agree_service_start(void);
bool agree_service_running(void);
void agree_service_wake(void);
uint64_t agree_service_loops(void); /* passes of the service loop (progress) */
/* A pass later than `pass` (agree_service_loops(): the pass under way) has read every
 * connection with input: whatever had reached this process's sockets when something was noted in `pass` (a request read, a deadline
 * seen passed) has been handled. A decision that must not depend on read order or on a
 * stall of this process waits for it (docs/agreement.md "Fallback rules", rule 2). */
bool agree_service_drained(uint64_t pass);
bool agree_hub_refused(void);       /* the hub did not accept this process's secret */
void agree_stat_add(size_t offset, uint64_t v);
#define AGREE_STAT(field, v) agree_stat_add(offsetof(struct agree_stats, field), (v))
void agree_stat_max(size_t offset, uint64_t v);

/* ---- group protocol (agree_group.c), service thread only ---- */
void agree_group_step(struct agree_comm *ac, uint64_t now);
/* A message for communicator ac arrived on a connection; returns false to close it. */
bool agree_group_on_msg(struct agree_comm *ac, int fd, const struct agree_msg *m, bool *adopt);
void agree_group_on_close(struct agree_comm *ac, int fd);
/* ac's link could not connect (err: ECONNREFUSED - nobody listens there any more). */
void agree_group_on_connect_error(struct agree_comm *ac, int fd, int err);
/* ac's link: the peer refused this rank's credentials, or could not prove its own. */
void agree_group_on_auth_failure(struct agree_comm *ac, const char *why);
/* The hub refused a registration of ac (AGREE_REFUSE_*). */
void agree_group_on_hub_refusal(struct agree_comm *ac, uint32_t reason);
/* The hub says a member of ac's communicator has no rank (AGREE_REFUSE_NORANK). */
void agree_group_on_norank(struct agree_comm *ac);
void agree_group_detach(struct agree_comm *ac); /* comm leaving: BYE / close, free [S] */
int agree_conn_send(int fd, const struct agree_buf *b); /* queue bytes on a connection */
size_t agree_conn_queued(int fd);   /* bytes queued, not yet handed to the kernel */
void agree_conn_push(int fd);       /* send what is queued now, not at the end of the pass */
size_t agree_conn_unsent(int fd);   /* bytes queued on fd not written yet */
bool agree_conn_ready(int fd);      /* authenticated */
int agree_conn_connect(uint32_t addr, uint16_t port);   /* non-blocking connect */
/* Polls a connecting follower link; false (fd closed) when the table is full. */
bool agree_conn_register(int fd, struct agree_comm *owner);
void agree_conn_close(int fd);
/* Sends what is queued (bounded wait), then closes with FIN: a BYE before detaching. */
void agree_conn_flush_close(int fd);
bool agree_is_hub(void);
int agree_hub_link(void); /* the authenticated connection to the hub, or -1 */
int agree_hub_register(struct agree_comm *ac);           /* leader */
/* follower: sends LOOKUP; -ENXIO (local hub): a member without a rank announced itself */
int agree_hub_lookup(struct agree_comm *ac);
/* LOOKUP of another rank's listener (the answer: LEADER, agree_recover_on_leader) */
int agree_hub_lookup_rank(struct agree_comm *ac, uint32_t rank);
uint16_t agree_listen_port(void);
/* The hub forgets a communicator this process led (entries of other processes go when
 * their connection closes). */
void agree_hub_unregister_local(uint64_t comm_id);
/* The directory (agree_hub.c): entries of authenticated members only. */
int agree_hub_add(uint64_t comm_id, uint32_t rank, uint32_t addr, uint32_t port, int fd);
void agree_hub_drop_conn(int fd);
/* A LOOKUP of a listener not registered yet, kept until it registers (-ENOSPC: full). */
int agree_hub_park(uint64_t comm_id, uint32_t rank, int fd);
/* Takes the parked LOOKUPs of (comm, rank) - of every rank of comm with AGREE_RANK_NONE:
 * a notice answers them all - into fds/ranks; returns how many. */
size_t agree_hub_unpark(uint64_t comm_id, uint32_t rank, int *fds, uint32_t *ranks, size_t max);
/* The service, after a registration in the directory: answers the LOOKUPs parked for it
 * and moves this process's members that wait for it. */
void agree_hub_registered(uint64_t comm_id, uint32_t rank);
bool agree_hub_has_notice(uint64_t comm_id);
bool agree_hub_get(uint64_t comm_id, uint32_t rank, uint32_t *addr, uint32_t *port);
bool agree_hub_local_lookup(uint64_t comm_id, uint32_t rank, uint32_t *addr, uint32_t *port);
size_t agree_hub_entries(void);

/* ---- shared by the group protocol (agree_group.c) and the relay (agree_relay.c),
 * service thread only ---- */
struct agree_peer { /* a direct child as its leader or relay sees it */
	int fd;        /* -1 once gone */
	uint32_t rank;
	bool gone;     /* left after joining: its acks are frozen */
	bool departed; /* gone after its BYE: the ACKs it sent still count (leader_commit) */
	bool orphan;   /* a rank that lost its parent (or its link), told F only */
	bool ready;    /* joined, and for a relay: its whole subtree joined (READY) */
};
uint32_t agree_my_rank(const struct agree_comm *ac);
uint64_t agree_thread_cpu_ns(void);
/* FALLBACK flags this rank announces (AGREE_FALLBACK_ORDERLY when its first fallback was a
 * communicator being destroyed). */
uint32_t agree_fallback_flags(struct agree_comm *ac);
void agree_send_simple(struct agree_comm *ac, int fd, enum agree_msg_type t, uint32_t stream,
		       uint64_t number);
void agree_send_data(struct agree_comm *ac, int fd, struct agree_stream *s, uint32_t idx,
		     const struct agree_version *v, const uint8_t *prev);
void agree_snapshot(const struct agree_stream *s, uint8_t *dst);
/* No further agreement: fall back at the first uncommitted activation (0 before the join
 * barrier passed). */
void agree_end_group(struct agree_comm *ac, uint32_t why, uint32_t why_rank, uint32_t why_detail,
		     const char *text);
/* A child's HELLO: its configuration against this node's; on a difference REFUSE (with the
 * field) and the end of agreement at the join barrier. */
bool agree_child_config_ok(struct agree_comm *ac, int fd, const struct agree_msg *m);
/* A child's HELLO (rank_ok: its header rank is one of this node's direct children): the
 * common checks, REFUSE or the peer entry and WELCOME. false: close the connection. */
bool agree_admit_child(struct agree_comm *ac, int fd, const struct agree_msg *m, bool rank_ok);
/* A direct child's (rank r, joined, on its own connection) CONTRIB / ACK / FALLBACK, at
 * the leader and at a relay alike. false: malformed, close the connection. */
/* The entries of a CONTRIB or PARTIAL (checked by the caller) into a child's sparse view;
 * -ENOMEM ends the group. */
int agree_apply_entries(struct agree_comm *ac, struct agree_sparse *view,
			const struct agree_msg *m);
bool agree_apply_contrib(struct agree_comm *ac, uint32_t r, const struct agree_msg *m);
bool agree_apply_ack(struct agree_comm *ac, uint32_t r, const struct agree_msg *m);
void agree_apply_fallback(struct agree_comm *ac, const struct agree_msg *m);
/* relay (agree_relay.c) */
void agree_relay_forward(struct agree_comm *ac, const struct agree_buf *b);
void agree_relay_lost_child(struct agree_comm *ac, uint32_t r, bool orderly);
void agree_relay_step(struct agree_comm *ac, uint64_t now);
void agree_relay_ready_down(struct agree_comm *ac); /* the join barrier passed: READY down */
bool agree_relay_on_child_msg(struct agree_comm *ac, int fd, const struct agree_msg *m);

/* ---- reduction (agree_reduce.c) ---- */
/* out (dense, stride x max_entries) = op over the leader's own dense view `self` and the
 * sparse views of the others; entries nobody contributed stay 0. LEADER: out = self.
 * cnt: max_entries scratch. */
void agree_reduce(const struct nb_map_agreed_desc *d, uint8_t *out, uint32_t *cnt,
		  const uint8_t *self, const struct agree_sparse *views, uint32_t n_views);
/* Sets entry `key` of a sparse view (an all-zero value removes it). 0 or -ENOMEM. */
int agree_sparse_set(struct agree_sparse *v, uint32_t value_size, uint32_t key,
		     const uint8_t *value);
void agree_sparse_free(struct agree_sparse *v);

/* ---- fan-in tree (agree_tree.c) ---- */
#define AGREE_TREE_MIN_RANKS 64 /* flat up to this many ranks (docs/results.md section 7) */
/* Fan-out for n_ranks: env NCCLBPF_AGREE_FANOUT ("flat"/0, or F >= 2), else flat up to
 * AGREE_TREE_MIN_RANKS ranks and ceil(sqrt(n)) above. 0 = flat. */
uint32_t agree_tree_fanout_for(uint32_t n_ranks, const char *env);
/* Parent of rank (UINT32_MAX for rank 0; 0 in a flat group). */
uint32_t agree_tree_parent(uint32_t rank, uint32_t fanout);
/* Members of the subtree rooted at a relay (itself included); 1 for a leaf. */
uint32_t agree_tree_subtree(uint32_t rank, uint32_t fanout, uint32_t n_ranks);
bool agree_tree_is_relay(uint32_t rank, uint32_t fanout, uint32_t n_ranks);
/* Partial views: max_entries x (value_size + 8): combined words, then a u64 count. */
void agree_partial_reset(const struct nb_map_agreed_desc *d, uint8_t *part);
void agree_partial_add_dense(const struct nb_map_agreed_desc *d, uint8_t *part, const uint8_t *view);
/* counted: the view holds partial entries (value + count) rather than one rank's values. */
void agree_partial_add_sparse(const struct nb_map_agreed_desc *d, uint8_t *part,
			      const struct agree_sparse *v, bool counted);
/* out (dense, stride) = the final values (MEAN divided by the count; LEADER: self). */
void agree_partial_finish(const struct nb_map_agreed_desc *d, uint8_t *out,
			  const uint8_t *part, const uint8_t *self);

/* ---- decision log (decision_log.c) ---- */
void agree_decision_log_drain(bool final);

/* ---- `ctl dump` of agreed maps (agree_view.c) ---- */
void agree_view_register(void);

#endif
