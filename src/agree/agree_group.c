/* agree: the group protocol of one communicator, run by the service thread
 * (docs/agreement.md "Protocol").
 *
 * Follower: find the leader through the hub, connect, HELLO; after WELCOME ship a
 * CONTRIB (delta of its contribution) whenever its tuner closes an epoch; ACK every DATA;
 * on COMMIT make the version visible to the tuner (gate CAS, then link it).
 * Leader: accept HELLOs; reduce epoch e into version e+1 once every rank's contribution
 * for e arrived (or collect_ns after the first did); send it as DATA; once every rank
 * acked it, close the gate to it (CAS) and send COMMIT. A version is committed only when
 * every rank holds its bytes, so at activation every rank that has the commit uses the
 * same bytes; a rank without it waits, then falls back, and the leader falls back at
 * the same seq.
 * Any member lost after joining, a refused member, or a fallback reported by any rank
 * ends agreement: FALLBACK(F) with F = the first activation seq not committed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "agree/agree_internal.h"
#include "runtime/runtime.h"

#define PRODUCE_AHEAD 16 /* produced-but-uncommitted versions the leader keeps */


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
	size_t f = agree_wire_begin(&b, t, agree_my_rank(ac), ac->comm_id, ac->token);
	if (t == AGREE_MSG_WELCOME) {
		agree_buf_u64(&b, number);
	} else if (t == AGREE_MSG_FALLBACK) {
		agree_buf_u64(&b, number);
		agree_buf_u32(&b, stream); /* flags */
	} else if (t == AGREE_MSG_REFUSE) {
		agree_buf_u32(&b, stream);
	} else if (t != AGREE_MSG_BYE) {
		agree_buf_u32(&b, stream);
		agree_buf_u64(&b, number);
	}
	agree_wire_end(&b, f);
	agree_conn_send(fd, &b);
	agree_buf_free(&b);
}

static struct agree_version *version_new(const struct agree_stream *s, uint64_t number,
					 const uint8_t *data)
{
	struct agree_version *v = malloc(sizeof(*v) + s->bytes);
	if (!v)
		return NULL;
	v->number = number;
	v->activation = (number + 1) * s->k;
	atomic_init(&v->next, NULL);
	memcpy(v->data, data, s->bytes);
	return v;
}

/* Makes committed version v visible to the tuner. The version is linked into the list
 * first and the gate moved after (release), so a tuner that sees gate >= v always finds v
 * in the list (regression: the reverse order let a tuner see the gate, miss the version and
 * continue on the previous one - a divergence test_agree_group caught under ASan). false
 * when the gate is closed (the tuner's timeout or a fallback got there first): v stays
 * linked but is never activated. */
static bool commit_version(struct agree_comm *ac, struct agree_stream *s,
			   struct agree_version *v)
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
static void reclaim(struct agree_stream *s)
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

/* No further agreement: fall back from F on (versions before F still activate). */
static void end_group_at(struct agree_comm *ac, uint64_t f, const char *why)
{
	ac->group_dead = true;
	agree_comm_fallback(ac, f, why); /* the smallest F wins */
}

void agree_end_group(struct agree_comm *ac, const char *why)
{
	end_group_at(ac, agree_first_uncommitted_seq(ac), why);
}

/* A follower that lost its leader after joining: every version it received and acked may
 * have been committed (the leader commits what all ranks acked, and still does after
 * losing this rank), so it activates all of them and falls back after the last one. The
 * leader computes the same F from this rank's last ACKs (leader_on_close). */
static void send_commit_down(struct agree_comm *ac, uint32_t idx, uint64_t v)
{
	struct agree_buf b = {0}; /* encoded once, the same bytes to every child */
	size_t f = agree_wire_begin(&b, AGREE_MSG_COMMIT, 0, ac->comm_id, ac->token);
	agree_buf_u32(&b, idx);
	agree_buf_u64(&b, v);
	agree_wire_end(&b, f);
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
		if (!commit_version(ac, s, ver))
			break;
		if (ac->relay)
			send_commit_down(ac, idx, v);
	}
}

