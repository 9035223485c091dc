/* agree: a direct child's messages as its parent - the leader (agree_group.c) or a relay
 * (agree_relay.c) - handles them: one implementation of HELLO admission, CONTRIB, ACK and
 * FALLBACK for both (service thread only). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agree/agree_group.h"

bool agree_child_config_ok(struct agree_comm *ac, int fd, const struct agree_msg *m)
{
	uint64_t mine = 0;
	uint32_t field = agree_config_differs(ac, m, &mine);
	if (field == AGREE_FP_NONE)
		return true;
	/* a real member (it proved the job's secret) that would decide differently: nobody
	 * passes the join barrier; the refused rank and every other one say which part */
	AGREE_STAT(msgs_refused, 1);
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_REFUSE, agree_my_rank(ac), ac->comm_id);
	agree_buf_u32(&b, AGREE_REFUSE_CONFIG);
	agree_buf_u32(&b, field);
	agree_buf_u64(&b, mine);
	agree_wire_end(&b, f);
	agree_conn_send(fd, &b);
	agree_buf_free(&b);
	agree_end_group(ac, AGREE_WHY_CONFIG, m->h.rank, field, NULL);
	return false;
}

bool agree_admit_child(struct agree_comm *ac, int fd, const struct agree_msg *m, bool rank_ok)
{
	uint32_t r = m->h.rank;
	if (!rank_ok || r >= ac->n_ranks || ac->peers[r]) {
		AGREE_STAT(msgs_refused, 1);
		agree_send_simple(ac, fd, AGREE_MSG_REFUSE, AGREE_REFUSE_RANK, 0);
		return false;
	}
	if (!agree_child_config_ok(ac, fd, m))
		return false;
	struct agree_peer *p = calloc(1, sizeof(*p));
	if (!p)
		return false;
	p->fd = fd;
	p->rank = r;
	/* a leaf is all of its subtree; a relay says READY once its children joined */
	p->ready = !agree_tree_is_relay(r, ac->fanout, ac->n_ranks);
	ac->peers[r] = p;
	ac->joined_count++;
	agree_send_simple(ac, fd, AGREE_MSG_WELCOME, 0, atomic_load(&ac->fallback_seq));
	return true;
}

/* Applies the entries of a CONTRIB or PARTIAL (checked by the caller) to a child's sparse
 * view. -ENOMEM ends the group. */
int agree_apply_entries(struct agree_comm *ac, struct agree_sparse *view,
			const struct agree_msg *m)
{
	for (uint32_t k = 0; k < m->n_entries; k++) {
		const uint8_t *e = m->entries + (size_t)k * (4u + m->value_size);
		uint32_t idx;
		memcpy(&idx, e, 4);
		if (agree_sparse_set(view, m->value_size, idx, e + 4) != 0) {
			agree_end_group(ac, AGREE_WHY_OOM, 0, 0, NULL);
			return -ENOMEM;
		}
	}
	return 0;
}

bool agree_apply_contrib(struct agree_comm *ac, uint32_t r, const struct agree_msg *m)
{
	if (m->stream >= ac->n_streams)
		return false;
	struct agree_stream *s = &ac->streams[m->stream];
	if (agree_wire_check_entries(m, s->desc.max_entries, s->desc.value_size) != 0)
		return false;
	if (agree_apply_entries(ac, &s->rank_views[r], m) != 0)
		return true;
	if (m->number + 1 > s->rank_epochs[r])
		s->rank_epochs[r] = m->number + 1;
	return true;
}

bool agree_apply_ack(struct agree_comm *ac, uint32_t r, const struct agree_msg *m)
{
	if (m->stream >= ac->n_streams)
		return false;
	if (m->number > ac->streams[m->stream].rank_acked[r])
		ac->streams[m->stream].rank_acked[r] = m->number;
	return true;
}

void agree_apply_fallback(struct agree_comm *ac, const struct agree_msg *m)
{
	/* a child fell back (the smallest F wins; a relay passes it up with its own,
	 * follower_step, and down); its reason is the child's */
	agree_comm_fallback(ac, m->seq, m->why ? m->why : (m->reason & AGREE_FALLBACK_ORDERLY ?
			    AGREE_WHY_DESTROYED : AGREE_WHY_NONE), m->why ? m->why_rank : m->h.rank,
			    m->why_detail, NULL);
}
