/* agree: what the parts of the group protocol share (service thread only): agree_group.c
 * (common, dispatch, verdicts), agree_leader.c, agree_follower.c (followers, orphans, the
 * member without a rank), agree_relay.c, agree_child.c. */
#ifndef NCCLBPF_AGREE_GROUP_H
#define NCCLBPF_AGREE_GROUP_H

#include "agree/agree_internal.h"

#define AGREE_PRODUCE_AHEAD 16 /* produced-but-uncommitted versions a leader keeps */

struct agree_version *agree_version_new(const struct agree_stream *s, uint64_t number,
					const uint8_t *data);
bool agree_commit_version(struct agree_comm *ac, struct agree_stream *s, struct agree_version *v);
void agree_reclaim(struct agree_stream *s);
void agree_end_group_at(struct agree_comm *ac, uint64_t f, uint32_t why, uint32_t why_rank,
			uint32_t why_detail, const char *text);
/* The first field of a HELLO's configuration that differs from this node's
 * (AGREE_FP_NONE: none); *mine: this node's value of it. */
uint32_t agree_config_differs(const struct agree_comm *ac, const struct agree_msg *m,
			      uint64_t *mine);
void agree_send_hello(struct agree_comm *ac, uint32_t rank, uint32_t flags);
void agree_encode_data(struct agree_comm *ac, struct agree_buf *b, struct agree_stream *s,
		       uint32_t idx, const struct agree_version *v, const uint8_t *prev);

/* leader (agree_leader.c); also a relay's allocation */
bool agree_leader_alloc(struct agree_comm *ac);
void agree_leader_step(struct agree_comm *ac, uint64_t now);
bool agree_leader_on_msg(struct agree_comm *ac, int fd, const struct agree_msg *m);
void agree_leader_on_close(struct agree_comm *ac, int fd);
/* A member (asker) waited at seq without a verdict: fall back at seq unless what seq needs
 * is committed (its COMMIT or READY is then ahead of any answer on every link). */
void agree_leader_arbitrate(struct agree_comm *ac, uint64_t seq, uint32_t asker);

/* A FALLBACK request (m) read now, decided (leader) or passed up (relay) later: only
 * after a later pass read every connection, so that the ACKs and commits that had arrived
 * with it count first - the answer is a function of what the members sent, not of the
 * order one pass read their links in (issue 23: a leader resumed after a stop arbitrated
 * the first request it read before the other ranks' ACKs). The newest seq is kept: an
 * older one is answered already (its asker's peers passed it, so it is committed). */
void agree_note_request(struct agree_comm *ac, const struct agree_msg *m);
/* The noted request once that pass came (its seq in *seq; the rest stays in ac->arb_*). */
bool agree_take_request(struct agree_comm *ac, uint64_t *seq);

/* test-only: dies after COMMIT v (encoded in b) reached one child (agree_leader.c) */
void agree_fault_mid_commit(struct agree_comm *ac, uint64_t v, const struct agree_buf *b);

/* follower (agree_follower.c) */
void agree_follower_step(struct agree_comm *ac, uint64_t now);
bool agree_follower_on_msg(struct agree_comm *ac, const struct agree_msg *m);
void agree_follower_on_close(struct agree_comm *ac);
/* No further agreement without the leader: after the last version this rank saw committed. */
void agree_follower_lost_leader(struct agree_comm *ac, const char *why);
/* The group's F from a living leader's WELCOME or the survivors' recovery round. */
void agree_follower_adopt(struct agree_comm *ac, uint64_t f, bool ready, uint32_t why,
			  uint32_t why_rank, uint32_t why_detail, const char *text);
void agree_rankless_step(struct agree_comm *ac, uint64_t now);
/* a relay: COMMIT of version v of stream idx to its children */
void agree_relay_commit_down(struct agree_comm *ac, uint32_t idx, uint64_t v);

#endif
