/* agree: the group protocol of one communicator, run by the service thread
 * (docs/agreement.md "Protocol"): what the leader (agree_leader.c), the followers and
 * relays (agree_follower.c, agree_relay.c) share, the dispatch by role, and the verdict a
 * waiting tuner asks for.
 *
 * Join: every member HELLOs its parent with its configuration fingerprint; the leader
 * declares READY once every rank joined alike, and no rank runs the policy before (the
 * join barrier at collective 0). Versions: the leader reduces epoch e into version e+1,
 * sends it as DATA, commits it (gate CAS, then COMMIT) once every rank holds it. The leader
 * is the one arbiter: every fallback point comes from its decisions (a gate CAS against
 * its own commit), or from what a member can prove without it (it never acked what the
 * leader would need) - never from when a timer fired on one rank (issue 23). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agree/agree_internal.h"
#include "agree/agree_group.h"
#include "agree/agree_recover.h"
#include "runtime/runtime.h"

uint64_t agree_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t agree_my_rank(const struct agree_comm *ac)
{
	int r = atomic_load(&ac->rank);
	return r < 0 ? 0 : (uint32_t)r;
}

uint32_t agree_fallback_flags(struct agree_comm *ac)
{
	return atomic_load(&ac->fallback_orderly) ? AGREE_FALLBACK_ORDERLY : 0;
}

void agree_send_simple(struct agree_comm *ac, int fd, enum agree_msg_type t, uint32_t stream,
		       uint64_t number)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, t, agree_my_rank(ac), ac->comm_id);
	if (t == AGREE_MSG_WELCOME) {
		agree_buf_u64(&b, number);
		agree_buf_u32(&b, stream); /* flags */
		agree_buf_u32(&b, atomic_load(&ac->why)); /* why the group fell back, if it did */
		agree_buf_u32(&b, atomic_load(&ac->why_rank));
		agree_buf_u32(&b, atomic_load(&ac->why_detail));
	} else if (t == AGREE_MSG_FALLBACK) {
		/* this rank's fallback, with its reason (the first one it logged) */
		agree_wire_put_fallback(&b, number, stream, atomic_load(&ac->why),
					atomic_load(&ac->why_rank), atomic_load(&ac->why_detail));
	} else if (t == AGREE_MSG_REFUSE) {
		agree_buf_u32(&b, stream);
	} else if (t != AGREE_MSG_BYE && t != AGREE_MSG_READY) {
		agree_buf_u32(&b, stream);
		agree_buf_u64(&b, number);
	}
	agree_wire_end(&b, f);
	agree_conn_send(fd, &b);
	agree_buf_free(&b);
}

struct agree_version *agree_version_new(const struct agree_stream *s, uint64_t number,
					const uint8_t *data)
{
	struct agree_version *v = malloc(sizeof(*v) + s->bytes);
	if (!v)
		return NULL;
	v->number = number;
	v->activation = (number + 1) * s->k;
	atomic_init(&v->next, NULL);
	if (data)
		memcpy(v->data, data, s->bytes);
	return v;
}

/* Makes committed version v visible to the tuner. The version is linked into the list
 * first and the gate moved after (release), so a tuner that sees gate >= v always finds v
 * in the list (regression: the reverse order let a tuner see the gate, miss the version and
 * continue on the previous one - a divergence test_agree_group caught under ASan). false
 * when the gate is closed (the tuner's timeout or a fallback got there first): v stays
 * linked but is never activated. */
bool agree_commit_version(struct agree_comm *ac, struct agree_stream *s, struct agree_version *v)
{
	if (v->activation >= atomic_load(&ac->fallback_seq)) {
		free(v);
		return false;
	}
	if (s->last)
		atomic_store_explicit(&s->last->next, v, memory_order_release);
	else
		atomic_store_explicit(&s->first, v, memory_order_release);
	s->last = v;
	uint64_t expect = v->number - 1;
	return atomic_compare_exchange_strong(&s->gate, &expect, v->number);
}

