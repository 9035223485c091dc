#define _GNU_SOURCE /* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP */
/* agree: the communicator registry, and the NCCL-thread side of agreement: the join
 * barrier, activation of published versions (with the bounded, yielding wait), fallback,
 * and the profiler's contribution binding (configuration: agree_config.c). Nothing here takes a
 * lock or allocates on the decision path once a communicator's first collective is done. */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agree/agree_internal.h"
#include "ncclbpf/policy.h"
#include "runtime/runtime.h"

/* recursive: the service thread holds it while dispatching, and closing a connection
 * looks the registry up again */
static pthread_mutex_t registry_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static struct agree_comm *registry[AGREE_MAX_COMMS];
static struct agree_comm *_Atomic lookup_table[AGREE_MAX_COMMS]; /* lock-free reads */

/* ---- registry ---- */

void agree_registry_lock(void) { pthread_mutex_lock(&registry_lock); }
void agree_registry_unlock(void) { pthread_mutex_unlock(&registry_lock); }
struct agree_comm *agree_registry_at(size_t i) { return i < AGREE_MAX_COMMS ? registry[i] : NULL; }

static struct agree_comm *find_locked(uint64_t comm_id)
{
	for (size_t i = 0; i < AGREE_MAX_COMMS; i++)
		if (registry[i] && registry[i]->comm_id == comm_id)
			return registry[i];
	return NULL;
}

static void free_comm(struct agree_comm *ac)
{
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		free(s->contrib);
		struct agree_version *v = atomic_load(&s->first);
		while (v) {
			struct agree_version *n = atomic_load(&v->next);
			free(v);
			v = n;
		}
	}
	free(ac->log_ring);
	free(ac);
}

void agree_comm_release(struct agree_comm *ac)
{
	if (ac && atomic_fetch_sub(&ac->refs, 1) == 1)
		free_comm(ac);
}

/* A communicator's state before anyone uses it, with one reference; NULL when out of
 * memory. */
static struct agree_comm *comm_alloc(uint64_t comm_id, uint32_t n_ranks)
{
	struct agree_comm *ac = calloc(1, sizeof(*ac));
	if (!ac)
		return NULL;
	ac->comm_id = comm_id;
	ac->n_ranks = n_ranks;
	atomic_init(&ac->rank, -1);
	atomic_init(&ac->refs, 1);
	atomic_init(&ac->fallback_seq, AGREE_NO_FALLBACK);
	atomic_init(&ac->ready, AGREE_READY_PENDING);
	atomic_init(&ac->want_seq, UINT64_MAX);
	ac->asked_seq = UINT64_MAX;
	ac->fallback_sent_seq = ac->down_fallback_sent = AGREE_NO_FALLBACK; /* none announced */
	ac->arb_seq = AGREE_NO_FALLBACK;                               /* no request pending */
	ac->fd = -1;
	ac->read_bind.mode = NB_BIND_READ;
	ac->write_bind.mode = NB_BIND_WRITE;
	return ac;
}

/* Creates or finds the state of comm_id under the lock; NULL when the table is full. */
static struct agree_comm *get_or_create_locked(uint64_t comm_id, uint32_t n_ranks)
{
	struct agree_comm *ac = find_locked(comm_id);
	if (ac)
		return ac;
	size_t free_slot = AGREE_MAX_COMMS;
	for (size_t i = 0; i < AGREE_MAX_COMMS; i++)
		if (!registry[i]) {
			free_slot = i;
			break;
		}
	if (free_slot == AGREE_MAX_COMMS)
		return NULL;
	ac = comm_alloc(comm_id, n_ranks); /* its reference: the registry's (service side) */
	if (!ac)
		return NULL;
	registry[free_slot] = ac;
	atomic_store_explicit(&lookup_table[free_slot], ac, memory_order_release);
	return ac;
}

static bool remove_locked(struct agree_comm *ac)
{
	for (size_t i = 0; i < AGREE_MAX_COMMS; i++)
		if (registry[i] == ac) {
			atomic_store(&lookup_table[i], NULL);
			registry[i] = NULL;
			return true;
		}
	return false;
}

/* A multi-rank communicator that found the registry full: the tuner's own state, outside
 * the registry (the profiler cannot give it a rank, the service never sees it, the
 * decision log never drains it). It is a member that cannot join (setup_streams): it falls
 * back at collective 0, where the others do, since nobody passes the join barrier without
 * it. NULL when out of memory. */