static void follower_lost_leader(struct agree_comm *ac, const char *why)
{
	uint64_t f = UINT64_MAX;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		/* what this rank acked upward: a leaf acks every DATA at once; a relay acks
		 * what its whole subtree holds (the leader sees the same number) */
		uint64_t acked = ac->relay ? s->acked_up : s->latest_number;
		commit_held(ac, s, i, acked);
		uint64_t fs = (acked + 2) * s->k; /* S of the first version not acked */
		if (fs < f)
			f = fs;
	}
	end_group_at(ac, f, why);
}

/* A child of a relay that lost its relay (or its link to it) cannot tell which of the
 * versions it acked the relay acked upward: it asks the leader, which answers with the
 * group's F (WELCOME) - the first version the relay did not ack. Until then its tuner
 * waits (bounded) like at any uncommitted activation. */
static void lost_parent(struct agree_comm *ac, const char *why)
{
	if (ac->parent == 0 || ac->relay) {
		follower_lost_leader(ac, why);
		return;
	}
	uint64_t f = atomic_load(&ac->fallback_seq);
	if (f != AGREE_NO_FALLBACK && agree_first_uncommitted_seq(ac) >= f) {
		ac->group_dead = true; /* already holds everything before F */
		return;
	}
	runtime_log(NB_LOG_INFO, NB_LOG_TUNING, "agree: comm 0x%llx rank %u: %s; asking the leader for the "
	       "group's fallback point", (unsigned long long)ac->comm_id, agree_my_rank(ac), why);
	ac->parent = 0;
	ac->orphan = true;
	ac->joined = false;
	ac->leader_port = 0;
	ac->next_try_ns = 0;
}

/* ---------------------------------------------------------------- follower ---- */

static void follower_hello(struct agree_comm *ac, uint32_t rank)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_HELLO, rank, ac->comm_id, ac->token);
	agree_buf_u32(&b, ac->n_ranks);
	agree_buf_u32(&b, ac->n_streams);
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		const struct nb_map_agreed_desc *d = &ac->streams[i].desc;
		agree_buf_u64(&b, agree_fnv1a(d->name, strlen(d->name), AGREE_FNV_INIT));
		agree_buf_u32(&b, d->value_size);
		agree_buf_u32(&b, d->max_entries);
		agree_buf_u32(&b, d->map_flags);
	}
	agree_wire_end(&b, f);
	agree_conn_send(ac->fd, &b);
	agree_buf_free(&b);
}

static void follower_ship(struct agree_comm *ac, struct agree_stream *s, uint32_t idx)
{
	uint64_t closed = atomic_load_explicit(&s->closed_epoch, memory_order_acquire);
	if (closed <= s->shipped_epochs)
		return;
	agree_snapshot(s, s->snap);
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_CONTRIB, agree_my_rank(ac), ac->comm_id, ac->token);
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

static void follower_step(struct agree_comm *ac, uint64_t now)
{
	if (ac->relay && !ac->registered) {
		int rc = agree_hub_register(ac); /* its children look it up */
		if (rc == 0)
			ac->registered = true;
		else if (rc != -EAGAIN)
			agree_end_group(ac, "the rendezvous hub has this communicator from another job");
	}
	if (ac->relay)
		agree_relay_step(ac, now);
	if (ac->fd < 0) {
		if (ac->group_dead || now < ac->next_try_ns)
			return;
		ac->next_try_ns = now + 20000000ull;
		int rc = ac->leader_port ? 0 : agree_hub_lookup(ac);
		if (rc == -ENXIO)
			agree_group_on_norank(ac);
		if (rc != 0 || !ac->leader_port)
			return;
		int fd = agree_conn_connect(ac->leader_addr, (uint16_t)ac->leader_port);
		if (fd < 0) {
			ac->leader_port = 0; /* ask the hub again */
			return;
		}
		if (!agree_conn_register(fd, ac))
			return; /* retried later */
		ac->fd = fd;
		follower_hello(ac, agree_my_rank(ac));
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
		reclaim(&ac->streams[i]);
		if (drop && ac->streams[i].shipped_epochs >= drop && ac->fd >= 0) {
			/* test-only: the connection drops (docs/agreement.md "Testing"); FIN after
			 * everything sent, like a process that closes its socket */
			agree_conn_flush_close(ac->fd);
			ac->fd = -1;
			lost_parent(ac, "lost the connection to its parent (injected)");
			return;
		}
	}
}

