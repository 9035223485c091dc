/* SEC("net") hooks on the own TCP transport: a program choosing the socket/thread count at
 * connect (and the accept side learning it), net_accounting's per-connection bytes,
 * operations and latency histogram, net_sockets_by_size picking sockets from the traffic
 * profile. NCCLBPF_POLICY (set by CTest) = net_set_socks, net_sockets_by_size,
 * net_accounting, in that order. */
#define _GNU_SOURCE
#include <stdlib.h>

#define HNET_STATIC
#include "net_harness.h"
#include "ncclbpf/ncclbpf.h"
#include "runtime/runtime.h"
#include "test_util.h"

#define TMO 20000

struct net_conn_stats {
	uint64_t send_bytes, recv_bytes, send_ops, recv_ops, send_ns, recv_ns;
	uint32_t dev, n_sockets;
	uint64_t lifetime_ns;
	uint64_t send_hist[24], recv_hist[24];
};

struct pair {
	void *lc, *sc, *rc;
	char handle[NB_NET_HANDLE_MAXSIZE];
};

static int pair_open(struct hnet *h, struct pair *p)
{
	memset(p, 0, sizeof(*p));
	if (hnet_listen(h, 0, p->handle, &p->lc))
		return -1;
	uint64_t end = hnet_ms() + TMO;
	while ((!p->sc || !p->rc) && hnet_ms() < end) {
		if (!p->sc && hnet_connect_step(h, 0, p->handle, &p->sc))
			return -1;
		if (!p->rc && hnet_accept_step(h, p->lc, &p->rc))
			return -1;
	}
	return p->sc && p->rc ? 0 : -1;
}

static void pair_close(struct hnet *h, struct pair *p)
{
	CHECK(hnet_close_send(h, p->sc) == 0);
	CHECK(hnet_close_recv(h, p->rc) == 0);
	CHECK(hnet_close_listen(h, p->lc) == 0);
}

/* conn ids in net_conn, ascending */
static int conn_ids(struct ncclbpf_map *m, uint64_t *ids, int max)
{
	int n = 0;
	uint64_t key, next;
	const void *prev = NULL;
	while (n < max && ncclbpf_map_get_next_key(m, prev, &next) == 0) {
		ids[n++] = next;
		key = next;
		prev = &key;
	}
	for (int i = 0; i < n; i++) /* sort */
		for (int j = i + 1; j < n; j++)
			if (ids[j] < ids[i]) {
				uint64_t t = ids[i];
				ids[i] = ids[j];
				ids[j] = t;
			}
	return n;
}

static void traffic(struct hnet *h, struct pair *p, int count, size_t size, uint64_t *total)
{
	char *sb = malloc(size + 1), *rb = malloc(size + 1);
	for (int i = 0; i < count; i++) {
		void *sreq = NULL;
		int got = -1, sz;
		hnet_fill(sb, size, (uint64_t)i);
		CHECK(hnet_isend(h, p->sc, sb, size, i, NULL, &sreq) == 0 && sreq);
		CHECK(hnet_recv_msg(h, p->rc, rb, size, i, &got, TMO) == 0 && got == (int)size);
		CHECK(hnet_wait(h, sreq, &sz, TMO) == 0);
		CHECK(hnet_verify(rb, size, (uint64_t)i));
		*total += size;
	}
	free(sb);
	free(rb);
}

int main(void)
{
	struct hnet h1, h2;
	hnet_open_static(&h1, 12);
	hnet_open_static(&h2, 12);
	CHECK(hnet_init(&h1, 0x77) == 0);
	CHECK(hnet_init(&h2, 0x88) == 0);
	const struct nb_hook_chain *chain = runtime_hook_chain(NB_HOOK_NET);
	CHECK(chain && chain->len == 3);
	struct ncclbpf_map *conn = runtime_find_map("net_conn");
	struct ncclbpf_map *prof = runtime_find_map("net_size_profile");
	CHECK(conn && prof);
	if (!conn || !prof)
		TEST_DONE();

	/* 1. comm 0x77: the program asks for 3 sockets / 2 threads; both ends record 3 */
	struct pair p;
	CHECK(pair_open(&h1, &p) == 0);
	uint64_t ids[16];
	CHECK(conn_ids(conn, ids, 16) == 2);
	struct net_conn_stats s_send, s_recv;
	CHECK(ncclbpf_map_lookup(conn, &ids[0], &s_send) == 0 && s_send.n_sockets == 3);
	CHECK(ncclbpf_map_lookup(conn, &ids[1], &s_recv) == 0 && s_recv.n_sockets == 3);

	/* 2. accounting: 80 messages of 600 KB (large) over this connection */
	uint64_t total = 0;
	traffic(&h1, &p, 80, 600000, &total);
	CHECK(ncclbpf_map_lookup(conn, &ids[0], &s_send) == 0);
	CHECK(ncclbpf_map_lookup(conn, &ids[1], &s_recv) == 0);
	CHECK_EQ_U64(s_send.send_bytes, total);
	CHECK_EQ_U64(s_send.send_ops, 80);
	CHECK_EQ_U64(s_recv.recv_bytes, total);
	CHECK_EQ_U64(s_recv.recv_ops, 80);
	CHECK(s_send.send_ns > 0 && s_recv.recv_ns > 0);
	uint64_t hist_send = 0, hist_recv = 0;
	for (int b = 0; b < 24; b++) {
		hist_send += s_send.send_hist[b];
		hist_recv += s_recv.recv_hist[b];
	}
	CHECK_EQ_U64(hist_send, 80); /* every completion lands in one bucket */
	CHECK_EQ_U64(hist_recv, 80);
	pair_close(&h1, &p);
	CHECK(ncclbpf_map_lookup(conn, &ids[0], &s_send) == 0 && s_send.lifetime_ns > 0);

	/* 3. net_sockets_by_size: dev 0 saw only large messages -> 4 sockets for comm 0x88 */
	uint32_t dev = 0;
	struct { uint64_t small, large; } pr;
	CHECK(ncclbpf_map_lookup(prof, &dev, &pr) == 0 && pr.large == 160 && pr.small == 0);
	CHECK(pair_open(&h2, &p) == 0);
	CHECK(conn_ids(conn, ids, 16) == 4);
	CHECK(ncclbpf_map_lookup(conn, &ids[2], &s_send) == 0 && s_send.n_sockets == 4);
	CHECK(ncclbpf_map_lookup(conn, &ids[3], &s_recv) == 0 && s_recv.n_sockets == 4);
	total = 0;
	traffic(&h2, &p, 5, 3000000, &total); /* data over 4 sockets stays intact */
	pair_close(&h2, &p);

	/* 4. a small-only profile -> inline connections (0 data sockets) */
	pr.small = 1000;
	pr.large = 0;
	CHECK(ncclbpf_map_update(prof, &dev, &pr, 0) == 0);
	CHECK(pair_open(&h2, &p) == 0);
	CHECK(conn_ids(conn, ids, 16) == 6);
	CHECK(ncclbpf_map_lookup(conn, &ids[4], &s_send) == 0 && s_send.n_sockets == 0);
	total = 0;
	traffic(&h2, &p, 5, 2000000, &total); /* large message, inline path */
	pair_close(&h2, &p);

	CHECK(runtime_fault_count(NB_HOOK_NET) == 0);
	CHECK(hnet_finalize(&h1) == 0);
	CHECK(hnet_finalize(&h2) == 0);
	TEST_DONE();
}