static struct agree_comm *unlisted_comm(uint64_t comm_id, uint32_t n_ranks)
{
	struct agree_comm *ac = comm_alloc(comm_id, n_ranks); /* its reference: the tuner's only */
	if (!ac)
		return NULL;
	ac->tuner_open = ac->tuner_seen = true;
	ac->unlisted = true;
	ac->detached = true; /* no group to leave */
	return ac;
}

/* Agreement is configured here and the loaded policy reads agreed maps. */
static bool may_group(void)
{
	const struct agree_config *cfg = agree_config();
	if (!cfg->enabled || !cfg->have_addr || cfg->refused[0])
		return false;
	struct nb_map_agreed_desc d;
	for (uint32_t slot = 0; slot < NB_MAP_AGREED_SLOTS; slot++)
		if (map_agreed_desc(slot, &d))
			return true;
	return false;
}

struct agree_comm *agree_comm_tuner_open(uint64_t comm_id, uint32_t n_ranks)
{
	if (comm_id == 0)
		return NULL;
	agree_config();
	agree_view_register(); /* `ctl dump` of agreed maps (agree_view.c) */
	/* the decision log's ring is attached under the registry lock: the service thread's
	 * drain reads it under that lock (attached after it, the drain could read a ring whose
	 * capacity it does not see yet; ThreadSanitizer) */
	const uint32_t log_cap = 1u << 16;
	struct agree_decision *ring =
		agree_decision_log_enabled() ? calloc(log_cap, sizeof(*ring)) : NULL;
	pthread_mutex_lock(&registry_lock);
	struct agree_comm *ac = get_or_create_locked(comm_id, n_ranks);
	if (ac && ac->tuner_open && n_ranks > 1) {
		/* a second rank of this communicator in this process (one process driving several
		 * GPUs: ncclCommInitAll, nccl-tests -g, single-process JAX). Members are processes,
		 * one rank each: neither rank can join. The first state tells the others (as a
		 * member without a rank), this one gets its own, unshared state: both fall back at
		 * collective 0, where every other rank does */
		atomic_store(&ac->multi_rank, true);
		pthread_mutex_unlock(&registry_lock);
		free(ring);
		struct agree_comm *own = unlisted_comm(comm_id, n_ranks);
		if (own)
			atomic_store(&own->multi_rank, true);
		return own;
	}
	if (ac) {
		if (ac->n_ranks == 0)
			ac->n_ranks = n_ranks;
		ac->tuner_open = true;
		ac->tuner_seen = true;
		atomic_fetch_add(&ac->refs, 1);
		if (ring && !ac->log_ring) {
			ac->log_cap = log_cap;
			ac->log_ring = ring;
			ring = NULL;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	free(ring); /* not attached: no state, or one already there */
	if (!ac && n_ranks > 1 && (ac = unlisted_comm(comm_id, n_ranks)) != NULL) {
		if (agree_decision_log_enabled()) /* the fallback itself is logged by setup_streams */
			runtime_log(NB_LOG_INFO, NB_LOG_TUNING, "agree: comm 0x%" PRIx64 ": all %d "
				    "communicator slots are in use: its decisions are not in the "
				    "decision log", comm_id, AGREE_MAX_COMMS);
		return ac;
	}
	if (!ac)
		runtime_log(NB_LOG_WARN, NB_LOG_TUNING,
			    "agree: no state for comm 0x%" PRIx64 " (out of memory or %d "
			    "communicators): its agreed maps read as zeros", comm_id, AGREE_MAX_COMMS);
	/* The service thread starts now when this communicator may form a group: it binds the
	 * rendezvous or connects and authenticates to the hub while NCCL finishes its init,
	 * so the join at collective 0 costs a lookup and a HELLO, not also the connections
	 * (docs/agreement.md "Joining"). The decision log's writer needs it too. */
	if (ac && (ac->log_ring || (n_ranks > 1 && may_group())))
		agree_service_start();
	return ac;
}

void agree_comm_profiler_open(uint64_t comm_id, int rank, int n_ranks)
{
	if (comm_id == 0 || rank < 0 || n_ranks <= 0 || rank >= n_ranks)
		return;
	agree_config();
	pthread_mutex_lock(&registry_lock);
	struct agree_comm *ac = get_or_create_locked(comm_id, (uint32_t)n_ranks);
	if (ac && ac->profiler_open && atomic_load(&ac->rank) != rank)
		atomic_store(&ac->multi_rank, true); /* another rank of it here (tuner_open) */
	if (ac && !ac->profiler_open) {
		ac->profiler_open = true;
		atomic_fetch_add(&ac->refs, 1);
		atomic_store(&ac->rank, rank);
		if (ac->n_ranks == 0)
			ac->n_ranks = (uint32_t)n_ranks;
	}
	pthread_mutex_unlock(&registry_lock);
}

/* Waits (bounded) until the service thread left the communicator's group: BYE sent and
 * flushed on its links. NCCL often ends the process right after destroying the last
 * communicator; without this the sockets closed with the process before the BYE, and the
 * other ranks took the orderly end of the job for a lost member (a WARN on every rank).
 * Not a decision path: ncclCommDestroy. The tuner's reference keeps ac alive. */
static void wait_detached(struct agree_comm *ac)
{
	uint64_t until = agree_now_ns() + AGREE_DETACH_WAIT_MS * 1000000ull;
	for (;;) {
		pthread_mutex_lock(&registry_lock);
		bool done = ac->detached;
		pthread_mutex_unlock(&registry_lock);
		if (done || agree_now_ns() >= until)
			return;
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
	}
}

void agree_comm_tuner_close(struct agree_comm *ac)
{
	if (!ac)
		return;
	/* its decisions reach the file before NCCL (and maybe the process) goes on */
	agree_decision_log_drain(true);
	if (ac->grouped || atomic_load(&ac->fallback_seq) != AGREE_NO_FALLBACK) {
		struct agree_stats st;
		agree_get_stats(&st);
		uint64_t f = atomic_load(&ac->fallback_seq);
		/* a fallback point after the last collective (the group ended because ranks
		 * destroyed the communicator) changed no decision */
		char fb[32] = "none";
		if (f != AGREE_NO_FALLBACK && f <= atomic_load(&ac->tuner_seq))
			snprintf(fb, sizeof(fb), "%" PRIu64, f);
		runtime_log(NB_LOG_INFO, NB_LOG_TUNING,
			    "agree: comm 0x%" PRIx64 " rank %d closed at collective %" PRIu64
			    ": %" PRIu64 " versions activated, %" PRIu64 " waits (longest %" PRIu64
			    " us), fallback at %s; %" PRIu64 " bytes sent, %" PRIu64 " received, %"
			    PRIu64 " messages refused",
			    ac->comm_id, atomic_load(&ac->rank), atomic_load(&ac->tuner_seq),
			    st.versions_active, st.waits, st.wait_ns_max / 1000, fb, st.bytes_sent,
			    st.bytes_received, st.msgs_refused);
	}
	if (ac->unlisted) { /* never in the registry */
		agree_comm_release(ac);
		return;
	}
	pthread_mutex_lock(&registry_lock);
	ac->tuner_open = false;
	atomic_store(&ac->closing, true);
	/* without a service thread there is no group to leave */
	if (!agree_service_running())
		ac->detached = true;
	bool remove = ac->detached && !ac->profiler_open && remove_locked(ac);
	bool leave = ac->grouped && !ac->detached;
	pthread_mutex_unlock(&registry_lock);
	if (remove)
		agree_comm_release(ac); /* the registry's reference */
	agree_service_wake();
	if (leave)
		wait_detached(ac);
	agree_comm_release(ac);
}

void agree_comm_profiler_close(uint64_t comm_id)
{
	pthread_mutex_lock(&registry_lock);
	struct agree_comm *ac = find_locked(comm_id);
	bool drop = ac && ac->profiler_open;
	if (drop)
		ac->profiler_open = false;
	/* the last side to close removes it: a profiler-only communicator, or one whose
	 * tuner closed and whose group was left already */
	bool remove = drop && !ac->tuner_open && (!ac->tuner_seen || ac->detached) &&
		      remove_locked(ac);
	pthread_mutex_unlock(&registry_lock);
	if (remove)
		agree_comm_release(ac);
	if (drop)
		agree_comm_release(ac);
}

/* The service thread, after leaving a closed communicator's group: removes it when the
 * profiler side closed too (else agree_comm_profiler_close will). */
bool agree_registry_remove_detached_locked(struct agree_comm *ac)
{
	ac->detached = true;
	return !ac->profiler_open && remove_locked(ac);
}

/* ---- streams: set up by the tuner at the communicator's first collective ---- */

/* The configuration this rank joins with (docs/agreement.md "Joining"). Called inside the
 * tuner's chain section (tuner_decide_general), so the chains read here stay valid. */
static void fingerprint(struct agree_comm *ac)
{
	struct agree_fingerprint *fp = &ac->fp;
	uint32_t wire = AGREE_WIRE_VERSION, ctx = (uint32_t)sizeof(struct ncclbpf_tuner_ctx);
	uint64_t lib = agree_fnv1a("ncclbpf", 7, AGREE_FNV_INIT);
	lib = agree_fnv1a(&wire, sizeof(wire), lib);
	fp->lib = agree_fnv1a(&ctx, sizeof(ctx), lib);
	/* a chain gated by a reload activating across ranks: which one this communicator runs
	 * is agreed by the reload itself (tuner_reload.c), and the ranks may see the
	 * activation at different stages (staged here, committed there): not compared */
	const struct nb_hook_chain *t = runtime_hook_chain(NB_HOOK_TUNER);
	const struct nb_hook_chain *c = runtime_hook_chain(NB_HOOK_TUNER_CHUNK);
	fp->tuner = t && atomic_load(&t->gated) ? AGREE_FP_ACTIVATING : runtime_chain_content(t);
	fp->chunk = c && atomic_load(&c->gated) ? AGREE_FP_ACTIVATING : runtime_chain_content(c);
	fp->wait_ms = (uint32_t)(agree_config()->wait_ns / 1000000);
	fp->fanout = agree_tree_fanout_for(ac->n_ranks, getenv("NCCLBPF_AGREE_FANOUT"));
	const char *sym = getenv("NCCLBPF_TUNER_SYM");
	fp->flags = sym && !strcmp(sym, "compete") ? AGREE_FP_SYM_COMPETE : 0;
}

/* Why a multi-rank communicator whose policy reads agreed maps cannot join here (NULL: it
 * can). Each reason makes it fall back from collective 0, where the other ranks do too:
 * nobody passes the join barrier without it. Reading zeros instead, as before, made it
 * decide differently from the others (issue 23). */
static const char *cannot_join(struct agree_comm *ac)
{
	const struct agree_config *cfg = agree_config();
	if (!cfg->enabled)
		return "agreement is off here (NCCLBPF_AGREE=off) but the policy reads agreed maps";
	if (!cfg->have_addr)
		return "agreement has no rendezvous address here (NCCLBPF_AGREE, or MASTER_ADDR "
		       "and MASTER_PORT) but the policy reads agreed maps";
	if (cfg->refused[0])
		return cfg->refused;
	if (atomic_load(&ac->multi_rank)) {
		ac->rankless = !ac->unlisted; /* the shared state tells the others (rankless_step) */
		return "another rank of this communicator is in this process (one process driving "
		       "several GPUs: ncclCommInitAll, nccl-tests -g, single-process JAX); agreement "
		       "needs one rank per process, so it cannot join";
	}
	if (ac->unlisted)
		return "all " AGREE_MAX_COMMS_STR " communicator slots of this process are in use, "
		       "so it cannot join";
	if (atomic_load_explicit(&ac->rank, memory_order_relaxed) < 0) {
		/* the one case it can still tell the others about (rankless_step) */
		ac->rankless = true;
		return "ncclbpf's profiler plugin did not report this rank - it is not loaded here "
		       "(NCCL_PROFILER_PLUGIN) or NCCLBPF_PROFILE=off - so it cannot join";
	}
	return NULL;
}

static void setup_streams(struct agree_comm *ac)
{
	uint32_t n = 0;
	for (uint32_t slot = 0; slot < NB_MAP_AGREED_SLOTS && n < AGREE_MAX_STREAMS; slot++) {
		struct agree_stream *s = &ac->streams[n];
		if (!map_agreed_desc(slot, &s->desc))
			continue;
		s->slot = slot;
		s->bytes = (size_t)s->desc.stride * s->desc.max_entries;
		s->k = s->desc.epoch ? s->desc.epoch : 1;
		s->contrib = calloc(1, s->bytes);
		if (!s->contrib)
			break;
		atomic_init(&s->gate, 0);
		ac->write_bind.base[slot] = s->contrib;
		n++;
	}
	ac->n_streams = n;
	/* no agreed map, or one rank: no group; version 0 (all zeros) forever, identically on
	 * every rank */
	const char *cannot = n && ac->n_ranks > 1 ? cannot_join(ac) : NULL;
	ac->grouped = n && ac->n_ranks > 1 && (!cannot || (ac->rankless && !ac->unlisted));
	if (n)
		fingerprint(ac);
	if (cannot) {
		char why[640];
		snprintf(why, sizeof(why), "%s; the other ranks fall back at the same collective",
			 cannot);
		atomic_store(&ac->ready, AGREE_READY_FAILED);
		agree_comm_fallback(ac, 0, AGREE_WHY_NONE, 0, 0, why);
	}
	if (ac->grouped)
		agree_service_start();
	atomic_store_explicit(&ac->streams_ready, true, memory_order_release);
	agree_service_wake();
}

/* Next seq at which any stream closes an epoch or activates a version. */
static uint64_t next_event_after(const struct agree_comm *ac, uint64_t seq)
{
	uint64_t best = UINT64_MAX;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		uint64_t k = ac->streams[i].k;
		uint64_t nxt = (seq / k + 1) * k;
		if (nxt < best)
			best = nxt;
	}
	return best;
}

uint64_t agree_first_uncommitted_seq(struct agree_comm *ac)
{
	if (atomic_load(&ac->ready) != AGREE_READY_YES)
		return 0; /* the join barrier itself */
	uint64_t best = UINT64_MAX;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		uint64_t g = atomic_load(&s->gate) & ~AGREE_GATE_FALLBACK;
		uint64_t f = (g + 2) * s->k; /* S_{g+1} */
		if (f < best)
			best = f;
	}
	return best;
}

