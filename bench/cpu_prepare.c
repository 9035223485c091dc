/* bench_cpu_prepare: time to make a shipped policy runnable, as the plugin does at NCCL
 * init: open the object (ELF/BTF parse, maps), verify for the program's hook, link and
 * JIT-compile (ncclbpf_program_prepare). Budget (architecture.md): verify + JIT one shipped
 * policy <= 1 ms. Prints, per policy, the median and max over N repetitions of open and of
 * prepare, in microseconds, and the share of the budget.
 *
 *   bench_cpu_prepare [reps=200] POLICY.bpf.o...  (e.g. the objects in build/policies)
 *
 * Policies rejected by default for rank-local decisions are measured with
 * NCCLBPF_RANK_LOCAL=allow semantics (set by this tool) so every shipped policy is timed. */
#include <ncclbpf/ncclbpf.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int reps = 200, first = 1;
	if (argc > 1 && strspn(argv[1], "0123456789") == strlen(argv[1])) {
		reps = atoi(argv[1]);
		first = 2;
	}
	if (first >= argc || reps < 1) {
		fprintf(stderr, "usage: %s [reps] POLICY.bpf.o...\n", argv[0]);
		return 2;
	}
	setenv("NCCLBPF_RANK_LOCAL", "allow", 1);
	double *open_us = calloc((size_t)reps, sizeof(double));
	double *prep_us = calloc((size_t)reps, sizeof(double));
	if (!open_us || !prep_us)
		return 1;
	printf("%-24s %6s %12s %12s %14s %14s %10s\n", "policy", "insns", "open P50 us",
	       "open max us", "prepare P50 us", "prepare max us", "JIT");
	int failed = 0;
	for (int a = first; a < argc; a++) {
		size_t insns = 0;
		int jitted = 0;
		for (int r = 0; r < reps; r++) {
			char err[1024];
			struct ncclbpf_object *obj = NULL;
			double t0 = now_us();
			if (ncclbpf_object_open_file(argv[a], &obj, err, sizeof(err))) {
				fprintf(stderr, "%s: %s\n", argv[a], err);
				failed = 1;
				break;
			}
			double t1 = now_us();
			struct ncclbpf_prepare_opts opts = { .sz = sizeof(opts) };
			double prep = 0;
			for (size_t i = 0; i < ncclbpf_object_program_count(obj); i++) {
				struct ncclbpf_program *p = ncclbpf_object_program(obj, i);
				double p0 = now_us();
				if (ncclbpf_program_prepare(p, NCCLBPF_HOOK_AUTO, &opts, err, sizeof(err))) {
					fprintf(stderr, "%s: %s\n", argv[a], err);
					failed = 1;
				}
				prep += now_us() - p0;
				insns += r == 0 ? ncclbpf_program_insn_count(p) : 0;
				jitted = ncclbpf_program_is_jitted(p);
			}
			open_us[r] = t1 - t0;
			prep_us[r] = prep;
			ncclbpf_object_close(obj);
		}
		qsort(open_us, (size_t)reps, sizeof(double), cmp_double);
		qsort(prep_us, (size_t)reps, sizeof(double), cmp_double);
		const char *name = strrchr(argv[a], '/');
		printf("%-24s %6zu %12.1f %12.1f %14.1f %14.1f %10s\n", name ? name + 1 : argv[a], insns,
		       open_us[reps / 2], open_us[reps - 1], prep_us[reps / 2], prep_us[reps - 1],
		       jitted ? "yes" : "no");
	}
	free(open_us);
	free(prep_us);
	return failed;
}
