/* agree: a direct child's messages as its parent - the leader (agree_group.c) or a relay
 * (agree_relay.c) - handles them: one implementation of HELLO admission, CONTRIB, ACK and
 * FALLBACK for both (service thread only). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agree/agree_internal.h"

bool agree_admit_child(struct agree_comm *ac, int fd, const struct agree_msg *m, bool rank_ok)
{
	uint32_t r = m->h.rank, reason = 0;
	if (!rank_ok || m->n_ranks != ac->n_ranks || ac->peers[r])
		reason = AGREE_REFUSE_RANK;
	else if (!agree_streams_match(ac, m))
		reason = AGREE_REFUSE_STREAMS;
	if (reason) {
		AGREE_STAT(msgs_refused, 1);
		agree_send_simple(ac, fd, AGREE_MSG_REFUSE, reason, 0);
		if (reason == AGREE_REFUSE_STREAMS) /* a real member that cannot agree */
			agree_end_group(ac, "a rank loaded different agreed maps");
		return false;
	}
	struct agree_peer *p = calloc(1, sizeof(*p));
	if (!p)
		return false;
	p->fd = fd;
	p->rank = r;
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
			agree_end_group(ac, "out of memory");
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
	/* the smallest F wins; a relay passes it up with its own (follower_step) and down */
	agree_comm_fallback(ac, m->seq, m->reason & AGREE_FALLBACK_ORDERLY ?
			    "a communicator was destroyed below" :
			    "a rank could not agree in time");
}
