/* agree: the leader (rank 0) of a communicator's group, run by the service thread
 * (docs/agreement.md "Protocol").
 *
 * It admits HELLOs whose configuration matches its own and declares READY once every rank
 * joined (the join barrier); reduces epoch e into version e+1 once every rank's
 * contribution arrived (or collect_ns after the first did) and sends it as DATA; once
 * every rank acked it, closes the gate to it (CAS) and sends COMMIT. It is the arbiter of
 * every fallback point: a member that waited without a verdict asks it (REQUEST), a lost
 * member ends agreement at the first version not committed - what every survivor holds
 * and nobody can have activated beyond. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agree/agree_group.h"
#include "runtime/runtime.h"

/* All DATA a (late) joiner lacks: every produced, uncommitted version, in order. */
static void catch_up(struct agree_comm *ac, int fd)
{
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		uint64_t committed = atomic_load(&s->gate) & ~AGREE_GATE_FALLBACK;
		const uint8_t *prev = s->last ? s->last->data : NULL;
		for (uint64_t v = committed + 1; v <= s->produced; v++) {
			struct agree_version *ver = s->produced_ring[v % AGREE_PRODUCE_AHEAD];
			if (!ver)
				break;
			agree_send_data(ac, fd, s, i, ver, prev);
			prev = ver->data;
		}
	}
}

/* Sends this leader's fallback point to every live child (after the COMMITs of the
 * versions before it, which are ahead on each link). */
static void announce_fallback(struct agree_comm *ac, uint64_t f)
{
	for (uint32_t k = 0; k < ac->n_kids; k++) {
		struct agree_peer *p = ac->peers[ac->kids[k]];
		if (p && !p->gone) {
			agree_send_simple(ac, p->fd, AGREE_MSG_FALLBACK, agree_fallback_flags(ac), f);
			agree_conn_push(p->fd);
		}
	}
	ac->fallback_sent_seq = f;
	ac->group_dead = true;
}

/* Member r (a direct child, or a relay for its subtree) said BYE and closed - its
 * communicator was destroyed, it runs no more collectives: the ACKs it sent stand (it holds
 * those versions; it may have activated them by rule 3 while this leader was stopped).
 * Agreement ends at the activation of the first version it did not ack (0 before the join
 * barrier passed); the versions before that still commit once every other member acked
 * them (leader_commit counts a departed member's ACKs). Before (issue 23, the stopped
 * leader): the first close ended the group at the first activation not committed, S_v,
 * although every member had acked v and activated it - the ACKs of the others were on
 * links this pass had not read yet (run_agree.sh stopped_leader_departed). */
static uint64_t departed_f(struct agree_comm *ac, uint32_t r)
{
	if (atomic_load(&ac->ready) != AGREE_READY_YES)
		return 0;
	uint64_t best = UINT64_MAX;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		uint64_t a = s->rank_acked[r];
		uint64_t c = atomic_load(&s->gate) & ~AGREE_GATE_FALLBACK;
		uint64_t f = ((a > c ? a : c) + 2) * s->k; /* S_{a+1} */
		if (f < best)
			best = f;
	}
	return best;
}

/* The leader's own wait expired and no child said anything for half the bound, although
 * every child was handed version `need` (its DATA is in the kernel's hands on every link):
 * the leader is the one cut off, and its children, which acked it, activate it when they
 * get no verdict (agree_group.c handle_want). So does the leader: it commits what it
 * produced up to need. Not when a child is silent because its DATA is still queued here
 * (it acked nothing then, and falls back safely). */