uint64_t agree_comm_fallback(struct agree_comm *ac, uint64_t f, uint32_t why, uint32_t why_rank,
			     uint32_t why_detail, const char *text)
{
	if (f == AGREE_NO_FALLBACK) /* nothing left to agree on: no point to fall back from */
		return atomic_load(&ac->fallback_seq);
	/* versions activating at or after F are never committed any more (commit checks it);
	 * earlier ones still are */
	uint64_t cur = atomic_load(&ac->fallback_seq);
	const uint64_t before = cur;
	while (f < cur && !atomic_compare_exchange_weak(&ac->fallback_seq, &cur, f))
		;
	uint64_t eff = atomic_load(&ac->fallback_seq);
	char buf[256];
	if (!text) {
		agree_why_text(why, why_rank, why_detail, buf, sizeof(buf));
		text = buf;
	}
	/* a communicator being destroyed everywhere is not a failure: INFO */
	bool orderly = why == AGREE_WHY_DESTROYED || strstr(text, "destroyed");
	if (atomic_exchange(&ac->fallback_logged, true)) {
		/* logged once; an earlier F later is said too (issue 23: the stopped leader's WARN
		 * named the first F it heard, 640, and it fell back at 576 without a word) */
		if (eff == f && f < before)
			runtime_log(orderly ? NB_LOG_INFO : NB_LOG_WARN,
				    NB_LOG_TUNING, "agree: comm 0x%" PRIx64 " rank %d: the fallback "
				    "point moves from collective %" PRIu64 " to %" PRIu64 " (%s)",
				    ac->comm_id, atomic_load(&ac->rank), before, f, text);
	} else {
		AGREE_STAT(fallbacks, 1);
		atomic_store(&ac->why, why);
		atomic_store(&ac->why_rank, why_rank);
		atomic_store(&ac->why_detail, why_detail);
		/* announced with FALLBACK so that the other ranks log an orderly end at INFO too */
		atomic_store(&ac->fallback_orderly, orderly);
		runtime_log(orderly ? NB_LOG_INFO : NB_LOG_WARN, NB_LOG_TUNING,
			    "agree: comm 0x%" PRIx64 " rank %d: agreement impossible (%s); NCCL's "
			    "default decisions from collective %" PRIu64 " on, on every rank",
			    ac->comm_id, atomic_load(&ac->rank), text, eff);
	}
	agree_service_wake();
	return eff;
}

