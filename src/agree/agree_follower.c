/* agree: a follower of a communicator's group (a leaf, or a relay towards the leader), an
 * orphan (a member that lost its parent) and the member without a rank, run by the
 * service thread (docs/agreement.md "Protocol", "Fallback rules").
 *
 * A follower finds its parent through the hub, connects (authenticated), HELLOs with its
 * configuration; after WELCOME it waits for READY (the join barrier), ships a CONTRIB
 * whenever its tuner closes an epoch, ACKs every DATA, and makes a version visible to its
 * tuner on COMMIT (gate CAS, then link). A member that loses its parent asks the leader
 * for the group's fallback point (HELLO with AGREE_HELLO_REJOIN); when the leader itself is
 * gone it falls back after the last version it saw committed - what every survivor saw,
 * since the leader sends each COMMIT to all its children at once. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree/agree_group.h"
#include "agree/agree_recover.h"
#include "runtime/runtime.h"

void agree_relay_commit_down(struct agree_comm *ac, uint32_t idx, uint64_t v)
{
	struct agree_buf b = {0}; /* encoded once, the same bytes to every child */
	size_t f = agree_wire_begin(&b, AGREE_MSG_COMMIT, 0, ac->comm_id);
	agree_buf_u32(&b, idx);
	agree_buf_u64(&b, v);
	agree_wire_end(&b, f);
	agree_fault_mid_commit(ac, v, &b);
	agree_relay_forward(ac, &b);
	agree_buf_free(&b);
}

/* Commits the held versions gate+1 .. upto (a relay forwards each COMMIT to its
 * children, who hold them: it acked only what all of them held). */
static void commit_held(struct agree_comm *ac, struct agree_stream *s, uint32_t idx,
			uint64_t upto)
{
	uint64_t g = atomic_load(&s->gate) & ~AGREE_GATE_FALLBACK;
	for (uint64_t v = g + 1; v <= upto; v++) {
		uint32_t slot = (uint32_t)(v % s->pending_cap);
		struct agree_version *ver = s->pending[slot];
		if (!ver || ver->number != v)
			break;
		s->pending[slot] = NULL;
		if (!agree_commit_version(ac, s, ver))
			break;
		if (ac->relay)
			agree_relay_commit_down(ac, idx, v);
	}
}

/* The group ends without the leader's word: after the last version this rank saw
 * committed (0: the join barrier, if it did not see READY). Every survivor saw the same
 * COMMITs unless the leader died while sending one (docs/agreement.md). */
void agree_follower_lost_leader(struct agree_comm *ac, const char *why)
{
	ac->orphan_since_ns = 0;
	/* after this rank's own destroy, or its parent's, it is the job ending: INFO */
	bool orderly = ac->parent_bye || atomic_load(&ac->closing);
	agree_end_group(ac, orderly ? AGREE_WHY_DESTROYED : AGREE_WHY_LOST, 0, 0, orderly ?
			"the communicator was destroyed on its parent, and the leader is gone" : why);
}

/* The leader's process is gone (nothing listens at its address, or it closed on this
 * orphan): the survivors' recovery round when this rank takes part (agree_recover.c), else
 * the fallback after the last version this rank saw committed. */
static void leader_gone(struct agree_comm *ac, const char *why, uint64_t now)
{
	if (!agree_recover_start(ac, now))
		agree_follower_lost_leader(ac, why);
}

/* A member that lost its parent (the leader, its relay, or the link to either) cannot
 * tell what the others will do: it asks the leader, which answers with the group's F
 * (WELCOME). Its tuner waits (bounded) meanwhile like at any uncommitted activation. */
