/* A ring AllReduce over the net plugin, the traffic pattern of NCCL's proxy: R ranks (one
 * thread each, like one proxy progress thread per GPU), each with a send connection to the
 * next rank and a receive connection from the previous one, both driven from that thread;
 * every step moves a chunk in slices of SLICE bytes with up to STEPS slices in flight per
 * direction (NCCL_STEPS = 8), retrying NULL requests. Sum of uint32 vectors, odd length;
 * the result is checked exactly on every rank. Usage: test_net_ring [ranks] [elements] */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>

#define HNET_STATIC
#include "net_harness.h"
#include "runtime/runtime.h"
#include "test_util.h"

#define STEPS 8
#define SLICE (512u * 1024u)
#define TMO 30000

static struct hnet H;
static int R;
static size_t N;

struct rank {
	int id;
	void *lc, *sc, *rc;
	char handle[NB_NET_HANDLE_MAXSIZE];
	uint32_t *data, *tmp;
	int rc_err;
};
static struct rank *ranks;
static pthread_barrier_t barrier;

static void chunk_range(int c, size_t *off, size_t *len)
{
	size_t base = N / (size_t)R, extra = N % (size_t)R;
	*off = (size_t)c * base + ((size_t)c < extra ? (size_t)c : extra);
	*len = base + ((size_t)c < extra ? 1 : 0);
}

/* sends chunk `sc` to the next rank while receiving chunk `rcv` from the previous into tmp */
static int exchange(struct rank *me, int sc_chunk, int rcv_chunk)
{
	size_t soff, slen, roff, rlen;
	chunk_range(sc_chunk, &soff, &slen);
	chunk_range(rcv_chunk, &roff, &rlen);
	char *sbase = (char *)(me->data + soff), *rbase = (char *)(me->tmp + roff);
	size_t sbytes = slen * 4, rbytes = rlen * 4;
	size_t ns = (sbytes + SLICE - 1) / SLICE, nr = (rbytes + SLICE - 1) / SLICE;
	if (!ns)
		ns = 1;
	if (!nr)
		nr = 1;
	void *sreq[STEPS] = { 0 }, *rreq[STEPS] = { 0 };
	size_t s_posted = 0, s_done = 0, r_posted = 0, r_done = 0;
	uint64_t end = hnet_ms() + TMO;
	while (s_done < ns || r_done < nr) {
		if (hnet_ms() > end)
			return -1;
		if (r_posted < nr && r_posted - r_done < STEPS) {
			size_t off = r_posted * SLICE, len = rbytes - off < SLICE ? rbytes - off : SLICE;
			void *d = rbase + off;
			int tag = (int)(r_posted % STEPS);
			void **slot = &rreq[r_posted % STEPS];
			if (hnet_irecv(&H, me->rc, 1, &d, &len, &tag, NULL, slot))
				return -1;
			if (*slot)
				r_posted++;
		}
		if (s_posted < ns && s_posted - s_done < STEPS) {
			size_t off = s_posted * SLICE, len = sbytes - off < SLICE ? sbytes - off : SLICE;
			void **slot = &sreq[s_posted % STEPS];
			if (hnet_isend(&H, me->sc, sbase + off, len, (int)(s_posted % STEPS), NULL, slot))
				return -1;
			if (*slot)
				s_posted++;
		}
		int done = 0, sz[1];
		if (r_done < r_posted) {
			if (hnet_test(&H, rreq[r_done % STEPS], &done, sz))
				return -1;
			if (done)
				r_done++;
		}
		if (s_done < s_posted) {
			if (hnet_test(&H, sreq[s_done % STEPS], &done, sz))
				return -1;
			if (done)
				s_done++;
		}
	}
	return 0;
}