int agree_needs(struct agree_comm *ac, uint64_t seq, uint32_t *stream, uint64_t *need)
{
	if (atomic_load(&ac->ready) != AGREE_READY_YES)
		return 1;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		uint64_t v = seq / s->k >= 1 ? seq / s->k - 1 : 0;
		if (v && (atomic_load(&s->gate) & ~AGREE_GATE_FALLBACK) < v) {
			*stream = i;
			*need = v;
			return 2;
		}
	}
	return 0;
}

/* Falls back from F = seq (or the earlier F already stored) on. Which versions close is a
 * function of agreed values only - v, S_v = (v + 1) K and F: exactly those with S_v >= F.
 * Version v with S_v < F stays decidable by the commit rule (the leader's COMMIT, rule 3, a
 * WELCOME), as on every other rank: the one that announced F activated v there, or will
 * fall back at S_v only by a decision the leader announces too. Regression (issue 23,
 * stress_agree with the leader stopped): the gate's bit closed every uncommitted version,
 * also v with S_v < F, and the resumed leader's tuner, waiting for v at S_v, fell back there
 * while the others activated v (test_agree_unit test_fallback_closes_from_f).
 *
 * Order: F is stored first (commit refuses S_v >= F, the tuner falls back at seq >= F), then
 * the gate's bit is set where the next version to commit, c + 1, is the first closed one
 * (S_{c+1} >= F): a compare-and-swap that a commit racing on another thread (the tuner's
 * own fallback while the service thread commits) cannot pass. Where c + 1 is still open the
 * bit stays clear: F alone closes the later versions (agree_commit_version checks it). So
 * at every collective the tuner's decision is: seq >= F -> NCCL's defaults; else the
 * version it needs if committed (wait otherwise) - a function of (v committed, S_v, F),
 * agreed on every rank; the bit only says early what F implies. */