static bool follower_on_msg(struct agree_comm *ac, const struct agree_msg *m)
{
	switch (m->h.type) {
	case AGREE_MSG_WELCOME:
		ac->joined = true;
		if (m->seq != AGREE_NO_FALLBACK) {
			/* every version before F is committed at the leader (or will be: it
			 * acked them all); this rank holds them if it acked them (an orphan) */
			for (uint32_t i = 0; i < ac->n_streams; i++) {
				struct agree_stream *s = &ac->streams[i];
				/* the last v with S_v = (v + 1) K < F */
				uint64_t upto = (m->seq - 1) / s->k >= 1 ? (m->seq - 1) / s->k - 1 : 0;
				commit_held(ac, s, i, upto < s->latest_number ? upto : s->latest_number);
			}
			uint64_t u = agree_first_uncommitted_seq(ac);
			/* a relay that said BYE ended orderly (its communicator destroyed) */
			end_group_at(ac, u < m->seq ? u : m->seq, !ac->orphan ?
				     "joined after the group fell back" : ac->parent_bye ?
				     "its relay's communicator was destroyed (the leader's "
				     "fallback point)" :
				     "its relay was lost (the leader's fallback point)");
		}
		return true;
	case AGREE_MSG_REFUSE: {
		char why[96];
		snprintf(why, sizeof(why), "the leader refused this rank (reason %u)", m->reason);
		agree_end_group(ac, why);
		return false;
	}
	case AGREE_MSG_BYE: /* the parent's communicator was destroyed */
		ac->parent_bye = true;
		lost_parent(ac, "the communicator was destroyed on its parent");
		return false;
	case AGREE_MSG_FALLBACK:
		/* keep the link: COMMITs of versions activating before F may still come */
		agree_comm_fallback(ac, m->seq, m->reason & AGREE_FALLBACK_ORDERLY ?
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
		struct agree_version *v = version_new(s, m->number, s->latest);
		if (!v) {
			agree_end_group(ac, "out of memory");
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
		size_t f = agree_wire_begin(&b, AGREE_MSG_DATA, 0, ac->comm_id, ac->token);
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
		if (commit_version(ac, s, v) && ac->relay)
			send_commit_down(ac, m->stream, m->number);
		return true;
	}
	default:
		return false;
	}
}

/* ---------------------------------------------------------------- rankless ---- */

/* A member without a rank fell back at S_1 already (setup_streams). It tells the leader
 * (HELLO with rank AGREE_RANK_NONE), which ends agreement at the same collective, so the
 * other ranks need not wait out NCCLBPF_AGREE_WAIT_MS there. It tries for that long: after
 * it they have timed out at S_1 anyway (and so they do where no leader ever registers: rank
 * 0 itself without the profiler). The leader answers FALLBACK and closes. */
static void rankless_step(struct agree_comm *ac, uint64_t now)
{
	/* the hub tells everyone who looks a parent up (agree_group_on_norank): where no
	 * leader ever registers (rank 0 itself has no rank), the others learn it there */
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
	ac->next_try_ns = now + 20000000ull;
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
	follower_hello(ac, AGREE_RANK_NONE);
}

void agree_group_on_norank(struct agree_comm *ac)
{
	/* nothing ever commits without that member, so this is S_1 on every rank */
	if (ac->role == AGREE_ROLE_FOLLOWER || ac->role == AGREE_ROLE_LEADER)
		agree_end_group(ac, "a rank without ncclbpf's profiler plugin is a member (the "
				"rendezvous hub says so): it has no rank and cannot join");
}

/* ------------------------------------------------------------------ leader ---- */

bool agree_streams_match(const struct agree_comm *ac, const struct agree_msg *m)
{
	if (m->n_streams != ac->n_streams)
		return false;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		const struct nb_map_agreed_desc *d = &ac->streams[i].desc;
		if (m->streams[i].name_hash != agree_fnv1a(d->name, strlen(d->name), AGREE_FNV_INIT) ||
		    m->streams[i].value_size != d->value_size ||
		    m->streams[i].max_entries != d->max_entries || m->streams[i].map_flags != d->map_flags)
			return false;
	}
	return true;
}