/* Frees versions older than the tuner's active one (it never reads them again). */
void agree_reclaim(struct agree_stream *s)
{
	uint64_t active = atomic_load_explicit(&s->active_number, memory_order_acquire);
	struct agree_version *v = atomic_load(&s->first);
	while (v && v->number < active) {
		struct agree_version *n = atomic_load(&v->next);
		if (!n)
			break;
		atomic_store(&s->first, n);
		free(v);
		v = n;
	}
}

void agree_snapshot(const struct agree_stream *s, uint8_t *dst)
{
	const uint64_t *src = (const uint64_t *)(const void *)s->contrib;
	uint64_t *d = (uint64_t *)(void *)dst;
	for (size_t i = 0; i < s->bytes / 8; i++)
		d[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

/* No further agreement: fall back from F on (versions before F still activate). F = 0
 * closes the join barrier too. */
void agree_end_group_at(struct agree_comm *ac, uint64_t f, uint32_t why, uint32_t why_rank,
			uint32_t why_detail, const char *text)
{
	ac->group_dead = true;
	if (f == 0) {
		int r = AGREE_READY_PENDING;
		atomic_compare_exchange_strong(&ac->ready, &r, AGREE_READY_FAILED);
	}
	agree_comm_fallback(ac, f, why, why_rank, why_detail, text); /* the smallest F wins */
}

void agree_end_group(struct agree_comm *ac, uint32_t why, uint32_t why_rank, uint32_t why_detail,
		     const char *text)
{
	agree_end_group_at(ac, agree_first_uncommitted_seq(ac), why, why_rank, why_detail, text);
}

/* HELLO against this node's own configuration: the first field that differs, or
 * AGREE_FP_NONE; *theirs / *mine its values (for the messages). */
uint32_t agree_config_differs(const struct agree_comm *ac, const struct agree_msg *m,
			      uint64_t *mine)
{
	const struct agree_fingerprint *a = &ac->fp, *b = &m->fp;
	*mine = 0;
	if (m->n_ranks != ac->n_ranks)
		return *mine = ac->n_ranks, AGREE_FP_NRANKS;
	bool streams = m->n_streams == ac->n_streams;
	for (uint32_t i = 0; streams && i < ac->n_streams; i++) {
		const struct nb_map_agreed_desc *d = &ac->streams[i].desc;
		streams = m->streams[i].name_hash == agree_fnv1a(d->name, strlen(d->name),
								  AGREE_FNV_INIT) &&
			  m->streams[i].value_size == d->value_size &&
			  m->streams[i].max_entries == d->max_entries &&
			  m->streams[i].map_flags == d->map_flags;
	}
	if (!streams)
		return *mine = ac->n_streams, AGREE_FP_STREAMS;
	if (a->lib != b->lib)
		return *mine = a->lib, AGREE_FP_LIB;
	if (a->tuner != b->tuner && a->tuner != AGREE_FP_ACTIVATING &&
	    b->tuner != AGREE_FP_ACTIVATING)
		return *mine = a->tuner, AGREE_FP_TUNER;
	if (a->chunk != b->chunk && a->chunk != AGREE_FP_ACTIVATING &&
	    b->chunk != AGREE_FP_ACTIVATING)
		return *mine = a->chunk, AGREE_FP_CHUNK;
	if (a->wait_ms != b->wait_ms)
		return *mine = a->wait_ms, AGREE_FP_WAIT;
	if (a->fanout != b->fanout)
		return *mine = a->fanout, AGREE_FP_FANOUT;
	if (a->flags != b->flags)
		return *mine = a->flags, AGREE_FP_FLAGS;
	return AGREE_FP_NONE;
}

void agree_send_hello(struct agree_comm *ac, uint32_t rank, uint32_t flags)
{
	struct agree_stream_sig sig[AGREE_MAX_STREAMS];
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		const struct nb_map_agreed_desc *d = &ac->streams[i].desc;
		sig[i] = (struct agree_stream_sig){agree_fnv1a(d->name, strlen(d->name),
							       AGREE_FNV_INIT),
						   d->value_size, d->max_entries, d->map_flags};
	}
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_HELLO, rank, ac->comm_id);
	agree_wire_put_hello(&b, ac->n_ranks, flags, ac->n_streams, sig, &ac->fp);
	agree_wire_end(&b, f);
	agree_conn_send(ac->fd, &b);
	agree_buf_free(&b);
	ac->hello_sent = true;
}