bool agree_fall_at(struct agree_comm *ac, uint64_t seq, uint32_t why, uint32_t why_rank,
		   uint32_t why_detail, const char *text)
{
	/* the CASes decide against a commit racing this (the leader's READY or COMMIT, or a
	 * COMMIT a member's service thread applies while its tuner gives up) */
	int r = AGREE_READY_PENDING;
	bool closed = atomic_compare_exchange_strong(&ac->ready, &r, AGREE_READY_FAILED) ||
		      r == AGREE_READY_FAILED;
	uint64_t f = closed ? 0 : seq;
	for (uint32_t i = 0; !closed && i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		uint64_t need = seq / s->k >= 1 ? seq / s->k - 1 : 0; /* the version seq runs */
		closed = (atomic_load(&s->gate) & ~AGREE_GATE_FALLBACK) < need;
	}
	if (!closed)
		return false; /* everything seq needs is committed: nothing to fall back for */
	f = agree_comm_fallback(ac, f, why, why_rank, why_detail, text); /* the effective F */
	for (uint32_t i = 0; f && i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		uint64_t g = atomic_load(&s->gate);
		/* S_{c+1} >= F: c + 1 is the first version F closes */
		while (!(g & AGREE_GATE_FALLBACK) && (g + 2) * s->k >= f &&
		       !atomic_compare_exchange_weak(&s->gate, &g, g | AGREE_GATE_FALLBACK))
			;
	}
	return true;
}

