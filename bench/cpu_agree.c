/* Agreement layer benchmarks (docs/results.md section 8, "Rank agreement"). Performance is printed, never
 * asserted.
 *
 *   bench_cpu_agree lookup OBJ [batches=2000] [batch_calls=1000]
 *     The same JIT-compiled tuner decision reading a plain array map (inlined by the JIT)
 *     and an agreed map's published view, interleaved batch by batch; P50/P99 of the
 *     per-call average of each batch, and the delta. Then the per-decision cost of the
 *     activation check (agree_tuner_begin/end, steady state) on top.
 *
 *   bench_cpu_agree group POLICY.bpf.o RANKS [epochs=50]
 *     One real leader (this process's agree service, rank 0 of RANKS) and RANKS-1
 *     simulated followers speaking the wire protocol over loopback from one thread. Each
 *     follower changes 2 entries of its contribution per epoch. Prints, per epoch: bytes
 *     on the leader's wire, the leader's service-thread CPU for reduce + encode + commit
 *     (socket I/O excluded) and in total, its contribution state, and the wall time.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "agree/agree.h"
#include "agree/agree_internal.h"
#include "agree/agree_wire.h"
#include "maps/map.h"
#include "ncclbpf/ncclbpf.h"
#include "ncclbpf/policy.h"
#include "runtime/runtime.h"

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* ---------------------------------------------------------------- lookup ---- */

