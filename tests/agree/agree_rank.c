/* One rank of a simulated job for the agreement tests: the mock NCCL host dlopens the built
 * libncclbpf.so as NCCL 2.30 does (tuner v6 + profiler v6 from the same library), creates
 * one communicator as rank R of N, and runs S AllReduce collectives: getCollInfo ->
 * NCCL's selection -> a synthetic latency that depends on the rank and the channel count
 * -> the profiler's events (so the policy's profiler program contributes to its agreed
 * map). Decisions go to NCCLBPF_DECISION_LOG; the test script checks them with
 * `ncclbpf decisions`.
 *
 * usage: agree_rank LIB.so RANK NRANKS STEPS [--sleep-us U] [--late-ms L] [--comm HEX]
 *                   [--bytes B] [--seed X] [--no-profiler 1] [--comm2 HEX]
 *                   [--comm2-at FILE] [--comm2-step N] [--hold FILE] [--until FILE] [--gate FILE]
 * --no-profiler 1: NCCL did not load ncclbpf's profiler plugin on this rank (tuner only,
 * so the plugin never learns the rank: docs/agreement.md "A rank without the profiler").
 * --comm2 HEX: a second communicator, created by every rank right after the first collective
 * of the first one that the tuner decided as Tree (multinode_fix's decision in the reload
 * tests: the step right after the reload switched, the same step on every rank, as an SPMD
 * program would); from then on each step runs one collective on each communicator
 * (tests/control/run_reload_newcomm.sh).
 * --comm2-at FILE (with --comm2): instead, create it at the start of step N, N read from FILE
 * at every step once the file exists (the test writes it); prints "step S" every 50 steps.
 * NEWCOMM_SWITCH_DELAY_MS=D (environment, test of the test): with --comm2, sleep D ms
 * after the first Tree decision, before creating the second communicator - a main
 * thread descheduled there on a loaded machine (run_reload_newcomm.sh's "after" must
 * still test what it says).
 * --hold FILE: before finalizing, wait until FILE exists (at most 120 s): an explicit
 * synchronization point, so that a rank's exit never races what the test checks. Prints
 * "rank R holding" when it starts to wait.
 * --comm2-step N (with --comm2): create the second communicator at the start of step N.
 * --gate FILE: the main thread runs step S only while S < the number in FILE (re-read when
 *   it gets there, every ms; a missing file: wait). Prints "gate S" once when it starts to
 *   wait at S. The test moves every rank to the same step and holds them there while it acts
 *   (an explicit synchronization point: what it does then takes no collectives, however slow
 *   the machine or the script); it writes a large number to let them run free.
 * --until FILE: STEPS is only a cap; once FILE exists (checked every 64 steps), stop - at
 * once when it is empty, else at the first multiple of 64 >= the number N it holds - so a
 * test ends the ranks after what it waits for happened, however slow the machine (never a
 * rank that finished before a kill).
 * --also-rank R2: this process also holds rank R2 of the communicator (a process driving
 *   two GPUs, as ncclCommInitAll or nccl-tests -g 2 make one): a second tuner context and
 *   profiler communicator with the same id, both ranks' collectives run at every step.
 * Exit 0 after finalizing; prints "rank R done: ... fallback=..." from the plugin's log. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mock_nccl.h"
#include "profiler_host.h"

static void sleep_us(unsigned long us)
{
	struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
	nanosleep(&ts, NULL);
}

/* Latency of one collective at ch channels on this rank: every rank has a different best
 * channel count and base speed, plus a little deterministic jitter. */