static void *rank_main(void *arg)
{
	struct rank *me = arg;
	int r = me->id;
	/* reduce-scatter: after R-1 steps rank r owns the full sum of chunk (r+1) % R */
	for (int s = 0; s < R - 1 && !me->rc_err; s++) {
		int send_c = ((r - s) % R + R) % R, recv_c = ((r - s - 1) % R + R) % R;
		me->rc_err = exchange(me, send_c, recv_c);
		size_t off, len;
		chunk_range(recv_c, &off, &len);
		for (size_t i = 0; i < len; i++)
			me->data[off + i] += me->tmp[off + i];
		pthread_barrier_wait(&barrier); /* tmp is reused by the next step */
	}
	/* all-gather */
	for (int s = 0; s < R - 1 && !me->rc_err; s++) {
		int send_c = ((r + 1 - s) % R + R) % R, recv_c = ((r - s) % R + R) % R;
		me->rc_err = exchange(me, send_c, recv_c);
		size_t off, len;
		chunk_range(recv_c, &off, &len);
		memcpy(me->data + off, me->tmp + off, len * 4);
		pthread_barrier_wait(&barrier);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	R = argc > 1 ? atoi(argv[1]) : 4;
	if (R < 2 || R > 64)
		R = 4;
	N = argc > 2 ? strtoull(argv[2], NULL, 0) : (3u << 20) + 5; /* 12 MiB + 20 B per rank */
	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	hnet_open_static(&H, 12);
	CHECK(hnet_init(&H, 0xabc) == 0);
	ranks = calloc((size_t)(R & 127), sizeof(*ranks));
	for (int r = 0; r < R; r++) {
		ranks[r].id = r;
		ranks[r].data = malloc(N * 4);
		ranks[r].tmp = malloc(N * 4);
		for (size_t i = 0; i < N; i++)
			ranks[r].data[i] = (uint32_t)(i * 2654435761u) ^ (uint32_t)(r * 40503u);
		CHECK(hnet_listen(&H, 0, ranks[r].handle, &ranks[r].lc) == 0);
	}
	/* rank r connects to rank r+1's listener */
	for (int k = 0; k < 10000000; k++) {
		int pending = 0;
		for (int r = 0; r < R; r++) {
			struct rank *me = &ranks[r], *next = &ranks[(r + 1) % R];
			if (!me->sc)
				CHECK(hnet_connect_step(&H, 0, next->handle, &me->sc) == 0);
			if (!next->rc)
				CHECK(hnet_accept_step(&H, next->lc, &next->rc) == 0);
			pending += !me->sc || !next->rc;
		}
		if (!pending)
			break;
	}
	pthread_barrier_init(&barrier, NULL, (unsigned)R);
	pthread_t *t = calloc((size_t)(R & 127), sizeof(*t));
	for (int r = 0; r < R; r++)
		pthread_create(&t[r], NULL, rank_main, &ranks[r]);
	for (int r = 0; r < R; r++)
		pthread_join(t[r], NULL);
	for (int r = 0; r < R; r++)
		CHECK(ranks[r].rc_err == 0);
	size_t bad = 0;
	for (size_t i = 0; i < N; i++) {
		uint32_t want = 0;
		for (int r = 0; r < R; r++)
			want += (uint32_t)(i * 2654435761u) ^ (uint32_t)(r * 40503u);
		for (int r = 0; r < R; r++)
			bad += ranks[r].data[i] != want;
	}
	CHECK_EQ_U64(bad, 0);
	if (getenv("NCCLBPF_POLICY")) { /* hooks ran concurrently on every rank's thread */
		CHECK(runtime_hook_chain(NB_HOOK_NET) != NULL);
		CHECK(runtime_fault_count(NB_HOOK_NET) == 0);
	}
	printf("ring allreduce: %d ranks x %zu uint32, %zu wrong\n", R, N, bad);
	for (int r = 0; r < R; r++) {
		hnet_close_send(&H, ranks[r].sc);
		hnet_close_recv(&H, ranks[r].rc);
		hnet_close_listen(&H, ranks[r].lc);
		free(ranks[r].data);
		free(ranks[r].tmp);
	}
	free(ranks);
	free(t);
	CHECK(hnet_finalize(&H) == 0);
	TEST_DONE();
}
