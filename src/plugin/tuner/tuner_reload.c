/* Reload activation across ranks through the agreement layer (runtime.h: the activation
 * seam; docs/control.md "Across ranks").
 *
 * With NCCLBPF_RELOAD_AGREE=1 (and the agreement layer on), three built-in agreed maps join
 * every communicator's agreement group (one entry each, epoch K = 16 collectives):
 *   ncclbpf_reload_min  MIN of {content, stage, gen}  content = hash of the staged policy
 *   ncclbpf_reload_max  MAX of {content, gen}         stage   = the rank's seq when it staged
 *   ncclbpf_reload_cnt  SUM of {1}                    gen     = activations this communicator
 *                                                               concluded (below)
 * A reload (`ctl reload`, on every rank: `--all` on each node) stages the new chain gated
 * and contributes {content, stage, gen}. At each collective s, every rank that staged reads
 * the same published view (the version active at s) and applies the same pure rule, but
 * only to a clean view - every contribution of its own generation (min.gen == max.gen ==
 * gen):
 *   cnt == n_ranks && min.content == max.content == content && s < min.stage + WINDOW
 *       -> switch from s on (sticky);
 *   s >= min.stage + WINDOW (someone staged WINDOW collectives ago, not everyone has)
 *       -> abandon: keep the old chain (sticky).
 * Either verdict concludes the activation: gen + 1. A view that holds a contribution of an
 * earlier generation (a rank that concluded the previous activation has not withdrawn it
 * yet) gives no verdict; one of a later generation tells a rank that it missed the end of
 * an activation - which can only have been abandoned, since a switch needs every rank's
 * contribution - and it catches up (gen = the view's, contribution restaged). The
 * generation is what makes back-to-back reloads safe: without it a rank staging while the
 * view still held the previous reload's stage abandoned on that stale deadline, yet still
 * counted towards "all staged", and the others switched without it (issue 23).
 * Because a clean view at s is identical on every rank that evaluates it, so is the
 * verdict: all ranks of a communicator switch at the same collective, or none does. A rank
 * that never staged contributes nothing, so the others abandon after WINDOW collectives.
 * The control thread polls: every communicator switched -> the old chain is retired;
 * every one abandoned -> the staged chain is freed. After either, the rank withdraws its
 * contribution. Some switched and the others abandoned (mixed): each keeps what its ranks
 * agreed and the activation stays open until one side's communicators are destroyed
 * (ops_poll). A communicator created meanwhile joins the activation (join_activation):
 * never does its chain depend on when that poll runs.
 *
 * Propagation (a reload requested on one process only): a fourth agreed map,
 *   ncclbpf_reload_req  MAX of {id, content, hook mask, check, spec bytes...}
 * carries the request of the rank where `ctl reload` ran (id: random, nonzero; check: a hash
 * of the other words, so that two concurrent requests, whose word-wise MAX is a mix of both,
 * are recognised and ignored). Every rank's tuner looks at the published request at each
 * epoch boundary (one lookup per 16 collectives); a new one is handed to the control thread
 * (a kick, no work on NCCL's thread), which loads the same spec from its own file system
 * (absolute paths without "..", as deployed for NCCLBPF_POLICY) and stages it only when its
 * content hash equals the requester's. A rank that cannot (file missing or different) does
 * not stage, and the same-hash rule above makes every rank keep the old chain. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agree/agree.h"
#include "maps/map.h"
#include "ncclbpf/policy.h"
#include "plugin/tuner/tuner.h"
#include "plugin/tuner/tuner_reload_req.h"
#include "runtime/control.h"
#include "runtime/runtime.h"

#define RELOAD_EPOCH_LOG2 4
#define RELOAD_WINDOW 2048ull /* collectives: 128 epochs of 16 */
#define RELOAD_SLOTS 256
#define DETACH_CONTENT 0xde7ac4ull
#define REQ_WORDS RELOAD_REQ_WORDS

struct reload_slot {
	_Atomic uint64_t comm_id; /* 0 = free */
	_Atomic uint32_t n_ranks;
	_Atomic uint64_t version, content;
	_Atomic uint64_t switch_at;
	_Atomic int state; /* RS_* */
	/* activations this communicator concluded (switched or abandoned), the same on every
	 * rank; the NCCL thread of the communicator writes it (tuner_reload_gate) */
	_Atomic uint64_t gen;
};
enum { RS_IDLE, RS_PENDING, RS_SWITCHED, RS_ABANDONED, RS_JOINING };