static int bench_lookup(const char *obj_path, int batches, int calls)
{
	struct ncclbpf_object *obj = NULL;
	char err[1024];
	/* decision log into a scratch directory: its append cost is measured too */
	char logdir[] = "/tmp/ncclbpf-bench-agree-XXXXXX";
	if (mkdtemp(logdir))
		setenv("NCCLBPF_DECISION_LOG", logdir, 1);
	if (ncclbpf_object_open_file(obj_path, &obj, err, sizeof(err))) {
		fprintf(stderr, "%s: %s\n", obj_path, err);
		return 1;
	}
	struct ncclbpf_program *pp = ncclbpf_object_find_program(obj, "lookup_plain");
	struct ncclbpf_program *pa = ncclbpf_object_find_program(obj, "lookup_agreed");
	if (!pp || !pa || ncclbpf_program_prepare(pp, NCCLBPF_HOOK_TUNER, NULL, err, sizeof(err)) ||
	    ncclbpf_program_prepare(pa, NCCLBPF_HOOK_TUNER, NULL, err, sizeof(err))) {
		fprintf(stderr, "prepare: %s\n", err);
		return 1;
	}
	/* the published view the agreed lookup resolves to, bound as the tuner shim does */
	struct ncclbpf_map *am = ncclbpf_object_find_map(obj, "agreed");
	struct ncclbpf_map *plain = ncclbpf_object_find_map(obj, "plain");
	int slot = am ? map_agreed_slot(am->map) : -1;
	if (slot < 0 || !plain) {
		fprintf(stderr, "maps not found\n");
		return 1;
	}
	static uint64_t view[320 * 2];
	for (int i = 0; i < 320; i++) {
		view[2 * i] = 8;
		uint32_t k = (uint32_t)i;
		uint64_t v[2] = {8, 0};
		ncclbpf_map_update(plain, &k, v, 0);
	}
	static struct nb_map_binding bind = {.mode = NB_BIND_READ};
	bind.base[slot] = (uint8_t *)view;
	map_agreed_bind(&bind);

	struct ncclbpf_tuner_ctx c;
	memset(&c, 0, sizeof(c));
	c.coll_type = 4;
	c.n_ranks = 16;
	c.algo = -1;
	c.proto = -1;
	double *tp = calloc((size_t)batches, sizeof(double));
	double *ta = calloc((size_t)batches, sizeof(double));
	double *tb = calloc((size_t)batches, sizeof(double));
	double *tl = calloc((size_t)batches, sizeof(double));
	uint64_t r0;
	struct agree_comm *ac = agree_comm_tuner_open(0xbe7c4u, 1); /* 1 rank: no group */
	for (int b = 0; b < batches; b++) {
		c.n_bytes = 1ull << (10 + b % 16);
		uint64_t t0 = now_ns();
		for (int i = 0; i < calls; i++)
			ncclbpf_program_run(pp, &c, sizeof(c), &r0, NULL, 0);
		uint64_t t1 = now_ns();
		for (int i = 0; i < calls; i++)
			ncclbpf_program_run(pa, &c, sizeof(c), &r0, NULL, 0);
		uint64_t t2 = now_ns();
		for (int i = 0; i < calls; i++) {
			agree_tuner_begin(ac, (uint64_t)(b * calls + i));
			agree_tuner_end();
		}
		uint64_t t3 = now_ns();
		for (int i = 0; i < calls; i++)
			agree_log_decision(ac, (uint64_t)(b * calls + i), 4, c.n_bytes, -1, -1, 8);
		uint64_t t4 = now_ns();
		agree_decision_log_drain(false); /* what the service thread does, untimed */
		map_agreed_bind(&bind);
		tl[b] = (double)(t4 - t3) / calls;
		tp[b] = (double)(t1 - t0) / calls;
		ta[b] = (double)(t2 - t1) / calls;
		tb[b] = (double)(t3 - t2) / calls;
	}
	map_agreed_bind(NULL);
	agree_comm_tuner_close(ac);
	qsort(tp, (size_t)batches, sizeof(double), cmp_d);
	qsort(ta, (size_t)batches, sizeof(double), cmp_d);
	qsort(tb, (size_t)batches, sizeof(double), cmp_d);
	qsort(tl, (size_t)batches, sizeof(double), cmp_d);
	int p50 = batches / 2, p99 = batches * 99 / 100;
	printf("tuner decision with one map lookup, JIT, %d batches x %d calls (ns per call)\n",
	       batches, calls);
	printf("  %-34s P50 %6.2f  P99 %6.2f\n", "plain array (JIT-inlined lookup)", tp[p50], tp[p99]);
	printf("  %-34s P50 %6.2f  P99 %6.2f\n", "agreed map, published view", ta[p50], ta[p99]);
	printf("  agreed - plain: P50 %+.2f ns (ratio %.2fx), budget +5 ns\n", ta[p50] - tp[p50],
	       ta[p50] / tp[p50]);
	printf("  activation check per decision (agree_tuner_begin/end, steady state): P50 %.2f ns\n",
	       tb[p50]);
	printf("  decision log append per decision (NCCLBPF_DECISION_LOG set): P50 %.2f ns, P99 %.2f ns%s\n",
	       tl[p50], tl[p99], agree_decision_log_enabled() ? "" : " (log not enabled!)");
	free(tl);
	free(tp);
	free(ta);
	free(tb);
	ncclbpf_object_close(obj);
	return 0;
}

/* ----------------------------------------------------------------- group ---- */

struct sim {
	int fd;
	uint32_t rank;
	struct agree_buf in;
	uint64_t contributed; /* CONTRIB sent for epochs < this */
	uint64_t committed;
};

static void sim_send(struct sim *s, const struct agree_buf *b)
{
	size_t off = 0;
	while (off < b->len) {
		ssize_t n = send(s->fd, b->p + off, b->len - off, MSG_NOSIGNAL);
		if (n > 0)
			off += (size_t)n;
		else if (n < 0 && errno != EAGAIN && errno != EINTR)
			return;
		else {
			struct pollfd p = {.fd = s->fd, .events = POLLOUT};
			poll(&p, 1, 10);
		}
	}
}

static void sim_contrib(struct sim *s, uint64_t comm, uint64_t token, uint64_t epoch,
			const struct nb_map_agreed_desc *d)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_CONTRIB, s->rank, comm, token);
	agree_buf_u32(&b, 0);
	agree_buf_u64(&b, epoch);
	agree_buf_u32(&b, d->value_size);
	agree_buf_u32(&b, 2);
	for (uint32_t e = 0; e < 2; e++) {
		/* every rank runs the same collectives: the same entries, its own values */
		agree_buf_u32(&b, (uint32_t)((e * 13 + epoch / 16) % d->max_entries));
		for (uint32_t w = 0; w < d->value_size / 8; w++)
			agree_buf_u64(&b, 1000 + s->rank + epoch * 3 + w);
	}
	agree_wire_end(&b, f);
	sim_send(s, &b);
	agree_buf_free(&b);
}