void agree_send_data(struct agree_comm *ac, int fd, struct agree_stream *s, uint32_t idx,
		     const struct agree_version *v, const uint8_t *prev)
{
	struct agree_buf b = {0};
	agree_encode_data(ac, &b, s, idx, v, prev);
	agree_conn_send(fd, &b);
	agree_buf_free(&b);
}

/* Encodes DATA(v) as a delta against prev; the same bytes go to every follower. */
void agree_encode_data(struct agree_comm *ac, struct agree_buf *b, struct agree_stream *s,
		       uint32_t idx, const struct agree_version *v, const uint8_t *prev)
{
	size_t f = agree_wire_begin(b, AGREE_MSG_DATA, 0, ac->comm_id);
	agree_buf_u32(b, idx);
	agree_buf_u64(b, v->number);
	agree_buf_u32(b, s->desc.value_size);
	size_t count_off = b->len;
	agree_buf_u32(b, 0);
	uint32_t n = agree_wire_put_delta(b, v->data, prev, s->desc.max_entries, s->desc.stride,
					  s->desc.value_size);
	if (!b->oom) {
		memcpy(b->p + count_off, &n, 4);
		agree_wire_end(b, f);
	}
}

/* ------------------------------------------------------------- the verdict ---- */

void agree_note_request(struct agree_comm *ac, const struct agree_msg *m)
{
	if (ac->arb_seq != AGREE_NO_FALLBACK && m->seq <= ac->arb_seq)
		return; /* the same point (noted in an earlier pass), or one committed already */
	ac->arb_seq = m->seq;
	ac->arb_asker = m->why_rank;
	ac->arb_reason = m->reason;
	ac->arb_why = m->why;
	ac->arb_detail = m->why_detail;
	ac->arb_pass = agree_service_loops();
}

bool agree_take_request(struct agree_comm *ac, uint64_t *seq)
{
	if (ac->arb_seq == AGREE_NO_FALLBACK || !agree_service_drained(ac->arb_pass))
		return false;
	*seq = ac->arb_seq;
	ac->arb_seq = AGREE_NO_FALLBACK;
	return true;
}

/* A member that acked version `need` (it holds it, and every version before) and got no
 * verdict within the bound, with its link to the leader alive: the leader committed it
 * unless another rank did not ack - but then that rank is the faulty one, this one's
 * requests were answered by the leader, and it would not be here. Cut off itself (its
 * network blocked, the leader's COMMIT stuck on the way) or with a stopped or cut-off
 * leader (which commits what all acked: agree_leader.c commit_isolated), it activates what
 * it holds: the decision the leader takes in those cases. */
static bool activate_held(struct agree_comm *ac, uint32_t idx, uint64_t need)
{
	struct agree_stream *s = &ac->streams[idx];
	uint64_t g = atomic_load(&s->gate);
	if (g & AGREE_GATE_FALLBACK)
		return false;
	for (uint64_t v = (g & ~AGREE_GATE_FALLBACK) + 1; v <= need; v++) {
		uint32_t slot = (uint32_t)(v % s->pending_cap);
		struct agree_version *ver = s->pending[slot];
		if (!ver || ver->number != v)
			return false;
		s->pending[slot] = NULL;
		if (!agree_commit_version(ac, s, ver))
			return false;
		if (ac->relay)
			agree_relay_commit_down(ac, idx, v);
	}
	runtime_log(NB_LOG_WARN, NB_LOG_TUNING, "agree: comm 0x%" PRIx64 " rank %u: no verdict "
		    "from the leader within %" PRIu64 " ms on version %" PRIu64 " of '%s', which "
		    "this rank acked: activated it, as the leader does when it holds every rank's "
		    "ACK (if it fell back instead, ranks decide differently from collective %"
		    PRIu64 ")", ac->comm_id, agree_my_rank(ac), agree_config()->wait_ns / 1000000,
		    need, s->desc.name, (need + 1) * s->k);
	return true;
}