static struct reload_slot slots[RELOAD_SLOTS];
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nb_map *m_min, *m_max, *m_cnt, *m_req;
static bool enabled;
/* The activation in progress (under slot_lock; 0 = none): a communicator created while it
 * activates joins it (tuner_reload_comm_open, "Communicators created during an
 * activation" below). */
static uint64_t act_version, act_content;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* An activation that ended mixed (ops_poll: some communicators switched, the others
 * abandoned; docs/control.md "Mixed outcome"): its version while it stays so, for
 * `ctl status`; and the last version whose mixed outcome was logged (under slot_lock), so
 * that the WARN is logged once, not at every poll (every 20 ms, for the rest of the job). */
static _Atomic uint64_t mixed_version;
static uint64_t mixed_logged;

/* requests: seen by the tuners (any NCCL thread), handled by the control thread */
static _Atomic uint64_t req_seen;        /* last request id handed over */
static pthread_mutex_t req_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t req_in[REQ_WORDS];       /* under req_lock: the request handed over */
static uint64_t req_handled, req_own;    /* control thread only */
static bool adopting;                    /* control thread: staging another rank's request */
static uint64_t adopting_content;

/* Communicators that found every reload slot taken. A multi-rank one among them cannot
 * switch at an agreed collective (its gate would keep the old chain until the local commit,
 * a different collective on every rank), so while one is live, reloads of this process are
 * not staged (ops_begin) and a tuner reload is refused unless forced, like without the
 * agreement layer. Counted for `ctl status` (agreement section); logged once. */
static _Atomic uint64_t slots_exhausted;  /* communicators that got no slot, ever */
static _Atomic uint32_t unmanaged_live;   /* live multi-rank ones among them */
static _Atomic bool exhausted_logged;

static void withdraw(uint64_t comm_id)
{
	static const uint64_t zero[REQ_WORDS];
	agree_contribute(comm_id, "ncclbpf_reload_min", 0, zero, 24);
	agree_contribute(comm_id, "ncclbpf_reload_max", 0, zero, 16);
	agree_contribute(comm_id, "ncclbpf_reload_cnt", 0, zero, 8);
	agree_contribute(comm_id, "ncclbpf_reload_req", 0, zero, sizeof(zero));
}

/* Control thread, inside ops_begin: tell the other ranks of every managed communicator. */
static void announce(const uint64_t *ids, int n, uint64_t content)
{
	unsigned mask = 0;
	const char *spec = runtime_reload_in_progress(&mask);
	if (!spec)
		return;
	uint64_t w[REQ_WORDS];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	uint64_t id = ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) ^
		      ((uint64_t)getpid() << 40) ^ (content * 0x9e3779b97f4a7c15ull);
	if (reload_req_encode(w, id ? id : 1, content, mask, spec) != 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "reload of %s: not propagated to the other "
			    "ranks (only absolute paths without \"..\", under %d bytes, are); it "
			    "activates only if every rank is asked (ctl --all on each node)", spec,
			    RELOAD_REQ_SPEC_BYTES);
		return;
	}
	req_own = w[0];
	for (int i = 0; i < n; i++)
		agree_contribute(ids[i], "ncclbpf_reload_req", 0, w, sizeof(w));
}

/* Control thread, registry lock held: stage `version` on every multi-rank communicator.
 * The contribution itself is made by each communicator's tuner at its next collective
 * (tuner_reload_gate), which knows its seq: the stage point. */