static void lost_parent(struct agree_comm *ac, const char *why, uint64_t now)
{
	uint64_t f = atomic_load(&ac->fallback_seq);
	if (f != AGREE_NO_FALLBACK && agree_first_uncommitted_seq(ac) >= f) {
		ac->group_dead = true; /* already holds everything before F */
		return;
	}
	runtime_log(NB_LOG_INFO, NB_LOG_TUNING, "agree: comm 0x%llx rank %u: %s; asking the "
		    "leader for the group's fallback point", (unsigned long long)ac->comm_id,
		    agree_my_rank(ac), why);
	if (ac->parent != 0) { /* the leader's listener: kept at join, else from the hub */
		ac->leader_addr = ac->lead_addr;
		ac->leader_port = ac->lead_port;
	}
	ac->parent = 0;
	ac->orphan = true;
	ac->joined = false;
	ac->next_try_ns = 0;
	ac->orphan_since_ns = now ? now : 1;
}

static void follower_ship(struct agree_comm *ac, struct agree_stream *s, uint32_t idx)
{
	uint64_t closed = atomic_load_explicit(&s->closed_epoch, memory_order_acquire);
	if (closed <= s->shipped_epochs)
		return;
	agree_snapshot(s, s->snap);
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_CONTRIB, agree_my_rank(ac), ac->comm_id);
	agree_buf_u32(&b, idx);
	agree_buf_u64(&b, closed - 1);
	agree_buf_u32(&b, s->desc.value_size);
	size_t count_off = b.len;
	agree_buf_u32(&b, 0);
	uint32_t n = agree_wire_put_delta(&b, s->snap, s->shipped, s->desc.max_entries,
					  s->desc.stride, s->desc.value_size);
	if (!b.oom) {
		memcpy(b.p + count_off, &n, 4); /* little-endian host (x86-64, aarch64) */
		agree_wire_end(&b, f);
		agree_conn_send(ac->fd, &b);
		memcpy(s->shipped, s->snap, s->bytes);
		s->shipped_epochs = closed;
	}
	agree_buf_free(&b);
}

/* Looks the parent up, connects, HELLOs (as an orphan: asks for F). */
static void follower_connect(struct agree_comm *ac, uint64_t now)
{
	if (ac->group_dead || now < ac->next_try_ns || agree_recover_waiting(ac))
		return;
	if (ac->orphan && now - ac->orphan_since_ns > agree_config()->wait_ns) {
		agree_follower_lost_leader(ac, "lost its parent, and the leader did not answer within "
				    "the bound");
		return;
	}
	ac->next_try_ns = now + agree_config()->retry_ns;
	int rc = ac->leader_port ? 0 : agree_hub_lookup(ac);
	if (rc == -ENXIO)
		agree_group_on_norank(ac);
	if (rc != 0 || !ac->leader_port)
		return;
	int fd = agree_conn_connect(ac->leader_addr, (uint16_t)ac->leader_port);
	if (fd < 0) {
		if (ac->orphan && fd == -ECONNREFUSED) {
			leader_gone(ac, "lost the leader (nothing listens at its address)", now);
			return;
		}
		ac->leader_port = 0; /* ask the hub again */
		return;
	}
	if (!agree_conn_register(fd, ac))
		return; /* retried later */
	ac->fd = fd;
	/* queued: sent once both sides proved the job's secret (agree_service.c) */
	agree_send_hello(ac, agree_my_rank(ac), ac->orphan ? AGREE_HELLO_REJOIN : 0);
}

