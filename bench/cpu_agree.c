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
 *     In tree mode (NCCLBPF_AGREE_FANOUT, or more than 64 ranks) the simulated peers are
 *     the leader's direct children only; a simulated relay sends one PARTIAL per epoch
 *     for its whole subtree.
 *
 *   bench_cpu_agree tree POLICY.bpf.o RANKS [epochs=50]
 *     Flat vs tree at RANKS (each in a child process), ratios tree / flat, and a relay's
 *     load (the flat group of F ranks). Flat is skipped above 1024 ranks.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include <arpa/inet.h>

#include "agree/agree.h"
#include "agree/agree_internal.h"
#include "agree/agree_wire.h"
#include "maps/map.h"
#include "ncclbpf/ncclbpf.h"
#include "ncclbpf/policy.h"
#include "runtime/decision_src.h"
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
			agree_log_decision(ac, (uint64_t)(b * calls + i), 4, c.n_bytes, -1, -1, 8,
					   NB_DSRC_POLICY, 0);
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
	uint32_t subtree; /* > 1: a simulated relay standing for this many ranks (PARTIAL) */
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

static void sim_contrib(struct sim *s, uint64_t comm, uint64_t epoch,
			const struct nb_map_agreed_desc *d)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_CONTRIB, s->rank, comm);
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

/* A relay's PARTIAL: the same two entries, combined over its subtree (value + count). */
static void sim_partial(struct sim *s, uint64_t comm, uint64_t epoch,
			const struct nb_map_agreed_desc *d)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_PARTIAL, s->rank, comm);
	agree_buf_u32(&b, 0);
	agree_buf_u64(&b, epoch + 1); /* every member closed epochs 0..epoch */
	agree_buf_u32(&b, 0);
	agree_buf_u32(&b, d->value_size + 8);
	agree_buf_u32(&b, 2);
	for (uint32_t e = 0; e < 2; e++) {
		agree_buf_u32(&b, (uint32_t)((e * 13 + epoch / 16) % d->max_entries));
		for (uint32_t w = 0; w < d->value_size / 8; w++)
			agree_buf_u64(&b, 1000 + s->rank + epoch * 3 + w);
		agree_buf_u64(&b, s->subtree);
	}
	agree_wire_end(&b, f);
	sim_send(s, &b);
	agree_buf_free(&b);
}

static void sim_epoch(struct sim *s, uint64_t comm, uint64_t epoch,
		      const struct nb_map_agreed_desc *d)
{
	if (s->subtree > 1)
		sim_partial(s, comm, epoch, d);
	else
		sim_contrib(s, comm, epoch, d);
}

/* Reads one frame (blocking, bounded); false on error. */
static bool sim_read(struct sim *s, struct agree_msg *m)
{
	for (int tries = 0; tries < 2000; tries++) {
		char err[128];
		long used = s->in.len ? agree_wire_parse(s->in.p, s->in.len, m, err, sizeof(err)) : 0;
		if (used < 0)
			return false;
		if (used > 0) {
			/* m points into s->in only for entries, unused by the callers */
			memmove(s->in.p, s->in.p + used, s->in.len - (size_t)used);
			s->in.len -= (size_t)used;
			return true;
		}
		struct pollfd p = {.fd = s->fd, .events = POLLIN};
		poll(&p, 1, 10);
		uint8_t tmp[4096];
		ssize_t got = recv(s->fd, tmp, sizeof(tmp), MSG_DONTWAIT);
		if (got == 0)
			return false;
		if (got > 0)
			agree_buf_put(&s->in, tmp, (size_t)got);
	}
	return false;
}

/* The connector's side of the handshake (agree_auth.h), as a real member does it. */
static bool sim_auth(struct sim *s)
{
	struct agree_msg m;
	if (!sim_read(s, &m) || m.h.type != AGREE_MSG_CHALLENGE)
		return false;
	uint8_t nonce[AGREE_NONCE_BYTES];
	if (agree_random(nonce, sizeof(nonce)) != 0)
		return false;
	const struct agree_key *key = &agree_config()->key;
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_AUTH, 0, 0);
	agree_buf_put(&b, nonce, sizeof(nonce));
	agree_buf_u64(&b, agree_auth_mac(key, 'c', m.nonce, nonce));
	agree_wire_end(&b, f);
	sim_send(s, &b);
	agree_buf_free(&b);
	uint8_t theirs[AGREE_NONCE_BYTES];
	memcpy(theirs, m.nonce, sizeof(theirs));
	return sim_read(s, &m) && m.h.type == AGREE_MSG_AUTH_OK &&
	       m.mac == agree_auth_mac(key, 'a', nonce, theirs);
}