static int ops_begin(uint64_t version, uint64_t content, void *arg)
{
	(void)arg;
	int managed = 0;
	uint64_t ids[RELOAD_SLOTS];
	if (!content)
		content = DETACH_CONTENT;
	if (adopting && content != adopting_content) {
		/* refused: nothing is staged here, so no rank switches (runtime_reload then
		 * discards the chains: without activation a multi-rank tuner swap is refused) */
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "reload requested by another rank: the local "
			    "files differ from the requester's (content hash %016llx, theirs %016llx); "
			    "not staged, every rank keeps the old policy",
			    (unsigned long long)content, (unsigned long long)adopting_content);
		return 0;
	}
	/* checked under the lock that stages: no communicator opens in between */
	pthread_mutex_lock(&slot_lock);
	uint32_t unmanaged = atomic_load(&unmanaged_live);
	if (unmanaged) {
		pthread_mutex_unlock(&slot_lock);
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_TUNING, "reload version %llu: not "
			    "staged across ranks: %u multi-rank communicator(s) of this process "
			    "have no reload slot (all %d in use) and cannot switch at an agreed "
			    "collective; a tuner reload is refused unless forced, so every rank "
			    "keeps the old tuner policy (the others abandon it after the window)",
			    (unsigned long long)version, unmanaged, RELOAD_SLOTS);
		return 0;
	}
	for (int i = 0; i < RELOAD_SLOTS; i++) {
		struct reload_slot *s = &slots[i];
		if (!atomic_load(&s->comm_id) || atomic_load(&s->n_ranks) < 2)
			continue;
		atomic_store(&s->content, content);
		atomic_store(&s->switch_at, UINT64_MAX);
		atomic_store(&s->state, RS_PENDING);
		atomic_store(&s->version, version);
		ids[managed++] = atomic_load(&s->comm_id);
	}
	if (managed) {
		act_version = version;
		act_content = content;
	}
	pthread_mutex_unlock(&slot_lock);
	if (managed && adopting)
		runtime_activation_note_adopted(version, content);
	else if (managed && content != DETACH_CONTENT)
		announce(ids, managed, content);
	return managed > 0;
}

static uint64_t ops_activation_seq(uint64_t comm_id, uint64_t version, void *arg)
{
	(void)arg;
	for (int i = 0; i < RELOAD_SLOTS; i++) {
		struct reload_slot *s = &slots[i];
		if (atomic_load_explicit(&s->comm_id, memory_order_relaxed) != comm_id)
			continue;
		if (atomic_load_explicit(&s->n_ranks, memory_order_relaxed) < 2)
			return 0; /* one rank: nobody to agree with */
		if (atomic_load_explicit(&s->version, memory_order_relaxed) == version)
			return atomic_load_explicit(&s->switch_at, memory_order_acquire);
	}
	return UINT64_MAX;
}

static int ops_poll(uint64_t version, void *arg)
{
	(void)arg;
	int pending = 0, switched = 0, abandoned = 0;
	pthread_mutex_lock(&slot_lock);
	for (int i = 0; i < RELOAD_SLOTS; i++) {
		struct reload_slot *s = &slots[i];
		if (!atomic_load(&s->comm_id) || atomic_load(&s->version) != version)
			continue;
		int st = atomic_load(&s->state);
		pending += st == RS_PENDING;
		switched += st == RS_SWITCHED;
		abandoned += st == RS_ABANDONED;
	}
	int verdict = 0;
	bool mixed = false;
	if (!pending && (switched || abandoned)) {
		if (!switched)
			verdict = -1;
		else if (!abandoned)
			verdict = 1;
		else
			mixed = true;
	}
	/* Mixed: each communicator keeps what its ranks agreed, at the collective they agreed
	 * (switched ones the new chain, abandoned ones the old). Neither verdict may end the
	 * activation: a commit would switch the abandoned ones, an abandon the switched ones, at
	 * this local moment, not at a collective their ranks agreed. So it stays open (later
	 * reloads -EBUSY) until the communicators of one side are destroyed; then this poll
	 * sees one outcome and ends it. A communicator created meanwhile takes part
	 * (join_activation), so the state may go back to pending: logged once per version. */
	atomic_store(&mixed_version, mixed ? version : 0);
	if (mixed && mixed_logged != version) {
		mixed_logged = version;
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_TUNING,
			    "reload version %llu: %d communicator(s) switched to it, %d kept the "
			    "old policy (their ranks did not all stage it); each keeps what its "
			    "ranks agreed. The activation stays open: further tuner reloads and "
			    "detaches of this process are refused (-EBUSY) until the communicators "
			    "of one side are destroyed (it then ends as activated or abandoned); "
			    "`ncclbpf ctl status` shows reload_mixed. Logged once",
			    (unsigned long long)version, switched, abandoned);
	}
	if (verdict) {
		for (int i = 0; i < RELOAD_SLOTS; i++) {
			struct reload_slot *s = &slots[i];
			uint64_t id = atomic_load(&s->comm_id);
			if (id && atomic_load(&s->version) == version) {
				/* a communicator that joined and has not run a gated collective yet:
				 * what its first one would have decided (the outcome is the same), so
				 * that the moments until the chain is ungated cannot differ */
				if (atomic_load(&s->state) == RS_JOINING && verdict > 0)
					atomic_store(&s->switch_at, 0);
				atomic_store(&s->state, RS_IDLE);
				withdraw(id);
			}
		}
		act_version = act_content = 0;
	}
	pthread_mutex_unlock(&slot_lock);
	return verdict;
}