/* 1: what seq needs is there (idx -1: the join barrier; else version `need` of stream
 * idx), -1: the communicator fell back at or before seq, 0: not yet. */
static int wait_state(struct agree_comm *ac, uint64_t seq, int idx, uint64_t need)
{
	if (idx < 0) {
		int r = atomic_load_explicit(&ac->ready, memory_order_acquire);
		if (r == AGREE_READY_YES)
			return 1;
		if (r == AGREE_READY_FAILED)
			return -1;
	} else {
		uint64_t g = atomic_load_explicit(&ac->streams[idx].gate, memory_order_acquire);
		if ((g & ~AGREE_GATE_FALLBACK) >= need)
			return 1;
		if (g & AGREE_GATE_FALLBACK)
			return -1;
	}
	return seq >= atomic_load_explicit(&ac->fallback_seq, memory_order_acquire) ? -1 : 0;
}

/* Waits (bounded, yielding) until what collective seq needs is agreed. The waiting never
 * decides by itself: after NCCLBPF_AGREE_WAIT_MS / 2 it asks the service thread to ask the
 * leader, after NCCLBPF_AGREE_WAIT_MS to decide - both after the service thread has read
 * what its peers sent, so that a verdict that arrived while this process was stopped or
 * starved is seen first (docs/agreement.md "Fallback rules"). Only if the service thread
 * itself makes no progress for another bound does this thread fall back alone. */