static int bench_group(const char *policy, uint32_t n, uint64_t epochs)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	/* a free port below the ephemeral range (other processes' connections live there) */
	uint16_t port = 0;
	for (uint16_t p = (uint16_t)(20000 + getpid() % 10000); !port; p++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(p)};
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			port = p;
		close(fd);
	}
	char addr[64];
	snprintf(addr, sizeof(addr), "127.0.0.1:%u", port);
	setenv("NCCLBPF_AGREE", addr, 1);
	setenv("NCCLBPF_AGREE_WAIT_MS", "20000", 1);
	if (runtime_load_policies(policy) <= 0) {
		fprintf(stderr, "cannot load %s\n", policy);
		return 1;
	}
	struct nb_map_agreed_desc d;
	int slot = -1;
	for (int i = 0; i < NB_MAP_AGREED_SLOTS && slot < 0; i++)
		if (map_agreed_desc((uint32_t)i, &d))
			slot = i;
	if (slot < 0) {
		fprintf(stderr, "%s has no agreed map\n", policy);
		return 1;
	}
	const uint64_t comm = 0xbe7c0001ull + n;
	uint64_t token = agree_job_token(comm);
	agree_comm_profiler_open(comm, 0, (int)n);
	struct agree_comm *ac = agree_comm_tuner_open(comm, n);
	uint64_t k = d.epoch;
	agree_tuner_begin(ac, 0); /* starts the group (listener, hub) */
	agree_tuner_end();

	struct sim *sims = calloc(n, sizeof(*sims));
	struct pollfd *pf = calloc(n, sizeof(*pf));
	for (uint32_t r = 1; r < n; r++) {
		struct sim *s = &sims[r];
		s->rank = r;
		s->fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		for (int tries = 0; connect(s->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0; tries++) {
			if (tries > 200) {
				fprintf(stderr, "connect to port %u (rank %u): %s\n", port, r,
					strerror(errno));
				return 1;
			}
			close(s->fd);
			s->fd = socket(AF_INET, SOCK_STREAM, 0);
			usleep(10000);
		}
		struct agree_buf b = {0};
		size_t f = agree_wire_begin(&b, AGREE_MSG_HELLO, r, comm, token);
		agree_buf_u32(&b, n);
		agree_buf_u32(&b, 1);
		agree_buf_u64(&b, agree_fnv1a(d.name, strlen(d.name), AGREE_FNV_INIT));
		agree_buf_u32(&b, d.value_size);
		agree_buf_u32(&b, d.max_entries);
		agree_buf_u32(&b, d.map_flags);
		agree_wire_end(&b, f);
		sim_send(s, &b);
		agree_buf_free(&b);
		sim_contrib(s, comm, token, 0, &d);
		s->contributed = 1;
	}
	struct agree_stats st0;
	agree_get_stats(&st0);
	uint64_t t0 = now_ns(), seq = 1, last_seq = (epochs + 2) * k;
	/* the leader's NCCL thread: collectives until the last version activates; the
	 * followers are served between collectives (one thread, as a busy rank would be) */
	while (seq < last_seq) {
		for (uint32_t r = 1; r < n; r++)
			pf[r] = (struct pollfd){.fd = sims[r].fd, .events = POLLIN};
		poll(pf + 1, n - 1, 0);
		for (uint32_t r = 1; r < n; r++) {
			struct sim *s = &sims[r];
			if (!(pf[r].revents & POLLIN))
				continue;
			uint8_t tmp[65536];
			ssize_t got = recv(s->fd, tmp, sizeof(tmp), 0);
			if (got <= 0)
				continue;
			agree_buf_put(&s->in, tmp, (size_t)got);
			size_t off = 0;
			for (;;) {
				struct agree_msg m;
				char err[128];
				long used = agree_wire_parse(s->in.p + off, s->in.len - off, &m, err,
							     sizeof(err));
				if (used <= 0)
					break;
				off += (size_t)used;
				if (m.h.type == AGREE_MSG_DATA) {
					struct agree_buf b = {0};
					size_t f = agree_wire_begin(&b, AGREE_MSG_ACK, s->rank, comm, token);
					agree_buf_u32(&b, 0);
					agree_buf_u64(&b, m.number);
					agree_wire_end(&b, f);
					sim_send(s, &b);
					agree_buf_free(&b);
					/* a follower's next epoch closes about when a version arrives */
					sim_contrib(s, comm, token, s->contributed++, &d);
				} else if (m.h.type == AGREE_MSG_COMMIT) {
					s->committed = m.number;
				}
			}
			memmove(s->in.p, s->in.p + off, s->in.len - off);
			s->in.len -= off;
		}
		/* as many collectives as the activation rule lets run without waiting */
		uint64_t committed = atomic_load(&ac->streams[0].gate) & ~AGREE_GATE_FALLBACK;
		uint64_t limit = (committed + 2) * k; /* S of the next version */
		if (limit > last_seq)
			limit = last_seq;
		if (seq < limit) {
			if (seq % k == 0) {
				uint32_t key = (uint32_t)(seq / k % d.max_entries);
				uint64_t val[64] = {1 + seq};
				agree_contribute(comm, d.name, key, val, d.value_size);
			}
			if (agree_tuner_begin(ac, seq) != AGREE_RUN) {
				fprintf(stderr, "fell back at %llu\n", (unsigned long long)seq);
				return 1;
			}
			agree_tuner_end();
			seq++;
		}
	}
	uint64_t wall = now_ns() - t0;
	struct agree_stats st;
	agree_get_stats(&st);
	uint64_t reduced = st.epochs_reduced - st0.epochs_reduced;
	uint64_t bytes = (st.bytes_sent - st0.bytes_sent) + (st.bytes_received - st0.bytes_received);
	size_t sparse = 0;
	for (uint32_t r = 1; r < n; r++)
		sparse += (size_t)ac->streams[0].rank_views[r].cap * (4 + d.value_size);
	printf("%5u ranks: %3llu epochs, %7.0f bytes/epoch on the leader's wire (%5.0f per "
	       "follower), leader CPU %7.1f us/epoch reduce+encode+commit (I/O excluded), %7.1f us/epoch "
	       "service thread total, wall %6.2f ms/epoch, contribution state "
	       "%zu KiB (dense would be %zu KiB)\n",
	       n, (unsigned long long)reduced, reduced ? (double)bytes / reduced : 0.0,
	       reduced ? (double)bytes / reduced / (n - 1) : 0.0,
	       reduced ? (double)(st.leader_cpu_ns - st0.leader_cpu_ns) / reduced / 1000.0 : 0.0,
	       reduced ? (double)(st.service_cpu_ns - st0.service_cpu_ns) / reduced / 1000.0 : 0.0,
	       (double)wall / 1e6 / (double)epochs, sparse / 1024,
	       (size_t)(n - 1) * d.stride * d.max_entries / 1024);
	for (uint32_t r = 1; r < n; r++) {
		close(sims[r].fd);
		agree_buf_free(&sims[r].in);
	}
	free(sims);
	free(pf);
	agree_comm_tuner_close(ac);
	agree_comm_profiler_close(comm);
	agree_shutdown();
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "lookup"))
		return bench_lookup(argv[2], argc > 3 ? atoi(argv[3]) : 2000,
				    argc > 4 ? atoi(argv[4]) : 1000);
	if (argc >= 4 && !strcmp(argv[1], "group"))
		return bench_group(argv[2], (uint32_t)atoi(argv[3]),
				   argc > 4 ? strtoull(argv[4], NULL, 10) : 50);
	fprintf(stderr, "usage: %s lookup OBJ [batches] [calls] | group POLICY.bpf.o RANKS [epochs]\n",
		argv[0]);
	return 2;
}