/* `ncclbpf ctl status`: the agreement section (control thread). */
static void agreement_status(struct runtime_status_emit *e)
{
	struct agree_stats st;
	agree_get_stats(&st);
	e->str(e, "reload_activation", enabled ? "agreed (NCCLBPF_RELOAD_AGREE=1)" : "local");
	e->u64(e, "reload_pending", runtime_activation_pending());
	e->u64(e, "reload_mixed", atomic_load(&mixed_version));
	e->u64(e, "versions_active", st.versions_active);
	e->u64(e, "waits", st.waits);
	e->u64(e, "wait_ns_max", st.wait_ns_max);
	e->u64(e, "fallbacks", st.fallbacks);
	e->u64(e, "bytes_sent", st.bytes_sent);
	e->u64(e, "bytes_received", st.bytes_received);
	e->u64(e, "msgs_refused", st.msgs_refused);
	e->u64(e, "conns_refused", st.conns_refused);
	e->u64(e, "service_passes", agree_service_passes());
	e->u64(e, "epochs_reduced", st.epochs_reduced);
	e->u64(e, "decisions_logged", st.decisions_logged);
	e->u64(e, "reload_slots_exhausted", atomic_load(&slots_exhausted));
	e->u64(e, "reload_unmanaged_comms", atomic_load(&unmanaged_live));
}

/* Control thread: a request another rank published (tuner_reload_watch handed it over). */
static void control_tick(void)
{
	uint64_t w[REQ_WORDS];
	pthread_mutex_lock(&req_lock);
	memcpy(w, req_in, sizeof(w));
	pthread_mutex_unlock(&req_lock);
	if (!w[0] || reload_req_key(w) == req_handled)
		return;
	req_handled = reload_req_key(w);
	if (w[0] == req_own)
		return; /* ours, published back */
	char spec[RELOAD_REQ_SPEC_BYTES];
	uint64_t content = 0;
	unsigned hook = NB_HOOK_COUNT;
	int rc = reload_req_decode(w, NB_HOOK_COUNT, spec, &content, &hook);
	if (rc == -EBADMSG) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "reload request from another rank ignored: "
			    "several ranks requested different reloads at once");
		return;
	}
	if (rc < 0 || hook == NB_HOOK_CONFORMANCE) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "reload request from another rank refused: "
			    "'%s': %s", spec, rc == -EPERM ? "only absolute paths without \"..\" "
			    "are accepted" : "no such hook");
		return;
	}
	uint64_t busy = runtime_activation_pending();
	if (busy) {
		runtime_log(NB_LOG_INFO, NB_LOG_INIT, "reload of %s requested by another rank: "
			    "version %llu is already activating here", spec, (unsigned long long)busy);
		return;
	}
	char *msg = malloc(65536);
	adopting = true;
	adopting_content = content;
	rc = runtime_reload(spec, (enum nb_hook_type)hook, 0, msg, msg ? 65536 : 0);
	adopting = false;
	runtime_log(rc > 0 ? NB_LOG_INFO : NB_LOG_WARN, NB_LOG_INIT,
		    "reload of %s requested by another rank: %s%s", spec,
		    rc > 0 ? "staged" : "not staged (every rank keeps the old policy): ",
		    rc > 0 || !msg ? "" : msg);
	free(msg);
}

/* Tuner (NCCL thread), inside the agreed-map binding of seq: at each epoch boundary (where
 * the published view changes), hand a new request over to the control thread. */
void tuner_reload_watch(struct tuner_comm *tc, uint64_t seq)
{
	(void)tc;
	if (seq & ((1u << RELOAD_EPOCH_LOG2) - 1))
		return;
	uint32_t k = 0;
	const uint64_t *v = map_lookup(m_req, &k);
	if (!v || !v[0] ||
	    reload_req_key(v) == atomic_load_explicit(&req_seen, memory_order_relaxed))
		return;
	if (pthread_mutex_trylock(&req_lock) != 0)
		return; /* the control thread is copying: again at the next epoch */
	memcpy(req_in, v, sizeof(req_in));
	atomic_store_explicit(&req_seen, reload_req_key(v), memory_order_relaxed);
	pthread_mutex_unlock(&req_lock);
	runtime_control_kick();
}