/* The tuner waits at want_seq without a verdict (agree_core.c wait_for). Phase 1: a
 * member that the leader may have counted (it sent HELLO, or acked the version) asks the
 * leader to decide (FALLBACK with AGREE_FALLBACK_REQUEST); the leader's answer is a COMMIT
 * or READY already on the link, or a FALLBACK at want_seq. Phase 2: decide here, after
 * this pass read what the peers sent. A member that the leader cannot have counted falls
 * back safely: the leader cannot commit without it. One that could have been counted and
 * got no answer within the bound falls back too - the one timer-made decision left, and
 * only when the leader does not answer at all (docs/agreement.md "What is not
 * guaranteed"). The leader decides for itself at phase 2 (it is the arbiter). */
static void handle_want(struct agree_comm *ac)
{
	int phase = atomic_load_explicit(&ac->want_phase, memory_order_acquire);
	uint64_t seq = atomic_load(&ac->want_seq);
	/* after the group ended a member has nobody to ask; the leader still decides its own
	 * wait for a version activating before F (it stays committable: agree_fall_at) */
	if (!phase || seq == UINT64_MAX || (ac->group_dead && ac->role != AGREE_ROLE_LEADER))
		return;
	if (agree_recover_waiting(ac))
		return; /* the survivors' round decides (bounded: agree_recover_step) */
	if (ac->want_done_seq == seq && ac->want_done >= phase)
		return;
	if (phase >= 2) {
		/* decide only after a pass that began after the deadline was seen read every
		 * connection: a verdict (or, at the leader, the ACKs) that reached this process
		 * while it was stopped counts, whatever the pass it resumed in had read */
		if (ac->want_seen_key != seq + 1) {
			ac->want_seen_key = seq + 1;
			ac->want_seen_pass = agree_service_loops();
		}
		if (!agree_service_drained(ac->want_seen_pass))
			return;
	}
	ac->want_done_seq = seq;
	ac->want_done = phase;
	uint32_t stream = 0;
	uint64_t need = 0;
	int what = agree_needs(ac, seq, &stream, &need);
	if (!what)
		return; /* committed meanwhile */
	if (ac->role == AGREE_ROLE_LEADER) {
		if (phase >= 2)
			agree_leader_arbitrate(ac, seq, agree_my_rank(ac));
		return;
	}
	bool counted = ac->orphan || (what == 1 ? ac->hello_sent
				      : ac->relay ? ac->streams[stream].acked_up >= need
						  : ac->streams[stream].latest_number >= need);
	if (counted && phase == 1 && ac->fd >= 0 && ac->hello_sent && ac->asked_seq != seq) {
		struct agree_buf b = {0};
		size_t f = agree_wire_begin(&b, AGREE_MSG_FALLBACK, agree_my_rank(ac), ac->comm_id);
		agree_wire_put_fallback(&b, seq, AGREE_FALLBACK_REQUEST, AGREE_WHY_TIMEOUT,
					agree_my_rank(ac), (uint32_t)need);
		agree_wire_end(&b, f);
		agree_conn_send(ac->fd, &b);
		agree_buf_free(&b);
		ac->asked_seq = seq;
	}
	if (phase < 2)
		return;
	if (counted && what == 2 && !ac->orphan && activate_held(ac, stream, need))
		return;
	char text[384];
	uint64_t ms = agree_config()->wait_ns / 1000000;
	if (what == 1 && !counted)
		snprintf(text, sizeof(text), "could not join within %" PRIu64 " ms: %s", ms,
			 ac->auth_why[0] ? ac->auth_why
			 : agree_hub_refused() ? "the rendezvous hub refused this process's secret"
			 : ac->leader_port ? "the leader did not answer"
					   : "no leader (rank 0) registered at the rendezvous");
	else if (!counted)
		snprintf(text, sizeof(text), "version %" PRIu64 " of '%s' did not arrive within %"
			 PRIu64 " ms (the leader cannot commit it without this rank)", need,
			 ac->streams[stream].desc.name, ms);
	else
		snprintf(text, sizeof(text), "no verdict from the leader within %" PRIu64 " ms on %s "
			 "%" PRIu64 ", which this rank holds (the leader did not answer: if it committed "
			 "it meanwhile, ranks decide differently from collective %" PRIu64 ")", ms,
			 what == 1 ? "the join barrier at collective" : "version",
			 what == 1 ? seq : need, seq);
	agree_fall_at(ac, seq, AGREE_WHY_TIMEOUT, agree_my_rank(ac), (uint32_t)need, text);
}