static bool commit_isolated(struct agree_comm *ac, uint32_t idx, uint64_t need)
{
	struct agree_stream *s = &ac->streams[idx];
	uint64_t now = agree_now_ns();
	if (need > s->produced || now - ac->heard_ns < agree_config()->wait_ns / 2)
		return false;
	for (uint32_t k = 0; k < ac->n_kids; k++) {
		struct agree_peer *p = ac->peers[ac->kids[k]];
		if (!p || p->gone || agree_conn_queued(p->fd))
			return false;
	}
	for (;;) {
		uint64_t g = atomic_load(&s->gate);
		if (g & AGREE_GATE_FALLBACK)
			return false;
		if (g >= need)
			return true;
		struct agree_version *v = s->produced_ring[(g + 1) % AGREE_PRODUCE_AHEAD];
		s->produced_ring[(g + 1) % AGREE_PRODUCE_AHEAD] = NULL;
		if (!v || v->number != g + 1 || !agree_commit_version(ac, s, v))
			return false;
		struct agree_buf b = {0};
		size_t f = agree_wire_begin(&b, AGREE_MSG_COMMIT, 0, ac->comm_id);
		agree_buf_u32(&b, idx);
		agree_buf_u64(&b, g + 1);
		agree_wire_end(&b, f);
		for (uint32_t k = 0; k < ac->n_kids; k++)
			agree_conn_send(ac->peers[ac->kids[k]]->fd, &b);
		agree_buf_free(&b);
		runtime_log(NB_LOG_WARN, NB_LOG_TUNING, "agree: comm 0x%" PRIx64 " rank 0: no child "
			    "answered for %" PRIu64 " ms although each was sent version %" PRIu64
			    ": committed it (they hold it; if one did not, ranks decide differently from "
			    "collective %" PRIu64 ")", ac->comm_id, (now - ac->heard_ns) / 1000000,
			    g + 1, (g + 2) * s->k);
	}
}

void agree_leader_arbitrate(struct agree_comm *ac, uint64_t seq, uint32_t asker)
{
	uint32_t stream = 0;
	uint64_t need = 0;
	int what = agree_needs(ac, seq, &stream, &need);
	if (!what)
		return; /* committed: its COMMIT (READY) is on every link ahead of any answer */
	if (what == 2 && asker == agree_my_rank(ac) && commit_isolated(ac, stream, need))
		return;
	if (what == 2) {
		agree_fall_at(ac, seq, AGREE_WHY_TIMEOUT, asker, (uint32_t)need, NULL);
		return;
	}
	/* the join barrier: name the first direct child that has not joined */
	uint32_t first = 0, missing = 0;
	for (uint32_t k = 0; ac->peers && k < ac->n_kids; k++) {
		struct agree_peer *p = ac->peers[ac->kids[k]];
		if (!p || p->gone || !p->ready) {
			if (!missing++)
				first = ac->kids[k];
		}
	}
	if (missing)
		agree_fall_at(ac, 0, AGREE_WHY_MISSING, first, missing, NULL);
	else
		agree_fall_at(ac, 0, AGREE_WHY_TIMEOUT, asker, 0, NULL);
}

/* A rank that lost its parent (relay or link) and asks for the group's fallback point, or
 * one that joins again: agreement ends at the first version not committed; it is told F
 * (and whether the barrier passed). */
static bool admit_orphan(struct agree_comm *ac, int fd, uint32_t r)
{
	struct agree_peer *p = ac->peers[r];
	if (p && !p->gone && p->fd != fd) {
		/* its old link still looks alive here: it is not (the rank says so) */
		agree_conn_close(p->fd);
		p->gone = true;
		p->fd = -1;
	}
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return false;
		ac->peers[r] = p;
	}
	p->fd = fd;
	p->rank = r;
	p->gone = false;
	p->departed = false;
	p->orphan = true;
	uint32_t q = agree_tree_parent(r, ac->fanout);
	agree_end_group(ac, AGREE_WHY_LOST, q ? q : r, 0, NULL);
	uint32_t flags = atomic_load(&ac->ready) == AGREE_READY_YES ? AGREE_WELCOME_READY : 0;
	agree_send_simple(ac, fd, AGREE_MSG_WELCOME, flags, atomic_load(&ac->fallback_seq));
	return true;
}