static void create_maps(void)
{
	runtime_status_provider("agreement", agreement_status);
	if (!runtime_env_bool("NCCLBPF_RELOAD_AGREE", false) ||
	    runtime_env_parse_bool(getenv("NCCLBPF_AGREE")) == 0)
		return;
	struct nb_map_spec specs[4] = {
		{"ncclbpf_reload_min", NB_MAP_TYPE_ARRAY, 4, 24, 1,
		 NCCLBPF_AGREED(NCCLBPF_AGREE_MIN, RELOAD_EPOCH_LOG2)},
		{"ncclbpf_reload_max", NB_MAP_TYPE_ARRAY, 4, 16, 1,
		 NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, RELOAD_EPOCH_LOG2)},
		{"ncclbpf_reload_cnt", NB_MAP_TYPE_ARRAY, 4, 8, 1,
		 NCCLBPF_AGREED(NCCLBPF_AGREE_SUM, RELOAD_EPOCH_LOG2)},
		{"ncclbpf_reload_req", NB_MAP_TYPE_ARRAY, 4, REQ_WORDS * 8, 1,
		 NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, RELOAD_EPOCH_LOG2)},
	};
	struct nb_map **out[4] = {&m_min, &m_max, &m_cnt, &m_req};
	char err[256];
	for (int i = 0; i < 4; i++) {
		*out[i] = runtime_pinned_map(&specs[i], err, sizeof(err));
		if (!*out[i]) {
			runtime_log(NB_LOG_WARN, NB_LOG_INIT, "NCCLBPF_RELOAD_AGREE: %s: reloads of "
				    "tuner programs stay local", err);
			return;
		}
	}
	static const struct runtime_activation_ops ops = {ops_begin, ops_activation_seq,
							   ops_poll, NULL};
	runtime_set_activation_ops(&ops);
	runtime_control_set_tick(control_tick);
	enabled = true;
	runtime_log(NB_LOG_INFO, NB_LOG_INIT, "NCCLBPF_RELOAD_AGREE: reloads of tuner programs "
		    "activate at an agreed collective on every rank");
}

void tuner_reload_comm_open(struct tuner_comm *tc)
{
	pthread_once(&init_once, create_maps);
	tc->reload_slot = -1;
	if (!enabled || !tc->comm_id)
		return;
	uint64_t joined = 0;
	pthread_mutex_lock(&slot_lock);
	for (int i = 0; i < RELOAD_SLOTS; i++) {
		if (!atomic_load(&slots[i].comm_id)) {
			joined = tc->n_ranks >= 2 ? act_version : 0;
			atomic_store(&slots[i].n_ranks, tc->n_ranks);
			atomic_store(&slots[i].state, act_version ? RS_JOINING : RS_IDLE);
			atomic_store(&slots[i].content, act_content);
			atomic_store(&slots[i].switch_at, UINT64_MAX);
			atomic_store(&slots[i].gen, 1);
			atomic_store(&slots[i].version, act_version);
			atomic_store(&slots[i].comm_id, tc->comm_id);
			tc->reload_slot = i;
			break;
		}
	}
	if (tc->reload_slot < 0) {
		atomic_fetch_add(&slots_exhausted, 1);
		if (tc->n_ranks >= 2)
			atomic_fetch_add(&unmanaged_live, 1);
	}
	pthread_mutex_unlock(&slot_lock);
	if (joined)
		runtime_log(NB_LOG_INFO, NB_LOG_INIT | NB_LOG_TUNING, "comm 0x%llx created while "
			    "reload version %llu activates across ranks: it follows the outcome the "
			    "other communicators decided by its first collective, or takes part",
			    (unsigned long long)tc->comm_id, (unsigned long long)joined);
	if (tc->reload_slot >= 0)
		return;
	if (!atomic_exchange(&exhausted_logged, true))
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_TUNING,
			    "NCCLBPF_RELOAD_AGREE: all %d reload slots are in use: communicator "
			    "0x%llx (%u ranks) and any further one get none; while such a "
			    "multi-rank communicator is live, tuner reloads of this process are "
			    "refused unless forced (they could not switch at the same collective on "
			    "every rank). Counted in `ncclbpf ctl status` (reload_slots_exhausted); "
			    "logged once", RELOAD_SLOTS, (unsigned long long)tc->comm_id, tc->n_ranks);
}