/* Encodes DATA(v) as a delta against prev once; the same bytes go to every follower. */
static void encode_data(struct agree_comm *ac, struct agree_buf *b, struct agree_stream *s,
			uint32_t idx, const struct agree_version *v, const uint8_t *prev)
{
	size_t f = agree_wire_begin(b, AGREE_MSG_DATA, 0, ac->comm_id, ac->token);
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

void agree_send_data(struct agree_comm *ac, int fd, struct agree_stream *s, uint32_t idx,
		      const struct agree_version *v, const uint8_t *prev)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_DATA, 0, ac->comm_id, ac->token);
	agree_buf_u32(&b, idx);
	agree_buf_u64(&b, v->number);
	agree_buf_u32(&b, s->desc.value_size);
	size_t count_off = b.len;
	agree_buf_u32(&b, 0);
	uint32_t n = agree_wire_put_delta(&b, v->data, prev, s->desc.max_entries, s->desc.stride,
					  s->desc.value_size);
	if (!b.oom) {
		memcpy(b.p + count_off, &n, 4);
		agree_wire_end(&b, f);
		agree_conn_send(fd, &b);
	}
	agree_buf_free(&b);
}

/* All DATA a (late) joiner lacks: every produced, uncommitted version, in order. */
static void catch_up(struct agree_comm *ac, int fd)
{
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		uint64_t committed = atomic_load(&s->gate) & ~AGREE_GATE_FALLBACK;
		const uint8_t *prev = s->last ? s->last->data : NULL;
		for (uint64_t v = committed + 1; v <= s->produced; v++) {
			struct agree_version *ver = s->produced_ring[v % PRODUCE_AHEAD];
			if (!ver)
				break;
			agree_send_data(ac, fd, s, i, ver, prev);
			prev = ver->data;
		}
	}
}

/* S of the first version direct child q did not ack: a lost leaf activates every version
 * it acked; a relay's subtree holds every version the relay acked. */
static uint64_t relay_fallback_seq(const struct agree_comm *ac, uint32_t q)
{
	uint64_t f = UINT64_MAX;
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		const struct agree_stream *s = &ac->streams[i];
		uint64_t fs = (s->rank_acked[q] + 2) * s->k;
		if (fs < f)
			f = fs;
	}
	return f;
}