/* The leader's first collective waits at the join barrier: in a thread of its own while
 * the simulated members join. */
static void *first_collective(void *arg)
{
	struct agree_comm *ac = arg;
	enum agree_verdict v = agree_tuner_begin(ac, 0);
	agree_tuner_end();
	return (void *)(uintptr_t)(v == AGREE_RUN);
}

struct group_result {
	uint32_t ranks, fanout, direct;
	uint64_t epochs;
	double bytes, leader_us, service_us, wall_ms;
};

static int bench_group(const char *policy, uint32_t n, uint64_t epochs,
		       struct group_result *res)
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
	agree_comm_profiler_open(comm, 0, (int)n);
	struct agree_comm *ac = agree_comm_tuner_open(comm, n);
	uint64_t k = d.epoch;
	pthread_t first;
	if (pthread_create(&first, NULL, first_collective, ac) != 0)
		return 1;
	/* the group starts there (listener, hub): its configuration is what members join with */
	while (!atomic_load(&ac->streams_ready) || !agree_listen_port())
		usleep(1000);

	/* the leader's direct children only: in tree mode (NCCLBPF_AGREE_FANOUT, or more than
	 * AGREE_TREE_MIN_RANKS ranks) a simulated relay stands for its whole subtree */
	uint32_t fan = agree_tree_fanout_for(n, getenv("NCCLBPF_AGREE_FANOUT"));
	uint32_t *kid = calloc(n, sizeof(uint32_t)), nk = 0;
	for (uint32_t r = 1; r < n; r++)
		if (agree_tree_parent(r, fan) == 0)
			kid[nk++] = r;
	struct sim *sims = calloc(nk + 1, sizeof(*sims));
	struct pollfd *pf = calloc(nk + 1, sizeof(*pf));
	for (uint32_t i = 1; i <= nk; i++) {
		struct sim *s = &sims[i];
		uint32_t r = kid[i - 1];
		s->rank = r;
		s->subtree = agree_tree_subtree(r, fan, n);
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
		if (!sim_auth(s)) {
			fprintf(stderr, "rank %u: the leader did not authenticate\n", r);
			return 1;
		}
		struct agree_stream_sig sig = {agree_fnv1a(d.name, strlen(d.name), AGREE_FNV_INIT),
					       d.value_size, d.max_entries, d.map_flags};
		struct agree_buf b = {0};
		size_t f = agree_wire_begin(&b, AGREE_MSG_HELLO, r, comm);
		agree_wire_put_hello(&b, n, 0, 1, &sig, &ac->fp); /* a member configured alike */
		agree_wire_end(&b, f);
		sim_send(s, &b);
		agree_buf_free(&b);
		if (s->subtree > 1) { /* a relay: its subtree joined */
			f = agree_wire_begin(&b, AGREE_MSG_READY, r, comm);
			agree_wire_end(&b, f);
			sim_send(s, &b);
			agree_buf_free(&b);
		}
		sim_epoch(s, comm, 0, &d);
		s->contributed = 1;
	}
	void *passed = NULL;
	pthread_join(first, &passed);
	if (!passed) {
		fprintf(stderr, "the join barrier failed\n");
		return 1;
	}
	n = nk + 1; /* from here on: the simulated connections */
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
					size_t f = agree_wire_begin(&b, AGREE_MSG_ACK, s->rank, comm);
					agree_buf_u32(&b, 0);
					agree_buf_u64(&b, m.number);
					agree_wire_end(&b, f);
					sim_send(s, &b);
					agree_buf_free(&b);
					/* a follower's next epoch closes about when a version arrives */
					sim_epoch(s, comm, s->contributed++, &d);
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
	for (uint32_t i = 1; i < n; i++)
		sparse += (size_t)ac->streams[0].rank_views[sims[i].rank].cap *
			  (4 + d.value_size + (sims[i].subtree > 1 ? 8 : 0));
	uint32_t ranks = fan ? (uint32_t)(kid[nk - 1] + sims[nk].subtree) : n;
	printf("%5u ranks (%s, %u direct children): %3llu epochs, %7.0f bytes/epoch on the "
	       "leader's wire (%5.0f per child), leader CPU %7.1f us/epoch reduce+encode+commit "
	       "(I/O excluded), %7.1f us/epoch service thread total, wall %6.2f ms/epoch, "
	       "contribution state %zu KiB (dense would be %zu KiB)\n",
	       ranks, fan ? "tree" : "flat", n - 1, (unsigned long long)reduced,
	       reduced ? (double)bytes / reduced : 0.0,
	       reduced ? (double)bytes / reduced / (n - 1) : 0.0,
	       reduced ? (double)(st.leader_cpu_ns - st0.leader_cpu_ns) / reduced / 1000.0 : 0.0,
	       reduced ? (double)(st.service_cpu_ns - st0.service_cpu_ns) / reduced / 1000.0 : 0.0,
	       (double)wall / 1e6 / (double)epochs, sparse / 1024,
	       (size_t)(ranks - 1) * d.stride * d.max_entries / 1024);
	fflush(stdout);
	if (res)
		*res = (struct group_result){ranks, fan, n - 1, reduced,
			reduced ? (double)bytes / reduced : 0.0,
			reduced ? (double)(st.leader_cpu_ns - st0.leader_cpu_ns) / reduced / 1000.0 : 0.0,
			reduced ? (double)(st.service_cpu_ns - st0.service_cpu_ns) / reduced / 1000.0 : 0.0,
			(double)wall / 1e6 / (double)epochs};
	free(kid);
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