void tuner_reload_comm_close(struct tuner_comm *tc)
{
	if (tc->reload_slot < 0) {
		/* the same test as at open: enabled and comm_id do not change, nor n_ranks */
		if (enabled && tc->comm_id && tc->n_ranks >= 2)
			atomic_fetch_sub(&unmanaged_live, 1);
		return;
	}
	pthread_mutex_lock(&slot_lock);
	struct reload_slot *s = &slots[tc->reload_slot];
	/* a communicator leaving mid-activation counts as having kept the old policy */
	if (atomic_load(&s->state) == RS_PENDING)
		atomic_store(&s->state, RS_ABANDONED);
	atomic_store(&s->comm_id, 0);
	pthread_mutex_unlock(&slot_lock);
}

/* Communicators created during an activation (docs/control.md). NCCL thread, the
 * communicator's first gated collective; once per communicator and reload, off the
 * per-decision path. The old code kept such a communicator on the old chain until this
 * process's local commit (the control thread's poll: a different moment, so a different
 * collective of it, on every rank). Its chain must not depend on that moment. What the
 * local commit does is already decided by the communicators that staged the reload, the
 * moment the last of them switched or abandoned (in the collective that did it; the poll
 * only notices it later). So this communicator follows that outcome, as if created after
 * the commit, and otherwise takes part in the activation like the others:
 *   every other communicator of the reload switched  -> the new chain from this collective
 *                                                        on (a commit would give it that);
 *   every other one abandoned                         -> the old chain (so would an abandon);
 *   otherwise (one still pending, or mixed)           -> it stages the reload now and
 *                                                        switches at a collective agreed
 *                                                        by its own ranks, or abandons (the
 *                                                        commit waits for it).
 * Identical on every rank of the communicator when its ranks reach this point at the same
 * place relative to the collectives of their communicators that staged the reload (an SPMD
 * program: each rank creates it after the same collective of a communicator they share)
 * and those communicators are the same or end alike on every rank. */
static int join_activation(struct reload_slot *self, uint64_t version, uint64_t seq)
{
	int pending = 0, switched = 0, abandoned = 0;
	for (int i = 0; i < RELOAD_SLOTS; i++) {
		struct reload_slot *s = &slots[i];
		if (s == self || !atomic_load_explicit(&s->comm_id, memory_order_relaxed) ||
		    atomic_load_explicit(&s->version, memory_order_acquire) != version)
			continue;
		int st = atomic_load_explicit(&s->state, memory_order_acquire);
		bool at = atomic_load_explicit(&s->switch_at, memory_order_relaxed) != UINT64_MAX;
		/* IDLE with this version: ops_poll ended the activation (switch_at kept: switched) */
		pending += st == RS_PENDING;
		switched += st == RS_SWITCHED || (st == RS_IDLE && at);
		abandoned += st == RS_ABANDONED || (st == RS_IDLE && !at);
	}
	int st = RS_PENDING;
	if (!pending && switched && !abandoned) {
		atomic_store_explicit(&self->switch_at, seq, memory_order_release);
		st = RS_SWITCHED;
	} else if (!pending && abandoned && !switched) {
		st = RS_ABANDONED;
	}
	if (st != RS_PENDING) /* it concluded this activation, as its ranks all do here */
		atomic_fetch_add_explicit(&self->gen, 1, memory_order_relaxed);
	int expect = RS_JOINING;
	/* ops_poll may have ended the activation meanwhile (then: its verdict) */
	if (!atomic_compare_exchange_strong(&self->state, &expect, st))
		return expect;
	return st;
}

/* The contribution of a staged reload: {content, stage seq, gen}, {content, gen}, {1}. */
static bool stage(struct tuner_comm *tc, uint64_t content, uint64_t seq, uint64_t gen)
{
	uint64_t mn[3] = {content, seq ? seq : 1, gen}, mx[2] = {content, gen}, one = 1;
	return agree_contribute(tc->comm_id, "ncclbpf_reload_min", 0, mn, sizeof(mn)) == 0 &&
	       agree_contribute(tc->comm_id, "ncclbpf_reload_max", 0, mx, sizeof(mx)) == 0 &&
	       agree_contribute(tc->comm_id, "ncclbpf_reload_cnt", 0, &one, 8) == 0;
}