static bool leader_on_msg(struct agree_comm *ac, int fd, const struct agree_msg *m)
{
	uint32_t r = m->h.rank;
	if (m->h.type == AGREE_MSG_HELLO && r == AGREE_RANK_NONE) {
		/* a member (it knows the job token) that will never join: nothing commits
		 * without it, so this is S_1, where it fell back itself (rankless_step) */
		end_group_at(ac, agree_first_uncommitted_seq(ac), "a rank without ncclbpf's "
			     "profiler plugin is a member: it has no rank and cannot join");
		agree_send_simple(ac, fd, AGREE_MSG_FALLBACK, agree_fallback_flags(ac),
				  atomic_load(&ac->fallback_seq));
		return false;
	}
	if (m->h.type == AGREE_MSG_HELLO && ac->fanout && r > 0 && r < ac->n_ranks &&
	    m->n_ranks == ac->n_ranks && agree_tree_parent(r, ac->fanout) != 0 && !ac->peers[r]) {
		/* a rank below a relay lost it (or its link to it): agreement ends at the first
		 * version that relay did not ack - what the relay's subtree holds */
		uint32_t q = agree_tree_parent(r, ac->fanout);
		struct agree_peer *p = calloc(1, sizeof(*p));
		if (!p)
			return false;
		p->fd = fd;
		p->rank = r;
		p->orphan = true;
		ac->peers[r] = p;
		char why[96];
		snprintf(why, sizeof(why), "rank %u lost its relay (rank %u)", r, q);
		end_group_at(ac, relay_fallback_seq(ac, q), why);
		agree_send_simple(ac, fd, AGREE_MSG_WELCOME, 0, atomic_load(&ac->fallback_seq));
		return true;
	}
	if (m->h.type == AGREE_MSG_HELLO) {
		/* also a rank that left: no rejoining */
		bool ok = r > 0 && r < ac->n_ranks &&
			  (!ac->fanout || agree_tree_parent(r, ac->fanout) == 0);
		if (!agree_admit_child(ac, fd, m, ok))
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
	case AGREE_MSG_LOST: {
		if (!is_relay || m->lost >= ac->n_ranks || agree_tree_parent(m->lost, ac->fanout) != r)
			return false;
		char why[112];
		snprintf(why, sizeof(why), m->reason & AGREE_FALLBACK_ORDERLY ? "rank %u (below "
			 "relay %u): the communicator was destroyed there" : "rank %u (below relay "
			 "%u) left the group", m->lost, r);
		end_group_at(ac, relay_fallback_seq(ac, r), why);
		return true;
	}
	case AGREE_MSG_CONTRIB: /* a relay's contribution comes in its PARTIAL */
		return !is_relay && agree_apply_contrib(ac, r, m);
	case AGREE_MSG_ACK:
		return agree_apply_ack(ac, r, m);
	case AGREE_MSG_FALLBACK:
		agree_apply_fallback(ac, m);
		return true;
	case AGREE_MSG_BYE:
		ac->peer_bye = true; /* on_close: destroyed, not lost */
		return false;
	default:
		return false;
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

static bool leader_alloc(struct agree_comm *ac)
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
		s->produced_ring = calloc(PRODUCE_AHEAD, sizeof(*s->produced_ring));
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
	if (s->produced - committed >= PRODUCE_AHEAD - 1)
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
	struct agree_version *v = malloc(sizeof(*v) + s->bytes);
	if (!v) {
		agree_end_group(ac, "out of memory");
		return;
	}
	v->number = e + 1;
	v->activation = (e + 2) * s->k;
	atomic_init(&v->next, NULL);
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
	encode_data(ac, &data, s, idx, v, prev);
	for (uint32_t k = 0; k < ac->n_kids; k++) {
		struct agree_peer *p = ac->peers[ac->kids[k]];
		if (p && !p->gone)
			agree_conn_send(p->fd, &data);
	}
	agree_buf_free(&data);
	memcpy(s->latest, v->data, s->bytes);
	s->latest_number = v->number;
	free(s->produced_ring[v->number % PRODUCE_AHEAD]);
	s->produced_ring[v->number % PRODUCE_AHEAD] = v;
	s->produced = v->number;
	s->first_arrival_ns = 0;
	AGREE_STAT(epochs_reduced, 1);
	AGREE_STAT(leader_cpu_ns, agree_thread_cpu_ns() - c0);
}

static void leader_commit(struct agree_comm *ac, struct agree_stream *s, uint32_t idx)
{
	for (;;) {
		uint64_t g = atomic_load(&s->gate);
		if (g & AGREE_GATE_FALLBACK)
			return;
		uint64_t next = g + 1;
		if (next > s->produced)
			return;
		for (uint32_t k = 0; k < ac->n_kids; k++)
			if (!ac->peers[ac->kids[k]] || s->rank_acked[ac->kids[k]] < next)
				return;
		uint64_t c0 = agree_thread_cpu_ns();
		struct agree_version *v = s->produced_ring[next % PRODUCE_AHEAD];
		s->produced_ring[next % PRODUCE_AHEAD] = NULL;
		if (!v || v->number != next || !commit_version(ac, s, v))
			return; /* fallback before its activation: v is not used */
		struct agree_buf b = {0}; /* encoded once, the same bytes to every follower */
		size_t f = agree_wire_begin(&b, AGREE_MSG_COMMIT, 0, ac->comm_id, ac->token);
		agree_buf_u32(&b, idx);
		agree_buf_u64(&b, next);
		agree_wire_end(&b, f);
		for (uint32_t k = 0; k < ac->n_kids; k++)
			if (!ac->peers[ac->kids[k]]->gone)
				agree_conn_send(ac->peers[ac->kids[k]]->fd, &b);
		agree_buf_free(&b);
		AGREE_STAT(leader_cpu_ns, agree_thread_cpu_ns() - c0);
	}
}

static void leader_step(struct agree_comm *ac, uint64_t now)
{
	if (!ac->registered) {
		int rc = agree_hub_register(ac);
		if (rc == 0)
			ac->registered = true;
		else if (rc != -EAGAIN)
			agree_end_group(ac, "the rendezvous hub has this communicator from another job");
	}
	uint64_t f = atomic_load(&ac->fallback_seq);
	if (f != AGREE_NO_FALLBACK && f != ac->fallback_sent_seq) {
		for (uint32_t r = 1; r < ac->n_ranks; r++)
			if (ac->peers[r] && !ac->peers[r]->gone)
				agree_send_simple(ac, ac->peers[r]->fd, AGREE_MSG_FALLBACK, agree_fallback_flags(ac), f);
		ac->fallback_sent_seq = f;
		ac->group_dead = true;
	}
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		if (f == AGREE_NO_FALLBACK) /* after a fallback: only commits of earlier versions */
			leader_produce(ac, &ac->streams[i], i, now);
		leader_commit(ac, &ac->streams[i], i);
		reclaim(&ac->streams[i]);
	}
}