void agree_follower_step(struct agree_comm *ac, uint64_t now)
{
	if (ac->relay && !ac->registered) {
		int rc = agree_hub_register(ac); /* its children look it up */
		if (rc == 0)
			ac->registered = true;
		else if (rc != -EAGAIN)
			agree_group_on_hub_refusal(ac, rc == -EEXIST ? AGREE_REFUSE_DUPLICATE
								     : AGREE_REFUSE_BUSY);
	}
	if (!ac->relay && !ac->registered && agree_recover_registers(ac) &&
	    agree_hub_register(ac) != -EAGAIN)
		ac->registered = true; /* the successor: the participants look it up */
	if (ac->relay)
		agree_relay_step(ac, now);
	agree_recover_step(ac, now);
	if (ac->fd < 0) {
		follower_connect(ac, now);
		return;
	}
	if (!ac->joined)
		return;
	uint64_t f = atomic_load(&ac->fallback_seq);
	if (f != AGREE_NO_FALLBACK && !ac->fallback_sent) {
		agree_send_simple(ac, ac->fd, AGREE_MSG_FALLBACK, agree_fallback_flags(ac), f);
		ac->fallback_sent = true;
	}
	uint64_t drop = agree_config()->fault_drop_after_epochs;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		if (!ac->relay) /* a relay's own contribution goes up in its PARTIAL */
			follower_ship(ac, &ac->streams[i], i);
		agree_reclaim(&ac->streams[i]);
		if (drop && ac->streams[i].shipped_epochs >= drop && ac->fd >= 0 && !ac->orphan) {
			/* test-only: the connection drops (docs/agreement.md "Testing"); FIN after
			 * everything sent, like a process that closes its socket */
			agree_conn_flush_close(ac->fd);
			ac->fd = -1;
			lost_parent(ac, "lost the connection to its parent (injected)", now);
			return;
		}
	}
}

/* Adopts the group's F (a living leader's WELCOME, or the survivors' decision): commits
 * the versions activating before F - this rank holds them (it acked them: nobody commits
 * without it) - and ends the group at F. */
void agree_follower_adopt(struct agree_comm *ac, uint64_t f, bool ready, uint32_t why,
			  uint32_t why_rank, uint32_t why_detail, const char *text)
{
	if (ready) {
		int r = AGREE_READY_PENDING;
		atomic_compare_exchange_strong(&ac->ready, &r, AGREE_READY_YES);
		if (ac->relay)
			agree_relay_ready_down(ac);
	}
	for (uint32_t i = 0; i < ac->n_streams && f; i++) {
		struct agree_stream *s = &ac->streams[i];
		/* the last v with S_v = (v + 1) K < F */
		uint64_t upto = (f - 1) / s->k >= 1 ? (f - 1) / s->k - 1 : 0;
		commit_held(ac, s, i, upto < s->latest_number ? upto : s->latest_number);
	}
	uint64_t u = agree_first_uncommitted_seq(ac);
	ac->orphan_since_ns = 0;
	agree_end_group_at(ac, u < f ? u : f, why, why_rank, why_detail, text);
}

static bool on_welcome(struct agree_comm *ac, const struct agree_msg *m)
{
	ac->joined = true;
	if (m->seq == AGREE_NO_FALLBACK)
		return true;
	bool ready = (m->flags & AGREE_WELCOME_READY) != 0;
	if (!ac->orphan) /* joined after the group fell back: the leader's reason */
		agree_follower_adopt(ac, m->seq, ready, m->why, m->why_rank, m->why_detail,
				     m->why ? NULL : "joined after the group fell back");
	else
		agree_follower_adopt(ac, m->seq, ready, AGREE_WHY_LOST, 0, 0, ac->parent_bye ?
				     "its parent's communicator was destroyed (the leader's "
				     "fallback point)" : "it lost its parent (the leader's fallback "
				     "point)");
	return true;
}

static void on_refuse(struct agree_comm *ac, const struct agree_msg *m)
{
	char why[320];
	if (ac->orphan && m->reason == AGREE_REFUSE_NOT_LEADER) {
		/* the leader destroyed the communicator meanwhile (the job's end) */
		agree_follower_lost_leader(ac, "the leader no longer has the communicator");
		return;
	}
	if (m->reason == AGREE_REFUSE_CONFIG)
		snprintf(why, sizeof(why), "rank %u's configuration differs from its parent's: %s "
			 "(here 0x%" PRIx64 ", there 0x%" PRIx64 ")", agree_my_rank(ac),
			 agree_fp_field_name(m->detail), m->detail == AGREE_FP_LIB ? ac->fp.lib :
			 m->detail == AGREE_FP_TUNER ? ac->fp.tuner :
			 m->detail == AGREE_FP_CHUNK ? ac->fp.chunk :
			 m->detail == AGREE_FP_WAIT ? ac->fp.wait_ms :
			 m->detail == AGREE_FP_FANOUT ? ac->fp.fanout :
			 m->detail == AGREE_FP_FLAGS ? ac->fp.flags :
			 m->detail == AGREE_FP_NRANKS ? ac->n_ranks : ac->n_streams, m->value);
	else
		snprintf(why, sizeof(why), "the leader refused this rank (reason %u%s)", m->reason,
			 m->reason == AGREE_REFUSE_RANK ? ": its rank joined already or is out of "
			 "range" : "");
	agree_end_group(ac, m->reason == AGREE_REFUSE_CONFIG ? AGREE_WHY_CONFIG : AGREE_WHY_RANK,
			agree_my_rank(ac), m->detail, why);
}

