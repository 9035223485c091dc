/* agree: the rendezvous hub's directory (the process that could bind the rendezvous port
 * keeps it): (commHash, rank) -> the listener of that communicator's leader or relay, and
 * the notices of members without a rank. Only authenticated members of this job reach it
 * (agree_service.c answers REGISTER and LOOKUP on authenticated connections only), and each
 * connection may hold a bounded number of entries, so nobody can fill it or squat a
 * communicator (docs/agreement.md "Threat model"). Service thread only. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "agree/agree_internal.h"

#define HUB_DIR_MAX 8192
/* per connection: a process leads or relays at most one entry per communicator, and may
 * leave one notice per communicator */
#define HUB_PER_CONN (2 * AGREE_MAX_COMMS)

struct hub_entry {
	uint64_t comm_id;
	uint32_t rank;  /* 0: the leader; a relay's rank (tree); AGREE_RANK_NONE: a notice */
	uint32_t addr;  /* network order; 0 = this process (the hub) */
	uint32_t port;
	int fd;         /* registering connection, -1 for this process */
};

static struct hub_entry hub_dir[HUB_DIR_MAX];
static size_t hub_dir_cnt;

/* LOOKUPs of a listener not registered yet, answered when it registers (the asker would
 * otherwise ask again on its retry timer: 20 ms of join per round). Bounded like the
 * directory; a lookup that does not fit is answered "not yet" as before. */
struct hub_parked {
	uint64_t comm_id;
	uint32_t rank;
	int fd; /* the asking connection */
};

static struct hub_parked hub_park[HUB_DIR_MAX];
static size_t hub_park_cnt;

static struct hub_entry *find(uint64_t comm_id, uint32_t rank)
{
	for (size_t i = 0; i < hub_dir_cnt; i++)
		if (hub_dir[i].comm_id == comm_id && hub_dir[i].rank == rank)
			return &hub_dir[i];
	return NULL;
}

bool agree_hub_has_notice(uint64_t comm_id)
{
	return find(comm_id, AGREE_RANK_NONE) != NULL;
}

int agree_hub_add(uint64_t comm_id, uint32_t rank, uint32_t addr, uint32_t port, int fd)
{
	struct hub_entry *e = find(comm_id, rank);
	if (e)
		/* the same registrant again: fine; another one: two processes claim one rank */
		return e->fd == fd || rank == AGREE_RANK_NONE ? 0 : -EEXIST;
	if (hub_dir_cnt == HUB_DIR_MAX)
		return -ENOSPC;
	if (fd >= 0) {
		size_t mine = 0;
		for (size_t i = 0; i < hub_dir_cnt; i++)
			mine += hub_dir[i].fd == fd;
		if (mine >= HUB_PER_CONN)
			return -ENOSPC;
	}
	hub_dir[hub_dir_cnt++] = (struct hub_entry){comm_id, rank, addr, port, fd};
	return 0;
}

void agree_hub_drop_conn(int fd)
{
	for (size_t i = 0; i < hub_dir_cnt; i++)
		if (hub_dir[i].fd == fd)
			hub_dir[i--] = hub_dir[--hub_dir_cnt];
	for (size_t i = 0; i < hub_park_cnt; i++)
		if (hub_park[i].fd == fd)
			hub_park[i--] = hub_park[--hub_park_cnt];
}

int agree_hub_park(uint64_t comm_id, uint32_t rank, int fd)
{
	size_t mine = 0;
	for (size_t i = 0; i < hub_park_cnt; i++) {
		if (hub_park[i].fd != fd)
			continue;
		if (hub_park[i].comm_id == comm_id && hub_park[i].rank == rank)
			return 0; /* asked again (its retry timer): parked already */
		mine++;
	}
	if (hub_park_cnt == HUB_DIR_MAX || mine >= HUB_PER_CONN)
		return -ENOSPC;
	hub_park[hub_park_cnt++] = (struct hub_parked){comm_id, rank, fd};
	return 0;
}