bool agree_leader_on_msg(struct agree_comm *ac, int fd, const struct agree_msg *m)
{
	uint32_t r = m->h.rank;
	ac->heard_ns = agree_now_ns();
	if (m->h.type == AGREE_MSG_HELLO && r == AGREE_RANK_NONE) {
		/* a member (it proved the job's secret) that will never join: the join barrier
		 * fails, which is where it fell back itself (rankless_step) */
		agree_end_group(ac, AGREE_WHY_NORANK, 0, 0, NULL);
		agree_send_simple(ac, fd, AGREE_MSG_FALLBACK, agree_fallback_flags(ac),
				  atomic_load(&ac->fallback_seq));
		return false;
	}
	if (m->h.type == AGREE_MSG_HELLO) {
		if (r == 0 || r >= ac->n_ranks)
			return false;
		/* a first HELLO carries the configuration the rank joins with */
		if (!(m->flags & AGREE_HELLO_REJOIN) && !agree_child_config_ok(ac, fd, m))
			return false;
		/* a rank below a relay that lost it, or a rank whose link broke after it
		 * joined: it asks for F */
		if (agree_tree_parent(r, ac->fanout) != 0 || ac->peers[r])
			return admit_orphan(ac, fd, r);
		if (!agree_admit_child(ac, fd, m, true))
			return false;
		if (atomic_load(&ac->fallback_seq) == AGREE_NO_FALLBACK)
			catch_up(ac, fd);
		return true;
	}
	if (r == 0 || r >= ac->n_ranks || !ac->peers[r] || ac->peers[r]->gone ||
	    ac->peers[r]->fd != fd)
		return false; /* only a joined member may speak, on its own connection */
	if (ac->peers[r]->orphan) /* told F; its CONTRIB/ACK/BYE change nothing */
		return m->h.type != AGREE_MSG_BYE;
	bool is_relay = agree_tree_is_relay(r, ac->fanout, ac->n_ranks);
	switch (m->h.type) {
	case AGREE_MSG_READY: /* a relay's whole subtree joined */
		if (!is_relay)
			return false;
		ac->peers[r]->ready = true;
		return true;
	case AGREE_MSG_PARTIAL: {
		if (!is_relay || m->stream >= ac->n_streams)
			return false;
		struct agree_stream *s = &ac->streams[m->stream];
		if (agree_wire_check_entries(m, s->desc.max_entries, s->desc.value_size + 8) != 0 ||
		    m->done > agree_tree_subtree(r, ac->fanout, ac->n_ranks))
			return false;
		if (agree_apply_entries(ac, &s->rank_views[r], m) != 0)
			return true;
		if (m->number >= s->rank_epochs[r]) {
			s->rank_done[r] = m->number > s->rank_epochs[r] || m->done > s->rank_done[r] ?
					  m->done : s->rank_done[r];
			s->rank_epochs[r] = m->number;
		}
		return true;
	}
	case AGREE_MSG_LOST:
		if (!is_relay || m->lost >= ac->n_ranks || agree_tree_parent(m->lost, ac->fanout) != r)
			return false;
		if (m->reason & AGREE_FALLBACK_ORDERLY) /* it said BYE: the relay's ACKs stand */
			agree_end_group_at(ac, departed_f(ac, r), AGREE_WHY_DESTROYED, m->lost, 0,
					   NULL);
		else
			agree_end_group(ac, AGREE_WHY_LOST, m->lost, 0, NULL);
		return true;
	case AGREE_MSG_CONTRIB: /* a relay's contribution comes in its PARTIAL */
		return !is_relay && agree_apply_contrib(ac, r, m);
	case AGREE_MSG_ACK:
		return agree_apply_ack(ac, r, m);
	case AGREE_MSG_FALLBACK:
		if (m->reason & AGREE_FALLBACK_REQUEST)
			agree_note_request(ac, m); /* arbitrated by agree_leader_step */
		else
			agree_apply_fallback(ac, m);
		return true;
	case AGREE_MSG_BYE:
		ac->peer_bye = true; /* on_close: destroyed, not lost */
		return false;
	default:
		return false;
	}
}

void agree_leader_on_close(struct agree_comm *ac, int fd)
{
	for (uint32_t r = 1; ac->peers && r < ac->n_ranks; r++) {
		struct agree_peer *p = ac->peers[r];
		if (!p || p->gone || p->fd != fd)
			continue;
		p->gone = true;
		p->fd = -1;
		if (p->orphan) /* it was told F already */
			continue;
		/* after its BYE: its ACKs stand (departed_f) */
		if (ac->peer_bye) {
			ac->peer_bye = false;
			p->departed = true;
			agree_end_group_at(ac, departed_f(ac, r), AGREE_WHY_DESTROYED, r, 0, NULL);
			continue;
		}
		/* lost (no BYE: killed, cut off, or alive and asking again - it may have lost
		 * ACKs in flight): nothing commits without it any more: F = the first version not
		 * committed, which it holds (it acked everything committed) and nobody activated
		 * beyond. It asks for this F if it is alive (admit_orphan); after this rank's own
		 * destroy it is the job ending */
		agree_end_group(ac, atomic_load(&ac->closing) ? AGREE_WHY_DESTROYED : AGREE_WHY_LOST,
				r, 0, NULL);
	}
}