/* A verdict on the activation: sticky, and the end of this generation. */
static void conclude(struct reload_slot *s, int state, uint64_t switch_at)
{
	if (state == RS_SWITCHED)
		atomic_store_explicit(&s->switch_at, switch_at, memory_order_release);
	atomic_fetch_add_explicit(&s->gen, 1, memory_order_relaxed);
	atomic_store_explicit(&s->state, state, memory_order_release);
}

const struct nb_hook_chain *tuner_reload_gate(struct tuner_comm *tc,
					      const struct nb_hook_chain *c, uint64_t seq)
{
	if (!enabled) /* another activation layer (tests) */
		return runtime_chain_gate(c, tc->comm_id, seq);
	if (tc->n_ranks < 2)
		return c; /* one rank: nobody to agree with */
	if (tc->reload_slot < 0)
		return c->prev; /* not managed (no commHash, ABI v3/v4): switches at the commit */
	struct reload_slot *s = &slots[tc->reload_slot];
	/* acquire: version is stored last (ops_begin), so state and switch_at read after it
	 * belong to this reload, not the previous one (weakly ordered CPUs) */
	if (atomic_load_explicit(&s->version, memory_order_acquire) != c->version)
		return c->prev;
	int st = atomic_load_explicit(&s->state, memory_order_relaxed);
	if (st == RS_JOINING)
		st = join_activation(s, c->version, seq);
	uint64_t at = atomic_load_explicit(&s->switch_at, memory_order_relaxed);
	if (st == RS_SWITCHED || (st == RS_IDLE && at != UINT64_MAX))
		return seq >= at ? c : c->prev;
	if (st != RS_PENDING)
		return c->prev;
	uint64_t content = atomic_load_explicit(&s->content, memory_order_relaxed);
	uint64_t gen = atomic_load_explicit(&s->gen, memory_order_relaxed);
	if (!tc->reload_staged || tc->reload_staged_version != c->version ||
	    tc->reload_staged_gen != gen) {
		/* first collective since the stage (or since catching up with a later generation):
		 * contribute {content, stage seq, gen} */
		if (stage(tc, content, seq, gen)) {
			tc->reload_staged = true; /* else: again at the next collective */
			tc->reload_staged_version = c->version;
			tc->reload_staged_gen = gen;
			tc->reload_stage_seq = seq;
		}
	}
	/* the published view at seq: identical on every rank (agree_tuner_begin bound it) */
	uint32_t k = 0;
	const uint64_t *vmin = map_lookup(m_min, &k), *vmax = map_lookup(m_max, &k),
		       *vcnt = map_lookup(m_cnt, &k);
	if (!vmin || !vmax || !vcnt || !vmin[1]) {
		/* Nobody's stage in the agreed view yet. After 4 windows of nothing, this
		 * communicator has no working agreement group: give up locally. Safe: any view
		 * that later shows this rank's stage has min.stage <= its stage seq, so every rank
		 * reading it is past that deadline and abandons too. */
		if (tc->reload_staged && tc->reload_staged_version == c->version &&
		    seq >= tc->reload_stage_seq + 4 * RELOAD_WINDOW)
			conclude(s, RS_ABANDONED, UINT64_MAX);
		return c->prev;
	}
	if (vmax[1] > gen) {
		/* a later generation: the activation of this one ended without this rank, so as
		 * abandoned (a switch needs every rank's contribution). Take part in the current
		 * one: restaged with its generation at the next collective. */
		atomic_store_explicit(&s->gen, vmax[1], memory_order_relaxed);
		return c->prev;
	}
	if (vmin[2] != gen || vmax[1] != gen)
		return c->prev; /* a rank still shows an earlier generation: no verdict yet */
	uint64_t deadline = vmin[1] + RELOAD_WINDOW;
	if (seq < deadline && *vcnt == tc->n_ranks && vmin[0] == content && *vmax == content) {
		conclude(s, RS_SWITCHED, seq);
		return c;
	}
	if (seq >= deadline)
		conclude(s, RS_ABANDONED, UINT64_MAX);
	return c->prev;
}
