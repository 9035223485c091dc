/* Rank-aligned KernelCh sampling (issue 27: "spans of each collective joined across ranks").
 *
 * Every rank of a communicator runs the same collectives in the same order, but each rank's
 * host sees them at its own times (jitter, a slightly slower host). The default sampler must
 * pick the SAME collectives on every rank, or the spans that OTLP export joins by
 * (commHash, sequence) hold one rank each. Each "rank" here is a forked process (the
 * process-wide KernelCh request count must not couple them, as it does not across real
 * ranks) that drives the sampler directly in virtual time: the verdict does not depend on
 * this machine's speed.
 *
 * The workload is a training step (seven buckets, five size bands) with compute between
 * steps, then a faster phase (the rate changes: N changes on every rank at slightly
 * different collectives), then a slow phase where only the bounded delay samples. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugin/profiler/profiler.h"
#include "test_util.h"

#define RANKS 4
#define STEPS 6000
#define PER_STEP 7
#define TOTAL (STEPS * PER_STEP)

static const uint64_t step_bytes[PER_STEP] = {16u << 20, 16u << 20, 4u << 20, 1u << 20,
					      256u << 10, 64u << 10, 4u << 10};

/* deterministic per-rank jitter in [-pct, +pct] percent */
static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static uint64_t jitter(uint64_t *s, uint64_t ns, int pct)
{
	int64_t r = (int64_t)(lcg(s) % (uint64_t)(2 * pct + 1)) - pct;
	return (uint64_t)((int64_t)ns + (int64_t)ns * r / 100);
}

/* One rank: writes TOTAL bytes, 1 where the collective carried KernelCh. */
static void run_rank(int rank, int fd)
{
	static unsigned char out[TOTAL];
	struct profiler_ctx *c = calloc(1, sizeof(*c));
	int mask = 0;
	if (!c)
		_exit(2);
	profiler_sample_init(c, &mask, true);
	if (!c->sampler.on)
		_exit(3);
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(rank + 1), now = 1000000000ull;
	/* rank 3's host is 4 % slower on average; all ranks jitter by +-30 % */
	uint64_t slow = rank == 3 ? 104 : 100;
	for (int i = 0; i < TOTAL; i++) {
		int step = i / PER_STEP, k = i % PER_STEP;
		/* phases: steps with compute between them (the rate sets N ~ 20-30), a faster
		 * phase (N ~ 40-60), then slow steps where N is 1 and every collective is sampled */
		uint64_t per_coll = step < 2000 ? 5000 : step < 4000 ? 2000 : 150000;
		uint64_t gap = k == 0 ? (step < 2000 ? 40000 : step < 4000 ? 20000 : 2000000) : 0;
		now += jitter(&seed, (per_coll + gap) * slow / 100, 30);
		bool instrumented = (mask & (int)NB_PROF_KERNEL_CH) != 0;
		out[i] = instrumented;
		profiler_sample_coll(c, ncclbpf_size_bucket(step_bytes[k]), instrumented, now);
	}
	profiler_sample_release(c);
	size_t off = 0;
	while (off < sizeof(out)) {
		ssize_t w = write(fd, out + off, sizeof(out) - off);
		if (w <= 0)
			_exit(4);
		off += (size_t)w;
	}
	_exit(0);
}

int main(void)
{
	unsetenv("NCCLBPF_PROFILE_SAMPLE"); /* the default: adaptive */
	unsetenv("NCCLBPF_POLICY");
	static unsigned char got[RANKS][TOTAL];
	pid_t pid[RANKS];
	int fds[RANKS];
	for (int r = 0; r < RANKS; r++) {
		int p[2];
		CHECK(pipe(p) == 0);
		pid[r] = fork();
		CHECK(pid[r] >= 0);
		if (pid[r] == 0) {
			close(p[0]);
			run_rank(r, p[1]);
		}
		close(p[1]);
		fds[r] = p[0];
	}
	for (int r = 0; r < RANKS; r++) {
		size_t off = 0;
		while (off < TOTAL) {
			ssize_t n = read(fds[r], got[r] + off, TOTAL - off);
			if (n <= 0)
				break;
			off += (size_t)n;
		}
		CHECK_EQ_U64(off, TOTAL);
		close(fds[r]);
		int st = 0;
		CHECK(waitpid(pid[r], &st, 0) == pid[r]);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	/* per phase: collectives sampled by every rank / sampled by any rank */
	const int phase_end[3] = {2000 * PER_STEP, 4000 * PER_STEP, TOTAL};
	int from = 0;
	for (int ph = 0; ph < 3; ph++) {
		int all = 0, any = 0, per_rank[RANKS] = {0};
		for (int i = from; i < phase_end[ph]; i++) {
			int n = 0;
			for (int r = 0; r < RANKS; r++) {
				n += got[r][i];
				per_rank[r] += got[r][i];
			}
			all += n == RANKS;
			any += n > 0;
		}
		printf("phase %d: %d collectives, sampled by any rank %d, by every rank %d (%.1f %%); "
		       "per rank %d %d %d %d\n",
		       ph, phase_end[ph] - from, any, all, any ? 100.0 * all / any : 0.0, per_rank[0],
		       per_rank[1], per_rank[2], per_rank[3]);
		CHECK(any > 0);
		/* joined: at least 90 % of the sampled collectives carry every rank's span */
		CHECK(all * 10 >= any * 9);
		/* and sampling still samples: not every collective in the fast phases */
		if (ph < 2)
			CHECK(any * 4 < phase_end[ph] - from);
		from = phase_end[ph];
	}
	TEST_DONE();
}
