/* Reload activation across ranks through the agreement layer (runtime.h: the activation
 * seam; docs/control.md "Across ranks").
 *
 * With NCCLBPF_RELOAD_AGREE=1 (and the agreement layer on), three built-in agreed maps join
 * every communicator's agreement group (one entry each, epoch K = 16 collectives):
 *   ncclbpf_reload_min  MIN of {content, stage}   content = hash of the staged policy
 *   ncclbpf_reload_max  MAX of {content}          stage   = the rank's seq when it staged
 *   ncclbpf_reload_cnt  SUM of {1}                (ranks that staged something)
 * A reload (`ctl reload`, on every rank: `--all` on each node) stages the new chain gated
 * and contributes {content, stage, 1}. At each collective s, every rank reads the same
 * published view (the version active at s) and applies the same pure rule:
 *   cnt == n_ranks && min.content == max.content == content && s < min.stage + WINDOW
 *       -> switch from s on (sticky);
 *   s >= min.stage + WINDOW (someone staged WINDOW collectives ago, not everyone has)
 *       -> abandon: keep the old chain (sticky).
 * Because the view at s is identical on every rank, so is the verdict: all ranks of a
 * communicator switch at the same collective, or none does. A rank that never staged
 * contributes nothing, so the others abandon after WINDOW collectives. The control thread
 * polls: every communicator switched -> the old chain is retired; every one abandoned ->
 * the staged chain is freed. After either, the rank withdraws its contribution. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "agree/agree.h"
#include "maps/map.h"
#include "ncclbpf/policy.h"
#include "plugin/tuner/tuner.h"
#include "runtime/control.h"
#include "runtime/runtime.h"

#define RELOAD_EPOCH_LOG2 4
#define RELOAD_WINDOW 2048ull /* collectives: 128 epochs of 16 */
#define RELOAD_SLOTS 256
#define DETACH_CONTENT 0xde7ac4ull

struct reload_slot {
	_Atomic uint64_t comm_id; /* 0 = free */
	_Atomic uint32_t n_ranks;
	_Atomic uint64_t version, content;
	_Atomic uint64_t switch_at;
	_Atomic int state; /* RS_* */
};
enum { RS_IDLE, RS_PENDING, RS_SWITCHED, RS_ABANDONED };

static struct reload_slot slots[RELOAD_SLOTS];
static pthread_mutex_t slot_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nb_map *m_min, *m_max, *m_cnt;
static bool enabled;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void withdraw(uint64_t comm_id)
{
	uint64_t zero[2] = {0, 0};
	agree_contribute(comm_id, "ncclbpf_reload_min", 0, zero, 16);
	agree_contribute(comm_id, "ncclbpf_reload_max", 0, zero, 8);
	agree_contribute(comm_id, "ncclbpf_reload_cnt", 0, zero, 8);
}

/* Control thread, registry lock held: stage `version` on every multi-rank communicator.
 * The contribution itself is made by each communicator's tuner at its next collective
 * (tuner_reload_gate), which knows its seq: the stage point. */
static int ops_begin(uint64_t version, uint64_t content, void *arg)
{
	(void)arg;
	int managed = 0;
	if (!content)
		content = DETACH_CONTENT;
	pthread_mutex_lock(&slot_lock);
	for (int i = 0; i < RELOAD_SLOTS; i++) {
		struct reload_slot *s = &slots[i];
		if (!atomic_load(&s->comm_id) || atomic_load(&s->n_ranks) < 2)
			continue;
		atomic_store(&s->content, content);
		atomic_store(&s->switch_at, UINT64_MAX);
		atomic_store(&s->state, RS_PENDING);
		atomic_store(&s->version, version);
		managed++;
	}
	pthread_mutex_unlock(&slot_lock);
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
	if (!pending && (switched || abandoned)) {
		if (!switched)
			verdict = -1;
		else if (!abandoned)
			verdict = 1;
		else
			runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_TUNING,
				    "reload version %llu: %d communicator(s) switched, %d kept the old "
				    "policy (their ranks did not all stage it); both stay until the "
				    "next reload", (unsigned long long)version, switched, abandoned);
	}
	if (verdict) {
		for (int i = 0; i < RELOAD_SLOTS; i++) {
			struct reload_slot *s = &slots[i];
			uint64_t id = atomic_load(&s->comm_id);
			if (id && atomic_load(&s->version) == version) {
				atomic_store(&s->state, RS_IDLE);
				withdraw(id);
			}
		}
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
	e->u64(e, "versions_active", st.versions_active);
	e->u64(e, "waits", st.waits);
	e->u64(e, "wait_ns_max", st.wait_ns_max);
	e->u64(e, "fallbacks", st.fallbacks);
	e->u64(e, "bytes_sent", st.bytes_sent);
	e->u64(e, "bytes_received", st.bytes_received);
	e->u64(e, "msgs_refused", st.msgs_refused);
	e->u64(e, "epochs_reduced", st.epochs_reduced);
	e->u64(e, "decisions_logged", st.decisions_logged);
}