bool agree_follower_on_msg(struct agree_comm *ac, const struct agree_msg *m)
{
	if (ac->recov == AGREE_RECOV_REPORTING) { /* the link to the successor */
		if (m->h.type == AGREE_MSG_WELCOME)
			agree_recover_on_answer(ac, m);
		return false;
	}
	switch (m->h.type) {
	case AGREE_MSG_WELCOME:
		return on_welcome(ac, m);
	case AGREE_MSG_READY: { /* the join barrier passed */
		int r = AGREE_READY_PENDING;
		atomic_compare_exchange_strong(&ac->ready, &r, AGREE_READY_YES);
		if (ac->relay)
			agree_relay_ready_down(ac);
		return true;
	}
	case AGREE_MSG_REFUSE:
		on_refuse(ac, m);
		return false;
	case AGREE_MSG_BYE: /* the parent's communicator was destroyed */
		ac->parent_bye = true;
		ac->fd = -1; /* the service closes it (false below) */
		if (ac->parent == 0) /* the leader: the orderly end of the job; nothing to ask */
			agree_end_group(ac, AGREE_WHY_DESTROYED, 0, 0, "the communicator was "
					"destroyed on the leader");
		else
			lost_parent(ac, "the communicator was destroyed on its relay", agree_now_ns());
		return false;
	case AGREE_MSG_FALLBACK:
		/* keep the link: COMMITs of versions activating before F may still come */
		agree_comm_fallback(ac, m->seq, m->why ? m->why : (m->reason & AGREE_FALLBACK_ORDERLY
				    ? AGREE_WHY_DESTROYED : AGREE_WHY_NONE), m->why_rank,
				    m->why_detail, m->why ? NULL : m->reason & AGREE_FALLBACK_ORDERLY ?
				    "the leader announced it: a communicator was destroyed" :
				    "the leader announced it");
		return true;
	case AGREE_MSG_DATA: {
		if (m->stream >= ac->n_streams)
			return false;
		struct agree_stream *s = &ac->streams[m->stream];
		if (agree_wire_check_entries(m, s->desc.max_entries, s->desc.value_size) != 0 ||
		    m->number != s->latest_number + 1)
			return false;
		agree_wire_apply(s->latest, s->desc.stride, m);
		s->latest_number = m->number;
		struct agree_version *v = agree_version_new(s, m->number, s->latest);
		if (!v) {
			agree_end_group(ac, AGREE_WHY_OOM, 0, 0, NULL);
			return true;
		}
		uint32_t slot = (uint32_t)(m->number % s->pending_cap);
		free(s->pending[slot]);
		s->pending[slot] = v;
		if (!ac->relay) {
			agree_send_simple(ac, ac->fd, AGREE_MSG_ACK, m->stream, m->number);
			return true;
		}
		/* a relay forwards the entries unchanged and acks once its subtree holds v */
		struct agree_buf b = {0};
		size_t f = agree_wire_begin(&b, AGREE_MSG_DATA, 0, ac->comm_id);
		agree_buf_u32(&b, m->stream);
		agree_buf_u64(&b, m->number);
		agree_buf_u32(&b, m->value_size);
		agree_buf_u32(&b, m->n_entries);
		agree_buf_put(&b, m->entries, (size_t)m->n_entries * (4u + m->value_size));
		agree_wire_end(&b, f);
		agree_relay_forward(ac, &b);
		agree_buf_free(&b);
		return true;
	}
	case AGREE_MSG_COMMIT: {
		if (m->stream >= ac->n_streams)
			return false;
		struct agree_stream *s = &ac->streams[m->stream];
		if (m->number <= (atomic_load(&s->gate) & ~AGREE_GATE_FALLBACK))
			return true; /* an orphan committed it from WELCOME already */
		uint32_t slot = (uint32_t)(m->number % s->pending_cap);
		struct agree_version *v = s->pending[slot];
		if (!v || v->number != m->number)
			return false;
		s->pending[slot] = NULL;
		if (agree_commit_version(ac, s, v) && ac->relay)
			agree_relay_commit_down(ac, m->stream, m->number);
		return true;
	}
	default:
		return false;
	}
}