/* Direct children: all other ranks (flat), ranks 1..F-1 and the relays (tree leader),
 * the rest of the relay's block (relay). */
static bool kids_alloc(struct agree_comm *ac)
{
	uint32_t me = agree_my_rank(ac);
	ac->kids = calloc(ac->n_ranks, sizeof(uint32_t));
	if (!ac->kids)
		return false;
	ac->n_kids = 0;
	for (uint32_t r = 1; r < ac->n_ranks; r++)
		if (r != me && agree_tree_parent(r, ac->fanout) == me)
			ac->kids[ac->n_kids++] = r;
	return true;
}

bool agree_leader_alloc(struct agree_comm *ac)
{
	ac->peers = calloc(ac->n_ranks, sizeof(*ac->peers));
	if (!ac->peers || !kids_alloc(ac))
		return false;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		s->rank_views = calloc(ac->n_ranks, sizeof(*s->rank_views));
		s->reduce_cnt = calloc(s->desc.max_entries, sizeof(uint32_t));
		s->rank_epochs = calloc(ac->n_ranks, sizeof(uint64_t));
		s->rank_acked = calloc(ac->n_ranks, sizeof(uint64_t));
		s->produced_ring = calloc(AGREE_PRODUCE_AHEAD, sizeof(*s->produced_ring));
		if (!s->rank_views || !s->reduce_cnt || !s->rank_epochs || !s->rank_acked ||
		    !s->produced_ring)
			return false;
		if (ac->fanout) {
			size_t pb = (size_t)(s->desc.value_size + 8) * s->desc.max_entries;
			s->rank_done = calloc(ac->n_ranks, sizeof(uint32_t));
			s->part = calloc(1, pb);
			s->part_shipped = ac->relay ? calloc(1, pb) : NULL;
			if (!s->rank_done || !s->part || (ac->relay && !s->part_shipped))
				return false;
		}
	}
	return true;
}

