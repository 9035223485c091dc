/* agree: the survivors' recovery round after the leader's death (docs/agreement.md
 * "Fallback rules", rule 5), run by the service thread.
 *
 * The leader sends each COMMIT to its children back to back; killed in between, some
 * children hold "v committed", the others do not, and each falling back after the last
 * version it saw committed made them decide differently (issue 23). But the leader commits
 * v only after every member acked v: every survivor holds v's bytes. So the leader's
 * direct children (the participants: every rank in a flat group) agree among themselves
 * before anyone falls back: the successor - rank 1, a direct child of the leader at every
 * fan-out, so every participant can name it - collects each participant's report (RECOVER:
 * the newest version it saw committed per stream, whether it saw READY, its own F) and
 * decides: per stream the newest version ANY survivor saw committed is committed
 * everywhere, and every survivor falls back at the first activation after them - a
 * function of what the dead leader had decided, never of a timer. It answers WELCOME(F)
 * (what an orphan gets from a living leader) to every participant; a relay passes the
 * COMMITs and F down to its subtree, which held what the relay acked.
 *
 * The successor's address: it registers its listener at the hub like a relay, and every
 * participant looks it up once it joined - before the leader can die with a hub it hosted.
 * Bounds: one report per participant (others are closed), a report is 16 + 8 x streams
 * bytes on an authenticated connection; the successor waits for the reports at most
 * NCCLBPF_AGREE_WAIT_MS / 2 after it lost the leader itself, a participant for the answer
 * at most NCCLBPF_AGREE_WAIT_MS. Not covered (still "not guaranteed"): a participant that
 * cannot reach the successor or whose report comes after the decision (two failures), and
 * a leader that is stopped rather than dead (the successor decides only once its own link
 * to the leader is gone). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "agree/agree_group.h"
#include "agree/agree_recover.h"
#include "runtime/runtime.h"

#define SUCCESSOR 1u /* rank 1: agree_tree_parent(1, f) == 0 for every fan-out */
#define LOOKUP_EVERY_NS 50000000ull

static bool is_successor(const struct agree_comm *ac)
{
	return agree_my_rank(ac) == SUCCESSOR;
}

static bool participant(const struct agree_comm *ac, uint32_t rank)
{
	return rank >= 1 && rank < ac->n_ranks && agree_tree_parent(rank, ac->fanout) == 0;
}

bool agree_recover_registers(const struct agree_comm *ac)
{
	return ac->role == AGREE_ROLE_FOLLOWER && is_successor(ac) && ac->n_ranks > 2;
}

static uint32_t participants(const struct agree_comm *ac)
{
	uint32_t n = 0;
	for (uint32_t r = 1; r < ac->n_ranks; r++)
		n += participant(ac, r);
	return n;
}

/* What this rank saw: the newest committed version per stream, READY, its own F. */
static void own_state(struct agree_comm *ac, uint32_t *flags, uint64_t *f, uint64_t *committed)
{
	*flags = atomic_load(&ac->ready) == AGREE_READY_YES ? AGREE_RECOVER_READY : 0;
	*f = atomic_load(&ac->fallback_seq);
	for (uint32_t i = 0; i < ac->n_streams; i++)
		committed[i] = atomic_load(&ac->streams[i].gate) & ~AGREE_GATE_FALLBACK;
}

static void merge(struct agree_comm *ac, uint32_t flags, uint64_t f, const uint64_t *committed)
{
	ac->recov_ready |= (flags & AGREE_RECOVER_READY) != 0;
	if (f < ac->recov_f)
		ac->recov_f = f;
	for (uint32_t i = 0; i < ac->n_streams; i++)
		if (committed[i] > ac->recov_committed[i])
			ac->recov_committed[i] = committed[i];
}

static void answer(struct agree_comm *ac, int fd)
{
	agree_send_simple(ac, fd, AGREE_MSG_WELCOME, ac->recov_ready ? AGREE_WELCOME_READY : 0,
			  ac->recov_decided_f);
	agree_conn_push(fd);
}

/* The successor decides: F after the newest version any survivor saw committed (every
 * survivor holds it), 0 when nobody saw READY, earlier when a survivor fell back earlier
 * (the leader's FALLBACK that reached some children only). */