/* ------------------------------------------------------------------ common ---- */

static bool stream_alloc(struct agree_comm *ac)
{
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		s->shipped = calloc(1, s->bytes);
		s->snap = calloc(1, s->bytes);
		s->latest = calloc(1, s->bytes);
		s->pending_cap = AGREE_PRODUCE_AHEAD;
		s->pending = calloc(s->pending_cap, sizeof(*s->pending));
		if (!s->shipped || !s->snap || !s->latest || !s->pending)
			return false;
	}
	return true;
}

void agree_group_step(struct agree_comm *ac, uint64_t now)
{
	if (ac->role == AGREE_ROLE_NONE && ac->rankless) {
		ac->role = AGREE_ROLE_RANKLESS; /* parent 0: it looks up the leader */
		ac->parent = 0;
	}
	if (ac->role == AGREE_ROLE_RANKLESS) {
		agree_rankless_step(ac, now);
		return;
	}
	if (ac->role == AGREE_ROLE_NONE) {
		ac->role = atomic_load(&ac->rank) == 0 ? AGREE_ROLE_LEADER : AGREE_ROLE_FOLLOWER;
		/* the same on every rank: n_ranks and NCCLBPF_AGREE_FANOUT (compared at join) */
		ac->fanout = ac->fp.fanout;
		ac->parent = agree_tree_parent(agree_my_rank(ac), ac->fanout);
		ac->relay = ac->role == AGREE_ROLE_FOLLOWER &&
			    agree_tree_is_relay(agree_my_rank(ac), ac->fanout, ac->n_ranks);
		if (!stream_alloc(ac) ||
		    ((ac->role == AGREE_ROLE_LEADER || ac->relay) && !agree_leader_alloc(ac))) {
			ac->role = AGREE_ROLE_FOLLOWER; /* stays idle: group_dead */
			agree_end_group(ac, AGREE_WHY_OOM, 0, 0, NULL);
			return;
		}
		if (ac->fanout && (ac->relay || ac->role == AGREE_ROLE_LEADER))
			runtime_log(NB_LOG_INFO, NB_LOG_TUNING, "agree: comm 0x%llx rank %u: fan-in "
				    "tree, fan-out %u, %u direct children%s",
				    (unsigned long long)ac->comm_id, agree_my_rank(ac), ac->fanout, ac->n_kids,
				    ac->relay ? " (relay)" : " (leader)");
	}
	if (ac->role == AGREE_ROLE_LEADER)
		agree_leader_step(ac, now);
	else
		agree_follower_step(ac, now);
	handle_want(ac);
}

bool agree_group_on_msg(struct agree_comm *ac, int fd, const struct agree_msg *m, bool *adopt)
{
	(void)adopt;
	if (ac->role == AGREE_ROLE_RANKLESS)
		return false; /* the leader's FALLBACK: this rank fell back there already */
	if (ac->role == AGREE_ROLE_LEADER)
		return agree_leader_on_msg(ac, fd, m);
	if (ac->role == AGREE_ROLE_FOLLOWER && fd == ac->fd)
		return agree_follower_on_msg(ac, m);
	if (ac->role == AGREE_ROLE_FOLLOWER &&
	    (m->h.type == AGREE_MSG_RECOVER || agree_recover_owns(ac, fd)))
		return agree_recover_on_msg(ac, fd, m);
	if (ac->role == AGREE_ROLE_FOLLOWER && ac->relay && ac->peers)
		return agree_relay_on_child_msg(ac, fd, m);
	return false;
}

void agree_group_on_close(struct agree_comm *ac, int fd)
{
	if (ac->role == AGREE_ROLE_RANKLESS) {
		if (fd == ac->fd) { /* announced (or the leader is gone): nothing more to do */
			ac->fd = -1;
			ac->group_dead = true;
		}
		return;
	}
	if (ac->role == AGREE_ROLE_LEADER) {
		agree_leader_on_close(ac, fd);
		return;
	}
	if (fd != ac->fd) {
		agree_recover_on_close(ac, fd);
		for (uint32_t k = 0; ac->relay && k < ac->n_kids; k++) {
			struct agree_peer *p = ac->peers[ac->kids[k]];
			if (p && !p->gone && p->fd == fd) {
				p->gone = true;
				p->departed = ac->peer_bye;
				p->fd = -1;
				agree_relay_lost_child(ac, p->rank, ac->peer_bye);
			}
		}
		return;
	}
	agree_follower_on_close(ac);
}