static void leader_produce(struct agree_comm *ac, struct agree_stream *s, uint32_t idx,
			   uint64_t now)
{
	uint64_t committed = atomic_load(&s->gate) & ~AGREE_GATE_FALLBACK;
	if (s->produced - committed >= AGREE_PRODUCE_AHEAD - 1)
		return;
	uint64_t e = s->produced; /* epoch e makes version e + 1 */
	s->rank_epochs[0] = atomic_load_explicit(&s->closed_epoch, memory_order_acquire);
	uint32_t have = s->rank_epochs[0] > e;
	for (uint32_t k = 0; k < ac->n_kids; k++) {
		uint32_t r = ac->kids[k];
		if (!ac->fanout || !agree_tree_is_relay(r, ac->fanout, ac->n_ranks))
			have += s->rank_epochs[r] > e;
		else if (s->rank_epochs[r] > e) /* every member of r's subtree closed e */
			have += agree_tree_subtree(r, ac->fanout, ac->n_ranks);
		else if (s->rank_epochs[r] == e)
			have += s->rank_done[r];
	}
	if (have == 0)
		return;
	if (s->first_arrival_ns == 0)
		s->first_arrival_ns = now;
	uint64_t delay = agree_config()->fault_leader_delay_ns;
	if (delay && now - s->first_arrival_ns < delay)
		return; /* test-only: a slow leader */
	if (have < ac->n_ranks && now - s->first_arrival_ns < agree_config()->collect_ns)
		return;
	uint64_t c0 = agree_thread_cpu_ns();
	agree_snapshot(s, s->snap); /* the leader's own contribution */
	struct agree_version *v = agree_version_new(s, e + 1, NULL);
	if (!v) {
		agree_end_group(ac, AGREE_WHY_OOM, 0, 0, NULL);
		return;
	}
	if (!ac->fanout) {
		agree_reduce(&s->desc, v->data, s->reduce_cnt, s->snap, s->rank_views + 1,
			     ac->n_ranks - 1);
	} else { /* leaves' views count 1, relays' partials carry their counts */
		agree_partial_reset(&s->desc, s->part);
		agree_partial_add_dense(&s->desc, s->part, s->snap);
		for (uint32_t k = 0; k < ac->n_kids; k++) {
			uint32_t r = ac->kids[k];
			agree_partial_add_sparse(&s->desc, s->part, &s->rank_views[r],
						 agree_tree_is_relay(r, ac->fanout, ac->n_ranks));
		}
		agree_partial_finish(&s->desc, v->data, s->part, s->snap);
	}
	const uint8_t *prev = s->latest_number ? s->latest : NULL;
	struct agree_buf data = {0};
	agree_encode_data(ac, &data, s, idx, v, prev);
	for (uint32_t k = 0; k < ac->n_kids; k++) {
		struct agree_peer *p = ac->peers[ac->kids[k]];
		if (p && !p->gone)
			agree_conn_send(p->fd, &data);
	}
	agree_buf_free(&data);
	if (agree_config()->fault_hold_after_data == e + 1) {
		/* test-only: this process "stops" once DATA e+1 is on every child's socket (the
		 * pass's flush sends it; the hold starts at the top of the next pass) */
		agree_fault_hold_arm();
	}
	memcpy(s->latest, v->data, s->bytes);
	s->latest_number = v->number;
	free(s->produced_ring[v->number % AGREE_PRODUCE_AHEAD]);
	s->produced_ring[v->number % AGREE_PRODUCE_AHEAD] = v;
	s->produced = v->number;
	s->first_arrival_ns = 0;
	AGREE_STAT(epochs_reduced, 1);
	AGREE_STAT(leader_cpu_ns, agree_thread_cpu_ns() - c0);
}

/* Test-only (NCCLBPF_AGREE_TEST_FAULT kill_after_commit=N): the leader's process dies right
 * after COMMIT N reached every child's socket - a leader killed at a point it has told every
 * child or none, where a kill from outside lands at any moment, also inside the back-to-back
 * sends of one COMMIT (docs/agreement.md "What is not guaranteed"): that made the kill tests'
 * verdict depend on timing. */