static void decide(struct agree_comm *ac)
{
	uint32_t flags;
	uint64_t f, committed[AGREE_MAX_STREAMS];
	own_state(ac, &flags, &f, committed);
	merge(ac, flags, f, committed);
	uint64_t F = ac->recov_f;
	if (!ac->recov_ready) {
		F = 0;
	} else {
		for (uint32_t i = 0; i < ac->n_streams; i++) {
			uint64_t s_next = (ac->recov_committed[i] + 2) * ac->streams[i].k;
			if (s_next < F)
				F = s_next;
		}
	}
	ac->recov_decided_f = F;
	ac->recov = AGREE_RECOV_DECIDED;
	uint32_t got = 0;
	for (uint32_t r = 0; r < ac->n_ranks; r++)
		got += ac->recov_got[r];
	char text[256];
	snprintf(text, sizeof(text), "the leader is gone; the survivors' recovery round (rank 1, "
		 "%u of %u reports) decided: versions %" PRIu64 " and before (the newest any "
		 "survivor saw committed), then NCCL's defaults", got, participants(ac) - 1,
		 ac->n_streams ? ac->recov_committed[0] : 0);
	agree_follower_adopt(ac, F, ac->recov_ready, AGREE_WHY_LOST, 0, 0, text);
	for (uint32_t r = 0; r < ac->n_ranks; r++)
		if (ac->recov_fds[r] >= 0)
			answer(ac, ac->recov_fds[r]);
}

static bool alloc_tables(struct agree_comm *ac)
{
	if (ac->recov_fds)
		return true;
	ac->recov_fds = malloc(ac->n_ranks * sizeof(*ac->recov_fds));
	ac->recov_got = calloc(ac->n_ranks, sizeof(*ac->recov_got));
	if (!ac->recov_fds || !ac->recov_got) {
		free(ac->recov_fds);
		free(ac->recov_got);
		ac->recov_fds = NULL;
		ac->recov_got = NULL;
		return false;
	}
	for (uint32_t r = 0; r < ac->n_ranks; r++)
		ac->recov_fds[r] = -1;
	ac->recov_f = AGREE_NO_FALLBACK;
	ac->recov_ready = false;
	for (uint32_t i = 0; i < AGREE_MAX_STREAMS; i++)
		ac->recov_committed[i] = 0;
	return true;
}

bool agree_recover_start(struct agree_comm *ac, uint64_t now)
{
	if (ac->role != AGREE_ROLE_FOLLOWER || ac->recov != AGREE_RECOV_NONE ||
	    !participant(ac, agree_my_rank(ac)) || ac->n_ranks <= 2 || ac->parent_bye ||
	    atomic_load(&ac->closing) || !ac->hello_sent)
		return false;
	if (!now)
		now = agree_now_ns();
	if (is_successor(ac)) {
		if (!alloc_tables(ac))
			return false;
		ac->recov = AGREE_RECOV_COLLECTING;
		ac->recov_until_ns = now + agree_config()->wait_ns / 2;
		runtime_log(NB_LOG_INFO, NB_LOG_TUNING, "agree: comm 0x%" PRIx64 " rank 1: the leader "
			    "is gone; collecting the survivors' last commits (the recovery round)",
			    ac->comm_id);
		return true;
	}
	if (!ac->succ_port)
		return false; /* never learned where the successor listens: as before */
	int fd = agree_conn_connect(ac->succ_addr, (uint16_t)ac->succ_port);
	if (fd < 0 || !agree_conn_register(fd, ac))
		return false;
	ac->fd = fd; /* a refused link to the leader is dropped by its caller */
	ac->recov = AGREE_RECOV_REPORTING;
	ac->recov_until_ns = now + agree_config()->wait_ns;
	uint32_t flags;
	uint64_t f, committed[AGREE_MAX_STREAMS];
	own_state(ac, &flags, &f, committed);
	struct agree_buf b = {0};
	size_t o = agree_wire_begin(&b, AGREE_MSG_RECOVER, agree_my_rank(ac), ac->comm_id);
	agree_wire_put_recover(&b, flags, f, ac->n_streams, committed);
	agree_wire_end(&b, o);
	agree_conn_send(fd, &b); /* queued: sent once both sides proved the job's secret */
	agree_buf_free(&b);
	runtime_log(NB_LOG_INFO, NB_LOG_TUNING, "agree: comm 0x%" PRIx64 " rank %u: the leader "
		    "is gone; reporting to rank 1 (the recovery round)", ac->comm_id,
		    agree_my_rank(ac));
	return true;
}

bool agree_recover_waiting(const struct agree_comm *ac)
{
	return ac->recov == AGREE_RECOV_COLLECTING || ac->recov == AGREE_RECOV_REPORTING;
}

/* The round's deadline passed: true once a later pass read every connection, so that
 * reports (an answer) that reached this process while it was stopped count first. Reports
 * still in their connection's handshake then do not (docs/agreement.md "What is not
 * guaranteed"). */
static bool due_drained(struct agree_comm *ac)
{
	if (!ac->recov_due_pass)
		ac->recov_due_pass = agree_service_loops();
	return agree_service_drained(ac->recov_due_pass);
}