void agree_follower_on_close(struct agree_comm *ac)
{
	ac->fd = -1;
	if (ac->recov == AGREE_RECOV_COLLECTING)
		return; /* the refused link to the dead leader: this rank decides now */
	if (ac->orphan) { /* the leader closed on an orphan: it answered, or it is gone */
		if (!ac->group_dead)
			leader_gone(ac, "lost the leader while asking it for the fallback point", 0);
		return;
	}
	if (ac->joined && atomic_load(&ac->closing))
		/* its own communicator was destroyed: the parent's close is the orderly end of
		 * the job (the BYE of either side may still be in flight), not a lost member */
		agree_end_group(ac, AGREE_WHY_DESTROYED, agree_my_rank(ac), 0, "the parent closed "
				"the link after the communicator was destroyed here");
	else if (ac->joined || ac->hello_sent)
		/* the parent may have counted this rank: ask the leader what it decided */
		lost_parent(ac, ac->parent == 0 ? "lost the connection to the leader" :
			    "lost the connection to its relay", agree_now_ns());
	else
		ac->leader_port = 0; /* not joined yet: find the parent again (late start) */
}

/* ---------------------------------------------------------------- rankless ---- */

/* A member without a rank fell back at collective 0 already (setup_streams). It tells the
 * leader (HELLO with rank AGREE_RANK_NONE), which fails the join barrier, so the other
 * ranks need not wait out NCCLBPF_AGREE_WAIT_MS there. It tries for that long: after it
 * they have timed out anyway (and so they do where no leader ever registers: rank 0 itself
 * without the profiler - then the notice it leaves at the hub tells them). The leader
 * answers FALLBACK and closes. */
void agree_rankless_step(struct agree_comm *ac, uint64_t now)
{
	if (!ac->registered && !ac->group_dead && agree_hub_register(ac) == 0)
		ac->registered = true;
	if (ac->group_dead || ac->fd >= 0 || now < ac->next_try_ns)
		return;
	if (!ac->announce_until_ns)
		ac->announce_until_ns = now + agree_config()->wait_ns;
	if (now >= ac->announce_until_ns) {
		ac->group_dead = true;
		return;
	}
	ac->next_try_ns = now + agree_config()->retry_ns;
	if (!ac->leader_port && agree_hub_lookup(ac) != 0)
		return;
	if (!ac->leader_port)
		return;
	int fd = agree_conn_connect(ac->leader_addr, (uint16_t)ac->leader_port);
	if (fd < 0) {
		ac->leader_port = 0;
		return;
	}
	if (!agree_conn_register(fd, ac))
		return;
	ac->fd = fd;
	agree_send_hello(ac, AGREE_RANK_NONE, 0);
}

void agree_group_on_connect_error(struct agree_comm *ac, int fd, int err)
{
	/* an orphan whose leader's port refuses: the leader's process is gone */
	if (fd == ac->fd && ac->orphan && err == ECONNREFUSED && !ac->group_dead)
		leader_gone(ac, "lost the leader (nothing listens at its address)", 0);
}