static void fault_die_when_sent(struct agree_comm *ac)
{
	for (int i = 0; i < 5000; i++) { /* at most 5 s for a child's full receive buffer */
		size_t left = 0;
		for (uint32_t k = 0; k < ac->n_kids; k++) {
			if (ac->peers[ac->kids[k]]->gone)
				continue;
			agree_conn_push(ac->peers[ac->kids[k]]->fd);
			left += agree_conn_unsent(ac->peers[ac->kids[k]]->fd);
		}
		if (!left)
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	raise(SIGKILL);
}

/* Test-only (NCCLBPF_AGREE_TEST_FAULT kill_mid_commit=N / kill_mid_commit_last=N): the
 * leader or a relay is killed while it sends COMMIT N to its children back to back - after
 * the first (last) child's copy reached its socket, before the others': the window that
 * the survivors' recovery round closes (agree_recover.c). Returns only when the fault is
 * not armed for v. */
void agree_fault_mid_commit(struct agree_comm *ac, uint64_t v, const struct agree_buf *b)
{
	const struct agree_config *cfg = agree_config();
	if (!v || (cfg->fault_kill_mid_commit != v && cfg->fault_kill_mid_commit_last != v))
		return;
	int fd = -1;
	for (uint32_t k = 0; k < ac->n_kids; k++) {
		struct agree_peer *p = ac->peers[ac->kids[k]];
		if (p && !p->gone && (fd < 0 || cfg->fault_kill_mid_commit_last == v))
			fd = p->fd;
	}
	if (fd < 0)
		return;
	agree_conn_send(fd, b);
	for (int i = 0; i < 5000; i++) { /* at most 5 s for the child's full receive buffer */
		agree_conn_push(fd);
		if (!agree_conn_unsent(fd))
			break;
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	raise(SIGKILL);
}

static void leader_commit(struct agree_comm *ac, struct agree_stream *s, uint32_t idx)
{
	uint64_t stop = agree_config()->fault_no_commit_after;
	for (;;) {
		uint64_t g = atomic_load(&s->gate);
		if (g & AGREE_GATE_FALLBACK)
			return;
		uint64_t next = g + 1;
		if (next > s->produced || (stop && next > stop))
			return;
		for (uint32_t k = 0; k < ac->n_kids; k++) {
			const struct agree_peer *p = ac->peers[ac->kids[k]];
			/* a member that departed (BYE) counts with the ACKs it sent */
			if (!p || (p->gone && !p->departed) || s->rank_acked[ac->kids[k]] < next)
				return;
		}
		uint64_t c0 = agree_thread_cpu_ns();
		struct agree_version *v = s->produced_ring[next % AGREE_PRODUCE_AHEAD];
		s->produced_ring[next % AGREE_PRODUCE_AHEAD] = NULL;
		if (!v || v->number != next || !agree_commit_version(ac, s, v))
			return; /* fallback before its activation: v is not used */
		struct agree_buf b = {0}; /* encoded once, the same bytes to every follower */
		size_t f = agree_wire_begin(&b, AGREE_MSG_COMMIT, 0, ac->comm_id);
		agree_buf_u32(&b, idx);
		agree_buf_u64(&b, next);
		agree_wire_end(&b, f);
		agree_fault_mid_commit(ac, next, &b);
		/* sent now, back to back: a leader killed right after this reached all or none */
		for (uint32_t k = 0; k < ac->n_kids; k++)
			if (!ac->peers[ac->kids[k]]->gone)
				agree_conn_send(ac->peers[ac->kids[k]]->fd, &b);
		for (uint32_t k = 0; k < ac->n_kids; k++)
			if (!ac->peers[ac->kids[k]]->gone)
				agree_conn_push(ac->peers[ac->kids[k]]->fd);
		agree_buf_free(&b);
		AGREE_STAT(leader_cpu_ns, agree_thread_cpu_ns() - c0);
		if (agree_config()->fault_kill_after_commit == next)
			fault_die_when_sent(ac);
	}
}

/* The join barrier: every direct child joined (and each relay's subtree). */
static void leader_ready(struct agree_comm *ac)
{
	if (atomic_load(&ac->ready) != AGREE_READY_PENDING)
		return;
	for (uint32_t k = 0; k < ac->n_kids; k++) {
		struct agree_peer *p = ac->peers[ac->kids[k]];
		if (!p || p->gone || !p->ready)
			return;
	}
	int expect = AGREE_READY_PENDING;
	if (!atomic_compare_exchange_strong(&ac->ready, &expect, AGREE_READY_YES))
		return; /* this rank's own wait gave up first: the FALLBACK says so */
	for (uint32_t k = 0; k < ac->n_kids; k++)
		agree_send_simple(ac, ac->peers[ac->kids[k]]->fd, AGREE_MSG_READY, 0, 0);
	for (uint32_t k = 0; k < ac->n_kids; k++)
		agree_conn_push(ac->peers[ac->kids[k]]->fd);
}

void agree_leader_step(struct agree_comm *ac, uint64_t now)
{
	if (!ac->registered) {
		int rc = agree_hub_register(ac);
		if (rc == 0)
			ac->registered = true;
		else if (rc != -EAGAIN)
			agree_group_on_hub_refusal(ac, rc == -EEXIST ? AGREE_REFUSE_DUPLICATE
								     : AGREE_REFUSE_BUSY);
	}
	leader_ready(ac);
	uint64_t f = atomic_load(&ac->fallback_seq);
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		if (f == AGREE_NO_FALLBACK) /* after a fallback: only commits of earlier versions */
			leader_produce(ac, &ac->streams[i], i, now);
		leader_commit(ac, &ac->streams[i], i);
		agree_reclaim(&ac->streams[i]);
	}
	/* a request, after the commits every ACK read up to now allows */
	uint64_t seq;
	if (agree_take_request(ac, &seq)) {
		agree_leader_arbitrate(ac, seq, ac->arb_asker);
		f = atomic_load(&ac->fallback_seq);
	}
	if (f != AGREE_NO_FALLBACK && f != ac->fallback_sent_seq)
		announce_fallback(ac, f);
}
