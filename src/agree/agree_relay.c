/* agree: a relay of the fan-in tree (docs/agreement.md "Scale"), run by the service
 * thread. A relay is a follower of the leader (agree_group.c) and the leader of its
 * children: it keeps their contributions sparsely, ships one PARTIAL (their combination
 * with its own, with counts: agree_tree.c) per epoch, forwards DATA / COMMIT / FALLBACK
 * down and ACKs a version up only once every child acked it, so the leader's "acked by
 * all" still means every rank. A lost child stops its ACKs and is reported (LOST). */
#include <stdlib.h>
#include <string.h>

#include "agree/agree_group.h"

void agree_relay_forward(struct agree_comm *ac, const struct agree_buf *b)
{
	for (uint32_t k = 0; ac->relay && ac->peers && k < ac->n_kids; k++) {
		struct agree_peer *p = ac->peers[ac->kids[k]];
		if (p && !p->gone)
			agree_conn_send(p->fd, b);
	}
}

static void relay_ack(struct agree_comm *ac, struct agree_stream *s, uint32_t idx);

/* A child left: the relay acks nothing it did not hold (its ACK means "my whole subtree
 * holds v") and tells the leader (LOST). orderly: the child said BYE (its communicator was
 * destroyed): the leader logs it at INFO, and what it acked still counts - the relay acks
 * up first what the departed child's ACKs allow, so that the leader, which fixes F from
 * the relay's ACKs (leader_on_msg LOST), reads them before the LOST. */
void agree_relay_lost_child(struct agree_comm *ac, uint32_t r, bool orderly)
{
	for (uint32_t i = 0; orderly && ac->fd >= 0 && ac->joined && i < ac->n_streams; i++)
		relay_ack(ac, &ac->streams[i], i);
	/* after this relay's own destroy its BYE follows: the leader fixes the same F from
	 * its ACKs and logs the orderly end instead of a lost member */
	if (ac->fd >= 0 && ac->joined && !atomic_load(&ac->closing)) {
		struct agree_buf b = {0};
		size_t f = agree_wire_begin(&b, AGREE_MSG_LOST, agree_my_rank(ac), ac->comm_id);
		agree_buf_u32(&b, r);
		agree_buf_u32(&b, orderly ? AGREE_FALLBACK_ORDERLY : 0);
		agree_wire_end(&b, f);
		agree_conn_send(ac->fd, &b);
		agree_buf_free(&b);
	}
	ac->peer_bye = false;
}

/* Epochs closed by every member of the subtree, and how many closed the next one. */
static void relay_progress(struct agree_comm *ac, struct agree_stream *s, uint64_t *full,
			   uint32_t *done)
{
	uint64_t mine = atomic_load_explicit(&s->closed_epoch, memory_order_acquire);
	uint64_t lo = mine;
	for (uint32_t k = 0; k < ac->n_kids; k++)
		if (s->rank_epochs[ac->kids[k]] < lo)
			lo = s->rank_epochs[ac->kids[k]];
	uint32_t d = mine > lo;
	for (uint32_t k = 0; k < ac->n_kids; k++)
		d += s->rank_epochs[ac->kids[k]] > lo;
	*full = lo;
	*done = d;
}

static void relay_ship(struct agree_comm *ac, struct agree_stream *s, uint32_t idx, uint64_t now)
{
	uint64_t full;
	uint32_t done;
	relay_progress(ac, s, &full, &done);
	bool advanced = !s->part_sent_once || full > s->part_full_sent;
	bool more = full == s->part_full_sent && done > s->part_done_sent;
	/* one PARTIAL per epoch in steady state (the subtree's last contribution completes
	 * it); stragglers' partial progress goes up at most every collect window / 8 */
	if (!advanced && !(more && now - s->part_last_ns >= agree_config()->collect_ns / 8))
		return;
	uint64_t c0 = agree_thread_cpu_ns();
	const struct nb_map_agreed_desc *d = &s->desc;
	agree_snapshot(s, s->snap);
	agree_partial_reset(d, s->part);
	agree_partial_add_dense(d, s->part, s->snap);
	for (uint32_t k = 0; k < ac->n_kids; k++)
		agree_partial_add_sparse(d, s->part, &s->rank_views[ac->kids[k]], false);
	uint32_t es = d->value_size + 8;
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_PARTIAL, agree_my_rank(ac), ac->comm_id);
	agree_buf_u32(&b, idx);
	agree_buf_u64(&b, full);
	agree_buf_u32(&b, done);
	agree_buf_u32(&b, es);
	size_t count_off = b.len;
	agree_buf_u32(&b, 0);
	uint32_t n = agree_wire_put_delta(&b, s->part, s->part_shipped, d->max_entries, es, es);
	if (!b.oom) {
		memcpy(b.p + count_off, &n, 4);
		agree_wire_end(&b, f);
		agree_conn_send(ac->fd, &b);
		memcpy(s->part_shipped, s->part, (size_t)es * d->max_entries);
		s->part_full_sent = full;
		s->part_done_sent = done;
		s->part_sent_once = true;
		s->part_last_ns = now;
	}
	agree_buf_free(&b);
	AGREE_STAT(leader_cpu_ns, agree_thread_cpu_ns() - c0);
}