static bool wait_for(struct agree_comm *ac, uint64_t seq, int idx, uint64_t need)
{
	int st = wait_state(ac, seq, idx, need);
	if (st)
		return st > 0;
	const uint64_t w = agree_config()->wait_ns;
	uint64_t t0 = agree_now_ns(), last = t0, spins = 0, loops0 = 0, stuck = 0;
	int phase = 0;
	AGREE_STAT(waits, 1);
	agree_service_wake();
	for (;;) {
		st = wait_state(ac, seq, idx, need);
		if (st)
			break;
		uint64_t t = agree_now_ns();
		if (t - last > 100000000ull)
			stuck = 0; /* this thread did not run: its clock says nothing about the service */
		last = t;
		uint64_t el = t - t0;
		int want = el >= w ? 2 : el >= w / 2 ? 1 : 0;
		if (want > phase) {
			phase = want;
			atomic_store(&ac->want_seq, seq);
			atomic_store_explicit(&ac->want_phase, phase, memory_order_release);
			agree_service_wake();
		}
		if (phase == 2) {
			uint64_t loops = agree_service_loops();
			if (!stuck || loops != loops0) {
				stuck = t;
				loops0 = loops;
			} else if (t - stuck >= w + 1000000000ull) {
				agree_fall_at(ac, seq, AGREE_WHY_NONE, 0, 0, "the agreement service "
					      "thread did not answer; NCCL's defaults without a verdict");
			}
		}
		if (++spins < 64) {
			sched_yield();
		} else {
			struct timespec ts = {0, 50000};
			nanosleep(&ts, NULL);
		}
	}
	atomic_store(&ac->want_phase, 0);
	atomic_store(&ac->want_seq, UINT64_MAX);
	agree_stat_max(offsetof(struct agree_stats, wait_ns_max), agree_now_ns() - t0);
	return st > 0;
}

/* The committed version `need` of stream s (linked before its gate moved), or NULL. */
static struct agree_version *committed_version(struct agree_comm *ac, struct agree_stream *s,
					       uint64_t need, uint64_t seq)
{
	struct agree_version *v = s->active ? s->active : atomic_load_explicit(&s->first,
									     memory_order_acquire);
	while (v && v->number < need)
		v = atomic_load_explicit(&v->next, memory_order_acquire);
	if (v && v->number == need)
		return v;
	/* cannot happen (versions are linked before the gate moves); never continue on a
	 * stale version silently */
	agree_comm_fallback(ac, seq, AGREE_WHY_NONE, 0, 0,
			    "internal error: a committed version is missing");
	return NULL;
}

/* Slow path: the join barrier, an epoch boundary or an activation point. */
static enum agree_verdict tuner_event(struct agree_comm *ac, uint64_t seq)
{
	if (atomic_load_explicit(&ac->ready, memory_order_acquire) != AGREE_READY_YES &&
	    !wait_for(ac, seq, -1, 0))
		return AGREE_FALLBACK;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		uint64_t epochs = seq / s->k; /* epochs 0..epochs-1 have ended */
		if (epochs > atomic_load_explicit(&s->closed_epoch, memory_order_relaxed)) {
			atomic_store_explicit(&s->closed_epoch, epochs, memory_order_release);
			agree_service_wake();
		}
		uint64_t need = epochs >= 1 ? epochs - 1 : 0;
		uint64_t have = s->active ? s->active->number : 0;
		if (need <= have)
			continue;
		if (seq >= atomic_load(&ac->fallback_seq))
			return AGREE_FALLBACK;
		if (!wait_for(ac, seq, (int)i, need))
			return AGREE_FALLBACK;
		struct agree_version *v = committed_version(ac, s, need, seq);
		if (!v)
			return AGREE_FALLBACK;
		s->active = v;
		ac->read_bind.base[s->slot] = v->data;
		atomic_store_explicit(&s->active_number, v->number, memory_order_release);
		AGREE_STAT(versions_active, 1);
	}
	return seq >= atomic_load(&ac->fallback_seq) ? AGREE_FALLBACK : AGREE_RUN;
}