static void create_maps(void)
{
	runtime_status_provider("agreement", agreement_status);
	const char *a = getenv("NCCLBPF_AGREE"), *r = getenv("NCCLBPF_RELOAD_AGREE");
	if (!r || strcmp(r, "1") || (a && !strcmp(a, "off")))
		return;
	struct nb_map_spec specs[3] = {
		{"ncclbpf_reload_min", NB_MAP_TYPE_ARRAY, 4, 16, 1,
		 NCCLBPF_AGREED(NCCLBPF_AGREE_MIN, RELOAD_EPOCH_LOG2)},
		{"ncclbpf_reload_max", NB_MAP_TYPE_ARRAY, 4, 8, 1,
		 NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, RELOAD_EPOCH_LOG2)},
		{"ncclbpf_reload_cnt", NB_MAP_TYPE_ARRAY, 4, 8, 1,
		 NCCLBPF_AGREED(NCCLBPF_AGREE_SUM, RELOAD_EPOCH_LOG2)},
	};
	struct nb_map **out[3] = {&m_min, &m_max, &m_cnt};
	char err[256];
	for (int i = 0; i < 3; i++) {
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
	pthread_mutex_lock(&slot_lock);
	for (int i = 0; i < RELOAD_SLOTS; i++) {
		if (!atomic_load(&slots[i].comm_id)) {
			atomic_store(&slots[i].n_ranks, tc->n_ranks);
			atomic_store(&slots[i].state, RS_IDLE);
			atomic_store(&slots[i].version, 0);
			atomic_store(&slots[i].comm_id, tc->comm_id);
			tc->reload_slot = i;
			break;
		}
	}
	pthread_mutex_unlock(&slot_lock);
}

void tuner_reload_comm_close(struct tuner_comm *tc)
{
	if (tc->reload_slot < 0)
		return;
	pthread_mutex_lock(&slot_lock);
	struct reload_slot *s = &slots[tc->reload_slot];
	/* a communicator leaving mid-activation counts as having kept the old policy */
	if (atomic_load(&s->state) == RS_PENDING)
		atomic_store(&s->state, RS_ABANDONED);
	atomic_store(&s->comm_id, 0);
	pthread_mutex_unlock(&slot_lock);
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
	if (atomic_load_explicit(&s->version, memory_order_relaxed) != c->version)
		return c->prev;
	int st = atomic_load_explicit(&s->state, memory_order_relaxed);
	uint64_t at = atomic_load_explicit(&s->switch_at, memory_order_relaxed);
	if (st == RS_SWITCHED || (st == RS_IDLE && at != UINT64_MAX))
		return seq >= at ? c : c->prev;
	if (st != RS_PENDING)
		return c->prev;
	uint64_t content = atomic_load_explicit(&s->content, memory_order_relaxed);
	if (!tc->reload_staged || tc->reload_staged_version != c->version) {
		/* first collective since the stage: contribute {content, stage seq, 1} */
		uint64_t mn[2] = {content, seq ? seq : 1}, one = 1;
		if (agree_contribute(tc->comm_id, "ncclbpf_reload_min", 0, mn, 16) == 0 &&
		    agree_contribute(tc->comm_id, "ncclbpf_reload_max", 0, &content, 8) == 0 &&
		    agree_contribute(tc->comm_id, "ncclbpf_reload_cnt", 0, &one, 8) == 0) {
			tc->reload_staged = true; /* else: again at the next collective */
			tc->reload_staged_version = c->version;
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
			atomic_store_explicit(&s->state, RS_ABANDONED, memory_order_release);
		return c->prev;
	}
	uint64_t deadline = vmin[1] + RELOAD_WINDOW;
	if (seq < deadline && *vcnt == tc->n_ranks && vmin[0] == content && *vmax == content) {
		atomic_store_explicit(&s->switch_at, seq, memory_order_release);
		atomic_store_explicit(&s->state, RS_SWITCHED, memory_order_release);
		return c;
	}
	if (seq >= deadline)
		atomic_store_explicit(&s->state, RS_ABANDONED, memory_order_release);
	return c->prev;
}