size_t agree_hub_unpark(uint64_t comm_id, uint32_t rank, int *fds, uint32_t *ranks, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < hub_park_cnt && n < max; i++) {
		struct hub_parked *p = &hub_park[i];
		if (p->comm_id != comm_id || (rank != AGREE_RANK_NONE && p->rank != rank))
			continue;
		fds[n] = p->fd;
		ranks[n++] = p->rank;
		hub_park[i--] = hub_park[--hub_park_cnt];
	}
	return n;
}

void agree_hub_unregister_local(uint64_t comm_id)
{
	for (size_t i = 0; i < hub_dir_cnt; i++)
		if (hub_dir[i].comm_id == comm_id && hub_dir[i].fd == -1)
			hub_dir[i--] = hub_dir[--hub_dir_cnt];
}

bool agree_hub_local_lookup(uint64_t comm_id, uint32_t rank, uint32_t *addr, uint32_t *port)
{
	if (rank == AGREE_RANK_NONE)
		return false;
	struct hub_entry *e = find(comm_id, rank);
	if (!e)
		return false;
	*addr = e->addr ? e->addr : htonl(INADDR_LOOPBACK);
	*port = e->port;
	return true;
}

bool agree_hub_get(uint64_t comm_id, uint32_t rank, uint32_t *addr, uint32_t *port)
{
	struct hub_entry *e = rank == AGREE_RANK_NONE ? NULL : find(comm_id, rank);
	if (!e)
		return false;
	*addr = e->addr;
	*port = e->port;
	return true;
}

size_t agree_hub_entries(void)
{
	return hub_dir_cnt;
}

/* ---- a member's side: registering its listener, looking its parent up ---- */

int agree_hub_register(struct agree_comm *ac)
{
	uint32_t rank = ac->role == AGREE_ROLE_RANKLESS ? AGREE_RANK_NONE
							 : (uint32_t)atomic_load(&ac->rank);
	if (agree_is_hub()) {
		int rc = agree_hub_add(ac->comm_id, rank, 0, agree_listen_port(), -1);
		if (rc == 0)
			agree_hub_registered(ac->comm_id, rank);
		return rc == -EEXIST ? -EEXIST : 0;
	}
	int hub_fd = agree_hub_link();
	if (hub_fd < 0)
		return -EAGAIN;
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_REGISTER, rank, ac->comm_id);
	agree_buf_u32(&b, agree_listen_port());
	agree_wire_end(&b, f);
	int rc = agree_conn_send(hub_fd, &b);
	agree_buf_free(&b);
	return rc;
}

int agree_hub_lookup(struct agree_comm *ac)
{
	if (agree_is_hub()) {
		uint32_t a, p;
		/* a member without a rank announced itself here (it looks the leader up itself,
		 * to tell it) */
		if (ac->role != AGREE_ROLE_RANKLESS && agree_hub_has_notice(ac->comm_id))
			return -ENXIO;
		if (!agree_hub_local_lookup(ac->comm_id, ac->parent, &a, &p))
			return -EAGAIN;
		ac->leader_addr = a;
		ac->leader_port = p;
		return 0;
	}
	int rc = agree_hub_lookup_rank(ac, ac->parent);
	return rc ? rc : -EAGAIN; /* the answer comes as LEADER */
}

int agree_hub_lookup_rank(struct agree_comm *ac, uint32_t rank)
{
	int hub_fd = agree_hub_link();
	if (hub_fd < 0)
		return -EAGAIN;
	struct agree_buf b = {0};
	/* the header's rank names the rank whose listener is wanted */
	size_t f = agree_wire_begin(&b, AGREE_MSG_LOOKUP, rank, ac->comm_id);
	agree_wire_end(&b, f);
	int rc = agree_conn_send(hub_fd, &b);
	agree_buf_free(&b);
	return rc;
}