static const struct nb_map_binding zero_binding = {.mode = NB_BIND_READ};

enum agree_verdict agree_tuner_begin(struct agree_comm *ac, uint64_t seq)
{
	if (!ac) {
		map_agreed_bind(&zero_binding);
		return AGREE_RUN;
	}
	if (__builtin_expect(!ac->started, 0)) {
		ac->started = true;
		setup_streams(ac);
		/* a group: the join barrier at this (the first) collective */
		ac->next_event = ac->grouped ? seq : UINT64_MAX;
	}
	atomic_store_explicit(&ac->tuner_seq, seq, memory_order_relaxed);
	enum agree_verdict verdict = AGREE_RUN;
	if (__builtin_expect(seq >= ac->next_event, 0)) {
		verdict = tuner_event(ac, seq);
		ac->next_event = next_event_after(ac, seq);
		if (verdict == AGREE_FALLBACK) {
			/* permanent, and remembered here: the service thread closes a version's
			 * gate before it stores the fallback point, and a call in between read
			 * none - every rank fell back at 448, one ran the policy at 449
			 * (stress_agree, eighth session; test_agree_unit) */
			ac->next_event = UINT64_MAX;
			ac->tuner_fell_back = true;
		}
	} else if (__builtin_expect(ac->tuner_fell_back ||
					    seq >= atomic_load_explicit(&ac->fallback_seq,
									memory_order_relaxed), 0)) {
		verdict = AGREE_FALLBACK;
	}
	map_agreed_bind(&ac->read_bind);
	return verdict;
}

void agree_tuner_end(void)
{
	map_agreed_bind(NULL);
}

bool agree_tuner_passive(const struct agree_comm *ac)
{
	/* grouped is decided once, at the first collective (setup_streams); only a group
	 * moves next_event, and a fallback point is checked on every call */
	return !ac || (ac->started && !ac->grouped && !ac->log_ring &&
		       atomic_load_explicit(&ac->fallback_seq, memory_order_relaxed) ==
			       AGREE_NO_FALLBACK);
}

/* ---- profiler side ---- */

/* Per-thread cache of the last slot found (profiler threads see few communicators); the
 * slot is re-checked, so a communicator replaced in it is never returned. */
static __thread size_t cached_slot __attribute__((tls_model("initial-exec")));

static struct agree_comm *lookup_comm(uint64_t comm_id)
{
	struct agree_comm *ac = atomic_load_explicit(&lookup_table[cached_slot],
						     memory_order_acquire);
	if (ac && ac->comm_id == comm_id)
		return ac;
	for (size_t i = 0; i < AGREE_MAX_COMMS; i++) {
		ac = atomic_load_explicit(&lookup_table[i], memory_order_acquire);
		if (ac && ac->comm_id == comm_id) {
			cached_slot = i;
			return ac;
		}
	}
	return NULL;
}

void agree_profiler_begin(uint64_t comm_id)
{
	struct agree_comm *ac = lookup_comm(comm_id);
	if (ac && atomic_load_explicit(&ac->streams_ready, memory_order_acquire))
		map_agreed_bind(&ac->write_bind);
	else
		map_agreed_bind(NULL);
}

void agree_profiler_end(void)
{
	map_agreed_bind(NULL);
}

int agree_contribute(uint64_t comm_id, const char *map_name, uint32_t key, const void *value,
		     size_t value_size)
{
	struct agree_comm *ac = lookup_comm(comm_id);
	if (!ac || !atomic_load_explicit(&ac->streams_ready, memory_order_acquire))
		return -ENOENT;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		if (strcmp(s->desc.name, map_name) != 0)
			continue;
		if (value_size != s->desc.value_size || key >= s->desc.max_entries)
			return -EINVAL;
		uint8_t *dst = s->contrib + (size_t)key * s->desc.stride;
		for (size_t o = 0; o + 8 <= value_size; o += 8) {
			uint64_t w;
			memcpy(&w, (const uint8_t *)value + o, 8);
			atomic_store_explicit((_Atomic uint64_t *)(void *)(dst + o), w,
					      memory_order_relaxed);
		}
		return 0;
	}
	return -ENOENT;
}