static void relay_ack(struct agree_comm *ac, struct agree_stream *s, uint32_t idx)
{
	uint64_t v = s->latest_number;
	for (uint32_t k = 0; k < ac->n_kids; k++) {
		struct agree_peer *p = ac->peers[ac->kids[k]];
		if (!p || (p->gone && !p->departed))
			return; /* not all joined, or one was lost: nothing newer is acked */
		if (s->rank_acked[ac->kids[k]] < v)
			v = s->rank_acked[ac->kids[k]];
	}
	if (v > s->acked_up) {
		agree_send_simple(ac, ac->fd, AGREE_MSG_ACK, idx, v);
		s->acked_up = v;
	}
}

void agree_relay_ready_down(struct agree_comm *ac)
{
	struct agree_buf b = {0};
	size_t o = agree_wire_begin(&b, AGREE_MSG_READY, agree_my_rank(ac), ac->comm_id);
	agree_wire_end(&b, o);
	agree_relay_forward(ac, &b);
	agree_buf_free(&b);
	for (uint32_t k = 0; ac->peers && k < ac->n_kids; k++) {
		struct agree_peer *p = ac->peers[ac->kids[k]];
		if (p && !p->gone)
			agree_conn_push(p->fd);
	}
}

void agree_relay_step(struct agree_comm *ac, uint64_t now)
{
	uint64_t f = atomic_load(&ac->fallback_seq);
	if (f != AGREE_NO_FALLBACK && f != ac->down_fallback_sent) {
		struct agree_buf b = {0};
		size_t o = agree_wire_begin(&b, AGREE_MSG_FALLBACK, agree_my_rank(ac), ac->comm_id);
		agree_wire_put_fallback(&b, f, agree_fallback_flags(ac), atomic_load(&ac->why),
					atomic_load(&ac->why_rank), atomic_load(&ac->why_detail));
		agree_wire_end(&b, o);
		agree_relay_forward(ac, &b);
		agree_buf_free(&b);
		ac->down_fallback_sent = f;
	}
	if (ac->fd < 0 || !ac->joined || ac->group_dead)
		return;
	if (!ac->ready_up_sent) { /* the join barrier: this subtree joined */
		for (uint32_t k = 0; k < ac->n_kids; k++) {
			struct agree_peer *p = ac->peers[ac->kids[k]];
			if (!p || p->gone)
				return;
		}
		agree_send_simple(ac, ac->fd, AGREE_MSG_READY, 0, 0);
		ac->ready_up_sent = true;
	}
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		if (f == AGREE_NO_FALLBACK)
			relay_ship(ac, &ac->streams[i], i, now);
		relay_ack(ac, &ac->streams[i], i);
	}
	/* only the leader decides: a child's request goes up as it came (the asker's rank in
	 * it), behind the ACKs that its subtree's links had delivered with it - the leader
	 * then reads those first on this link, whatever its own pass order */
	uint64_t seq;
	if (agree_take_request(ac, &seq) && ac->hello_sent) {
		struct agree_buf b = {0};
		size_t o = agree_wire_begin(&b, AGREE_MSG_FALLBACK, agree_my_rank(ac), ac->comm_id);
		agree_wire_put_fallback(&b, seq, ac->arb_reason, ac->arb_why, ac->arb_asker,
					ac->arb_detail);
		agree_wire_end(&b, o);
		agree_conn_send(ac->fd, &b);
		agree_buf_free(&b);
	}
}

/* Every version the relay holds and has not seen committed, for a joining child (nothing
 * commits before the whole subtree joined, so these start at version 1). */
static void relay_catch_up(struct agree_comm *ac, int fd)
{
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		uint64_t committed = atomic_load(&s->gate) & ~AGREE_GATE_FALLBACK;
		const uint8_t *prev = s->last ? s->last->data : NULL;
		for (uint64_t v = committed + 1; v <= s->latest_number; v++) {
			struct agree_version *ver = s->pending[v % s->pending_cap];
			if (!ver || ver->number != v)
				break;
			agree_send_data(ac, fd, s, i, ver, prev);
			prev = ver->data;
		}
	}
}

bool agree_relay_on_child_msg(struct agree_comm *ac, int fd, const struct agree_msg *m)
{
	uint32_t r = m->h.rank;
	if (m->h.type == AGREE_MSG_HELLO) {
		bool ok = r < ac->n_ranks && agree_tree_parent(r, ac->fanout) == agree_my_rank(ac);
		if (!agree_admit_child(ac, fd, m, ok))
			return false;
		if (atomic_load(&ac->fallback_seq) == AGREE_NO_FALLBACK)
			relay_catch_up(ac, fd);
		return true;
	}
	if (r >= ac->n_ranks || !ac->peers[r] || ac->peers[r]->gone || ac->peers[r]->fd != fd)
		return false;
	switch (m->h.type) {
	case AGREE_MSG_CONTRIB:
		return agree_apply_contrib(ac, r, m);
	case AGREE_MSG_ACK:
		return agree_apply_ack(ac, r, m);
	case AGREE_MSG_FALLBACK:
		if (m->reason & AGREE_FALLBACK_REQUEST) {
			agree_note_request(ac, m); /* passed up by agree_relay_step */
			return true;
		}
		/* a child fell back: up with this relay's own (follower_step), and down */
		agree_apply_fallback(ac, m);
		return true;
	case AGREE_MSG_BYE:
		ac->peer_bye = true;
		return false;
	default:
		return false;
	}
}