void agree_group_on_norank(struct agree_comm *ac)
{
	/* nothing ever commits without that member: the join barrier fails on every rank */
	if (ac->role == AGREE_ROLE_FOLLOWER || ac->role == AGREE_ROLE_LEADER)
		agree_end_group(ac, AGREE_WHY_NORANK, 0, 0, "a rank without ncclbpf's profiler "
				"plugin is a member (the rendezvous hub says so): it has no rank and "
				"cannot join (or a process that holds two ranks of the "
				"communicator)");
}

void agree_group_on_auth_failure(struct agree_comm *ac, const char *why)
{
	snprintf(ac->auth_why, sizeof(ac->auth_why), "%s", why);
}

void agree_group_on_hub_refusal(struct agree_comm *ac, uint32_t reason)
{
	if (reason == AGREE_REFUSE_BUSY) {
		ac->registered = false; /* the directory is full: asked again */
		return;
	}
	agree_end_group(ac, AGREE_WHY_HUB, 0, 0, reason == AGREE_REFUSE_DUPLICATE ?
			"another process registered this communicator's rank at the rendezvous "
			"hub (two processes with the same rank?)" :
			"the rendezvous hub refused this communicator");
}

void agree_group_detach(struct agree_comm *ac)
{
	if (ac->role == AGREE_ROLE_RANKLESS && ac->fd >= 0) {
		agree_conn_close(ac->fd);
		ac->fd = -1;
	}
	if (ac->role == AGREE_ROLE_RANKLESS && ac->registered)
		agree_hub_unregister_local(ac->comm_id); /* its notice, when this is the hub */
	if (ac->role == AGREE_ROLE_FOLLOWER && ac->fd >= 0) {
		agree_send_simple(ac, ac->fd, AGREE_MSG_BYE, 0, 0);
		agree_conn_flush_close(ac->fd);
		ac->fd = -1;
	}
	if (ac->role == AGREE_ROLE_LEADER || ac->relay || agree_recover_registers(ac))
		agree_hub_unregister_local(ac->comm_id);
	agree_recover_free(ac);
	if ((ac->role == AGREE_ROLE_LEADER || ac->relay) && ac->peers) {
		for (uint32_t r = 1; r < ac->n_ranks; r++)
			if (ac->peers[r]) {
				if (!ac->peers[r]->gone) {
					agree_send_simple(ac, ac->peers[r]->fd, AGREE_MSG_BYE, 0, 0);
					agree_conn_flush_close(ac->peers[r]->fd);
				}
				free(ac->peers[r]);
			}
	}
	free(ac->peers);
	ac->peers = NULL;
	free(ac->kids);
	ac->kids = NULL;
	ac->n_kids = 0;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		free(s->shipped);
		free(s->snap);
		free(s->latest);
		for (uint32_t k = 0; s->pending && k < s->pending_cap; k++)
			free(s->pending[k]);
		free(s->pending);
		for (uint32_t r = 0; s->rank_views && r < ac->n_ranks; r++)
			agree_sparse_free(&s->rank_views[r]);
		free(s->rank_views);
		free(s->reduce_cnt);
		s->reduce_cnt = NULL;
		free(s->rank_epochs);
		free(s->rank_acked);
		free(s->rank_done);
		free(s->part);
		free(s->part_shipped);
		s->rank_done = NULL;
		s->part = s->part_shipped = NULL;
		for (uint32_t k = 0; s->produced_ring && k < AGREE_PRODUCE_AHEAD; k++)
			free(s->produced_ring[k]);
		free(s->produced_ring);
		s->shipped = s->snap = s->latest = NULL;
		s->rank_views = NULL;
		s->pending = NULL;
		s->produced_ring = NULL;
		s->rank_epochs = s->rank_acked = NULL;
	}
}