/* ------------------------------------------------------------------ common ---- */

static bool stream_alloc(struct agree_comm *ac)
{
	for (uint32_t i = 0; i < ac->n_streams; i++) {
		struct agree_stream *s = &ac->streams[i];
		s->shipped = calloc(1, s->bytes);
		s->snap = calloc(1, s->bytes);
		s->latest = calloc(1, s->bytes);
		s->pending_cap = PRODUCE_AHEAD;
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
		rankless_step(ac, now);
		return;
	}
	if (ac->role == AGREE_ROLE_NONE) {
		ac->role = atomic_load(&ac->rank) == 0 ? AGREE_ROLE_LEADER : AGREE_ROLE_FOLLOWER;
		/* the same on every rank: n_ranks and NCCLBPF_AGREE_FANOUT (a job-wide setting) */
		ac->fanout = agree_tree_fanout_for(ac->n_ranks, getenv("NCCLBPF_AGREE_FANOUT"));
		ac->parent = agree_tree_parent(agree_my_rank(ac), ac->fanout);
		ac->relay = ac->role == AGREE_ROLE_FOLLOWER &&
			    agree_tree_is_relay(agree_my_rank(ac), ac->fanout, ac->n_ranks);
		if (!stream_alloc(ac) ||
		    ((ac->role == AGREE_ROLE_LEADER || ac->relay) && !leader_alloc(ac))) {
			ac->group_dead = true;
			agree_comm_fallback(ac, agree_first_uncommitted_seq(ac), "out of memory");
			ac->role = AGREE_ROLE_FOLLOWER; /* stays idle: group_dead */
			return;
		}
		if (ac->fanout && (ac->relay || ac->role == AGREE_ROLE_LEADER))
			runtime_log(NB_LOG_INFO, NB_LOG_TUNING, "agree: comm 0x%llx rank %u: fan-in "
				    "tree, fan-out %u, %u direct children%s",
				    (unsigned long long)ac->comm_id, agree_my_rank(ac), ac->fanout, ac->n_kids,
				    ac->relay ? " (relay)" : " (leader)");
	}
	if (ac->role == AGREE_ROLE_LEADER)
		leader_step(ac, now);
	else
		follower_step(ac, now);
}