static uint64_t synth_latency(int rank, int ch, uint64_t step, uint64_t seed)
{
	int best = 4 << (rank % 3);                  /* 4, 8, 16 */
	int d = ch > best ? ch - best : best - ch;
	uint64_t base = 40000 + 5000ull * (uint64_t)rank;
	uint64_t x = (step * 2654435761ull) ^ (seed + (uint64_t)rank * 97);
	uint64_t jitter = (x >> 7) % 2000;
	return base + 3000ull * (uint64_t)(d * d) + jitter;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s LIB.so RANK NRANKS STEPS [--sleep-us U] [--late-ms L] "
				"[--comm HEX] [--bytes B] [--seed X]\n", argv[0]);
		return 2;
	}
	const char *lib = argv[1];
	int rank = atoi(argv[2]), n_ranks = atoi(argv[3]);
	long steps = atol(argv[4]);
	unsigned long sleep = 0, late_ms = 0;
	bool no_profiler = false;
	uint64_t comm = 0xa9ee0001ull, bytes = 1 << 20, seed = 1, comm2 = 0;
	const char *comm2_at = NULL, *hold = NULL, *until = NULL;
	long until_at = -1;
	long comm2_step = -1;
	const char *gate = NULL;
	int also_rank = -1;
	long gate_at = 0; /* the last limit read from the gate file */
	const char *sd = getenv("NEWCOMM_SWITCH_DELAY_MS");
	unsigned long switch_delay_ms = sd ? strtoul(sd, NULL, 10) : 0;
	for (int i = 5; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--sleep-us"))
			sleep = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--late-ms"))
			late_ms = strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--comm"))
			comm = strtoull(argv[i + 1], NULL, 16);
		else if (!strcmp(argv[i], "--bytes"))
			bytes = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--seed"))
			seed = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--comm2"))
			comm2 = strtoull(argv[i + 1], NULL, 16);
		else if (!strcmp(argv[i], "--comm2-at"))
			comm2_at = argv[i + 1];
		else if (!strcmp(argv[i], "--no-profiler"))
			no_profiler = atoi(argv[i + 1]) != 0;
		else if (!strcmp(argv[i], "--hold"))
			hold = argv[i + 1];
		else if (!strcmp(argv[i], "--until"))
			until = argv[i + 1];
		else if (!strcmp(argv[i], "--comm2-step"))
			comm2_step = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--gate"))
			gate = argv[i + 1];
		else if (!strcmp(argv[i], "--also-rank"))
			also_rank = atoi(argv[i + 1]);
	}
	if (rank < 0 || rank >= n_ranks || steps <= 0 || also_rank >= n_ranks || also_rank == rank ||
	    (also_rank >= 0 && comm2))
		return 2;
	if (late_ms)
		sleep_us(late_ms * 1000); /* a rank that joins late */

	static struct mock_nccl m;
	if (mock_nccl_load_tuner(&m, 230, lib, 0) != 0 || m.tuner_version != 6) {
		fprintf(stderr, "rank %d: load tuner: %s\n", rank, m.err);
		return 1;
	}
	struct ph_host h;
	char err[256];
	int n_nodes = n_ranks;
	struct ph_comm pc;
	if (!no_profiler) {
		if (ph_open(&h, lib, 6, err, sizeof(err)) != 0) {
			fprintf(stderr, "rank %d: load profiler: %s\n", rank, err);
			return 1;
		}
		if (ph_comm_init(&h, &pc, comm, "agree", n_nodes, n_ranks, rank) != 0)
			return 1;
	}
	struct mock_comm mc;
	if (mock_comm_init(&m, &mc, comm, n_ranks, n_nodes) != 0)
		return 1;
	struct mock_comm mcb; /* --also-rank: the same communicator's other rank here */
	struct ph_comm pcb;
	if (also_rank >= 0) {
		if (!no_profiler &&
		    ph_comm_init(&h, &pcb, comm, "agree", n_nodes, n_ranks, also_rank) != 0)
			return 1;
		if (mock_comm_init(&m, &mcb, comm, n_ranks, n_nodes) != 0)
			return 1;
	}

	struct mock_comm mc2;
	struct ph_comm pc2;
	bool second = false;
	long create_at = -1;
	for (long s = 0; s < steps; s++) {
		for (bool said = false; gate && s >= gate_at;) {
			FILE *f = fopen(gate, "r");
			if (f) {
				if (fscanf(f, "%ld", &gate_at) != 1)
					gate_at = 0;
				fclose(f);
			}
			if (s < gate_at)
				break;
			if (!said) {
				printf("gate %ld\n", s);
				fflush(stdout);
				said = true;
			}
			sleep_us(1000);
		}
		if (until && s % 64 == 0) {
			FILE *f = until_at < 0 ? fopen(until, "r") : NULL;
			if (f) {
				if (fscanf(f, "%ld", &until_at) != 1)
					until_at = 0; /* empty: stop now */
				fclose(f);
			}
			if (until_at >= 0 && s >= until_at) {
				steps = s;
				break;
			}
		}
		if (comm2 && comm2_step >= 0 && !second && s == comm2_step) {
			if (!no_profiler &&
			    ph_comm_init(&h, &pc2, comm2, "agree2", n_nodes, n_ranks, rank) != 0)
				return 1;
			if (mock_comm_init(&m, &mc2, comm2, n_ranks, n_nodes) != 0)
				return 1;
			second = true;
		}
		if (comm2 && comm2_at && !second) {
			if (s % 50 == 0) {
				printf("step %ld\n", s);
				fflush(stdout);
			}
			FILE *f = create_at < 0 ? fopen(comm2_at, "r") : NULL;
			if (f) {
				if (fscanf(f, "%ld", &create_at) != 1)
					create_at = -1;
				fclose(f);
			}
			if (s == create_at) {
				if (!no_profiler &&
				    ph_comm_init(&h, &pc2, comm2, "agree2", n_nodes, n_ranks, rank) != 0)
					return 1;
				if (mock_comm_init(&m, &mc2, comm2, n_ranks, n_nodes) != 0)
					return 1;
				second = true;
			}
		}
		for (int c = 0; c < 1 + second + (also_rank >= 0); c++) {
			/* c = 1: the second communicator, or --also-rank's rank of the first */
			bool other = c && also_rank >= 0;
			struct mock_comm *cm = other ? &mcb : c ? &mc2 : &mc;
			int r = other ? also_rank : rank;
			float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
			mock_cost_table(table, MOCK_TOPO_MULTI_NODE, 4, bytes, n_ranks, n_nodes);
			int n_ch = 0, algo = 1, proto = 2;
			mock_comm_get_coll_info(cm, 4, bytes, 1, 0, table, &n_ch);
			if (mock_select(230, table, &algo, &proto) != 0)
				return 1;
			int ch = n_ch > 0 && n_ch < cm->nccl_channels ? n_ch : cm->nccl_channels;
			struct ph_coll k = {.coll_type = 4, .count = bytes / 4, .algo = algo,
					    .proto = proto, .n_channels = ch,
					    .gpu_ns = synth_latency(r, ch, (uint64_t)s, seed)};
			if (!no_profiler)
				ph_coll_run(other ? &pcb : c ? &pc2 : &pc, &k);
			if (!c && !second && comm2 && !comm2_at && comm2_step < 0 && algo == 0 /* Tree */) {
				/* the second communicator, created between two collectives */
				if (switch_delay_ms) /* this thread descheduled right here */
					sleep_us(switch_delay_ms * 1000);
				if (!no_profiler &&
				    ph_comm_init(&h, &pc2, comm2, "agree2", n_nodes, n_ranks, rank) != 0)
					return 1;
				if (mock_comm_init(&m, &mc2, comm2, n_ranks, n_nodes) != 0)
					return 1;
				second = true;
				break; /* its first collective at the next step */
			}
		}
		if (sleep)
			sleep_us(sleep);
	}
	if (hold) { /* the test may wait for every rank to get here (run_agree.sh held_all) */
		printf("rank %d holding\n", rank);
		fflush(stdout);
	}
	for (int waited = 0; hold && waited < 120000 && access(hold, F_OK) != 0; waited += 10)
		sleep_us(10000);
	if (second) {
		if (!no_profiler)
			ph_comm_finalize(&pc2);
		mock_comm_finalize(&mc2);
	}
	if (also_rank >= 0) {
		if (!no_profiler)
			ph_comm_finalize(&pcb);
		mock_comm_finalize(&mcb);
	}
	if (!no_profiler)
		ph_comm_finalize(&pc);
	mock_comm_finalize(&mc);
	printf("rank %d done: %ld collectives\n", rank, steps);
	fflush(stdout);
	if (!no_profiler)
		ph_close(&h);
	mock_nccl_unload(&m);
	return 0;
}