/* One configuration in a child process (the agree service is process-wide). */
static int run_child(const char *policy, uint32_t n, uint64_t epochs, const char *fanout,
		     struct group_result *res)
{
	int pfd[2];
	if (pipe(pfd) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		setenv("NCCLBPF_AGREE_FANOUT", fanout, 1);
		struct group_result r = {0};
		int rc = bench_group(policy, n, epochs, &r);
		if (write(pfd[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
			rc = 1;
		_exit(rc);
	}
	close(pfd[1]);
	ssize_t got = pid > 0 ? read(pfd[0], res, sizeof(*res)) : -1;
	close(pfd[0]);
	int st = 0;
	if (pid > 0)
		waitpid(pid, &st, 0);
	return got == (ssize_t)sizeof(*res) && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Tree vs flat at RANKS, each in its own process, interleaved: the leader's wire and CPU
 * per epoch; then a relay's load, which is a flat leader's with F - 1 followers plus one
 * PARTIAL up (measured as the flat group of F ranks). Flat is skipped above 1024 ranks. */
static int bench_tree(const char *policy, uint32_t n, uint64_t epochs)
{
	struct group_result flat = {0}, tree = {0}, relay = {0};
	char fs[16];
	uint32_t f = agree_tree_fanout_for(n, n <= AGREE_TREE_MIN_RANKS ? "8" : NULL);
	snprintf(fs, sizeof(fs), "%u", f);
	bool have_flat = n <= 1024; /* the simulation of a flat 2048 takes minutes */
	if (have_flat && run_child(policy, n, epochs, "flat", &flat) != 0)
		return 1;
	if (run_child(policy, n, epochs, fs, &tree) != 0)
		return 1;
	if (run_child(policy, f, epochs, "flat", &relay) != 0)
		return 1;
	printf("tree (fan-out %u) at %u ranks: leader %u direct children, %.0f bytes/epoch, "
	       "service thread %.1f us/epoch", f, tree.ranks, tree.direct, tree.bytes,
	       tree.service_us);
	if (have_flat)
		printf("; vs flat: bytes %.3fx, service thread %.3fx, wall %.3fx", tree.bytes / flat.bytes,
		       tree.service_us / flat.service_us, tree.wall_ms / flat.wall_ms);
	printf("\n  each relay (%u children): ~%.1f us/epoch service thread, %.0f bytes/epoch "
	       "(the flat group of %u ranks)\n", f - 1, relay.service_us, relay.bytes, f);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "lookup"))
		return bench_lookup(argv[2], argc > 3 ? atoi(argv[3]) : 2000,
				    argc > 4 ? atoi(argv[4]) : 1000);
	if (argc >= 4 && !strcmp(argv[1], "group"))
		return bench_group(argv[2], (uint32_t)atoi(argv[3]),
				   argc > 4 ? strtoull(argv[4], NULL, 10) : 50, NULL);
	if (argc >= 4 && !strcmp(argv[1], "tree"))
		return bench_tree(argv[2], (uint32_t)atoi(argv[3]),
				  argc > 4 ? strtoull(argv[4], NULL, 10) : 50);
	fprintf(stderr, "usage: %s lookup OBJ [batches] [calls] | group POLICY.bpf.o RANKS [epochs]"
		" | tree POLICY.bpf.o RANKS [epochs]\n", argv[0]);
	return 2;
}