bool agree_group_on_msg(struct agree_comm *ac, int fd, const struct agree_msg *m, bool *adopt)
{
	(void)adopt;
	if (ac->role == AGREE_ROLE_RANKLESS)
		return false; /* the leader's FALLBACK: this rank fell back there already */
	if (ac->role == AGREE_ROLE_LEADER)
		return leader_on_msg(ac, fd, m);
	if (ac->role == AGREE_ROLE_FOLLOWER && fd == ac->fd)
		return follower_on_msg(ac, m);
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
		for (uint32_t r = 1; ac->peers && r < ac->n_ranks; r++) {
			struct agree_peer *p = ac->peers[r];
			if (p && !p->gone && p->fd == fd && p->orphan) {
				p->gone = true; /* it was told F already */
				p->fd = -1;
			} else if (p && !p->gone && p->fd == fd) {
				/* it activates every version it acked (follower_lost_leader): those
				 * still commit here once the others ack; F is the first it did not */
				p->gone = true;
				p->fd = -1;
				uint64_t f = UINT64_MAX;
				for (uint32_t i = 0; i < ac->n_streams; i++) {
					struct agree_stream *s = &ac->streams[i];
					uint64_t fs = (s->rank_acked[r] + 2) * s->k;
					if (fs < f)
						f = fs;
				}
				char why[80];
				/* after this rank's own destroy, a peer's close is the job ending too */
				snprintf(why, sizeof(why), ac->peer_bye ? "rank %u: the communicator "
					 "was destroyed there" : atomic_load(&ac->closing) ? "rank %u "
					 "closed its link after the communicator was destroyed here" :
					 "rank %u left the group", r);
				ac->peer_bye = false;
				end_group_at(ac, f, why);
			}
		}
		return;
	}
	if (fd != ac->fd) {
		for (uint32_t k = 0; ac->relay && k < ac->n_kids; k++) {
			struct agree_peer *p = ac->peers[ac->kids[k]];
			if (p && !p->gone && p->fd == fd) {
				p->gone = true;
				p->fd = -1;
				agree_relay_lost_child(ac, p->rank, ac->peer_bye);
			}
		}
		return;
	}
	ac->fd = -1;
	if (ac->joined && atomic_load(&ac->closing))
		/* its own communicator was destroyed: the parent's close is the orderly end of
		 * the job (the BYE of either side may still be in flight), not a lost member */
		follower_lost_leader(ac, "the parent closed the link after the communicator was "
				     "destroyed here");
	else if (ac->joined)
		lost_parent(ac, ac->parent == 0 ? "lost the connection to the leader" :
			    "lost the connection to its relay");
	else
		ac->leader_port = 0; /* not joined yet: find the parent again (late start) */
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
	if (ac->role == AGREE_ROLE_LEADER || ac->relay)
		agree_hub_unregister_local(ac->comm_id);
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
		for (uint32_t k = 0; s->produced_ring && k < PRODUCE_AHEAD; k++)
			free(s->produced_ring[k]);
		free(s->produced_ring);
		s->shipped = s->snap = s->latest = NULL;
		s->rank_views = NULL;
		s->pending = NULL;
		s->produced_ring = NULL;
		s->rank_epochs = s->rank_acked = NULL;
	}
}