void agree_recover_step(struct agree_comm *ac, uint64_t now)
{
	if (ac->recov == AGREE_RECOV_COLLECTING) {
		uint32_t got = 0;
		for (uint32_t r = 0; r < ac->n_ranks; r++)
			got += ac->recov_got[r];
		if (got + 1 >= participants(ac) || (now >= ac->recov_until_ns && due_drained(ac)))
			decide(ac);
		return;
	}
	if (ac->recov == AGREE_RECOV_REPORTING && now >= ac->recov_until_ns && due_drained(ac)) {
		ac->recov = AGREE_RECOV_FAILED;
		agree_follower_lost_leader(ac, "lost the leader, and the successor (rank 1) did "
					   "not answer within the bound");
		return;
	}
	/* learn where the successor (a direct child of the leader) or the leader (a rank below
	 * a relay, for when it loses its relay) listens while the hub still answers: the hub
	 * may live in the process that dies */
	bool direct = participant(ac, agree_my_rank(ac));
	uint32_t want = direct ? SUCCESSOR : 0;
	if (ac->recov == AGREE_RECOV_NONE && ac->hello_sent && !ac->orphan && !ac->group_dead &&
	    !(direct && (is_successor(ac) || ac->n_ranks <= 2)) &&
	    !(direct ? ac->succ_port : ac->lead_port) && now >= ac->succ_next_try_ns) {
		/* 50 ms, doubling up to 1.6 s: a successor that never registers (rank 1 without
		 * ncclbpf's profiler) costs the hub little */
		uint32_t sh = ac->succ_tries < 5 ? ac->succ_tries : 5;
		ac->succ_next_try_ns = now + (LOOKUP_EVERY_NS << sh);
		ac->succ_tries++;
		uint32_t a, p;
		if (!agree_is_hub())
			agree_hub_lookup_rank(ac, want);
		else if (agree_hub_local_lookup(ac->comm_id, want, &a, &p))
			agree_recover_on_leader(ac, want, a, p);
	}
}

void agree_recover_on_leader(struct agree_comm *ac, uint32_t rank, uint32_t addr, uint32_t port)
{
	if (!port)
		return;
	if (rank == SUCCESSOR && !is_successor(ac) && ac->recov == AGREE_RECOV_NONE) {
		ac->succ_addr = addr;
		ac->succ_port = port;
	} else if (rank == 0 && !participant(ac, agree_my_rank(ac))) {
		ac->lead_addr = addr;
		ac->lead_port = port;
	}
}

/* The successor's side: a participant's report (on a connection of its own). */
bool agree_recover_on_msg(struct agree_comm *ac, int fd, const struct agree_msg *m)
{
	uint32_t r = m->h.rank;
	if (m->h.type != AGREE_MSG_RECOVER && agree_recover_owns(ac, fd)) {
		agree_recover_on_close(ac, fd); /* its BYE, or anything else: closed */
		return false;
	}
	if (m->h.type != AGREE_MSG_RECOVER || !is_successor(ac) || ac->role != AGREE_ROLE_FOLLOWER ||
	    !participant(ac, r) || r == SUCCESSOR || m->n_streams != ac->n_streams ||
	    !alloc_tables(ac) || ac->recov_got[r])
		return false; /* closes the connection */
	ac->recov_got[r] = true;
	ac->recov_fds[r] = fd;
	if (ac->recov == AGREE_RECOV_DECIDED) {
		/* too late to count: it gets the decision (a different view of its own is the
		 * two-failures case of docs/agreement.md) */
		answer(ac, fd);
		return true;
	}
	merge(ac, m->flags, m->seq, m->committed);
	return true;
}

void agree_recover_on_answer(struct agree_comm *ac, const struct agree_msg *m)
{
	ac->recov = AGREE_RECOV_DECIDED;
	agree_follower_adopt(ac, m->seq, (m->flags & AGREE_WELCOME_READY) != 0, AGREE_WHY_LOST,
			     0, 0, "the leader is gone; the survivors' recovery round (rank 1) "
			     "decided: the versions any survivor saw committed, then NCCL's "
			     "defaults");
}

bool agree_recover_owns(const struct agree_comm *ac, int fd)
{
	for (uint32_t r = 0; ac->recov_fds && r < ac->n_ranks; r++)
		if (ac->recov_fds[r] == fd)
			return true;
	return false;
}

void agree_recover_on_close(struct agree_comm *ac, int fd)
{
	for (uint32_t r = 0; ac->recov_fds && r < ac->n_ranks; r++)
		if (ac->recov_fds[r] == fd)
			ac->recov_fds[r] = -1;
}

void agree_recover_free(struct agree_comm *ac)
{
	for (uint32_t r = 0; ac->recov_fds && r < ac->n_ranks; r++)
		if (ac->recov_fds[r] >= 0)
			agree_conn_close(ac->recov_fds[r]);
	free(ac->recov_fds);
	free(ac->recov_got);
	ac->recov_fds = NULL;
	ac->recov_got = NULL;
}
