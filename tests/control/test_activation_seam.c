/* The activation seam for reloads across ranks (runtime.h: runtime_activation_ops), driven
 * by a stand-in for the agreement layer: a reload is staged (published gated), each
 * communicator keeps the old chain until the layer names its activation seq, then switches
 * exactly at that collective; an abandoned activation restores the old chain for every
 * communicator, and frees the staged one. While one is pending, further reloads get -EBUSY.
 * Run twice: with chains of two programs (reload_a/b), and with one program per version
 * (argv: reload_one's one_a and one_b), which the tuner's straight path calls directly
 * whenever no gate is open (runtime_hook_direct, checked at each step). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

#include "plugin/tuner/tuner.h"
#include "runtime/control.h"
#include "runtime/runtime.h"
#include "test_util.h"
#include "vm/vm.h"

#define COMMS 4
#define CALLS 20000

static void *ctx[COMMS];
static uint8_t picked[COMMS][CALLS]; /* 'A', 'B', or '?' per collective seq */
static atomic_long progress[COMMS];
static _Atomic uint64_t act_seq[COMMS];
static _Atomic uint64_t begun_version;
/* workers wait at seq 6000 until the main thread opens the gate: in round 1 once the layer
 * has named the switch points (8000 and later; the real layer picks points far enough
 * ahead, this makes "ahead" deterministic), in round 2 once the activation is abandoned
 * (so that every communicator makes calls after it, whenever the main thread runs) */
static atomic_bool gate_open;

static _Atomic uint64_t begun_content;

static int seam_begin(uint64_t version, uint64_t content, void *arg)
{
	(void)arg;
	atomic_store(&begun_content, content);
	atomic_store(&begun_version, version);
	return 1; /* the "layer" takes charge */
}

static uint64_t seam_seq(uint64_t comm_id, uint64_t version, void *arg)
{
	(void)arg;
	if (version != atomic_load(&begun_version) || comm_id < 0x7000 || comm_id >= 0x7000 + COMMS)
		return UINT64_MAX;
	return atomic_load_explicit(&act_seq[comm_id - 0x7000], memory_order_acquire);
}

static atomic_int poll_verdict;
static int seam_poll(uint64_t version, void *arg)
{
	(void)arg;
	return version == atomic_load(&begun_version) ? atomic_load(&poll_verdict) : 0;
}

/* The straight path's view of the slot (runtime_hook_direct): nothing while a gate is open
 * (every communicator takes the gated general path), else the published chain when its
 * program can be called directly (reload_one's can, where the JIT runs). */
static bool expect_direct;
static void check_direct(int line, bool gated_now)
{
	const struct nb_hook_chain *t = runtime_hook_chain(NB_HOOK_TUNER);
	const struct nb_hook_chain *d =
		atomic_load_explicit(&runtime_hook_direct[NB_HOOK_TUNER], memory_order_acquire);
	const struct nb_hook_chain *want = !gated_now && t && t->direct_entry ? t : NULL;
	if (d != want) {
		fprintf(stderr, "line %d: runtime_hook_direct %p, want %p (slot %p)\n", line,
			(const void *)d, (const void *)want, (const void *)t);
		CHECK(d == want);
	}
	if (expect_direct && t && !gated_now && vm_jit_available())
		CHECK(d == t);
}

static void *worker(void *arg)
{
	int c = (int)(long)arg;
	for (long s = 0; s < CALLS; s++) {
		float table[21];
		for (int i = 0; i < 21; i++)
			table[i] = 10.0f + (float)i;
		int nch = 0;
		tuner_get_coll_info(ctx[c], 4, 4096, 1, (float **)table, 7, 3, 0, &nch);
		picked[c][s] = table[1 * 3 + 2] == 0.0f && nch == 7   ? 'A'
			       : table[0] == 0.0f && nch == 9         ? 'B'
								      : '?';
		atomic_store(&progress[c], s + 1);
		if (s % 64 == 0)
			usleep(50); /* leave the main thread room on a 2-core machine */
		while (s == 6000 && !atomic_load(&gate_open))
			usleep(100);
	}
	return NULL;
}

static void wait_progress(long at_least)
{
	for (int c = 0; c < COMMS; c++)
		while (atomic_load(&progress[c]) < at_least)
			usleep(200);
}

static void run_round(pthread_t *th)
{
	for (int c = 0; c < COMMS; c++) {
		atomic_store(&progress[c], 0);
		pthread_create(&th[c], NULL, worker, (void *)(long)c);
	}
}

int main(int argc, char **argv)
{
	const char *spec_a = argc > 2 ? argv[1] : "tests/progs/reload_a.bpf.o";
	const char *spec_b = argc > 2 ? argv[2] : "tests/progs/reload_b.bpf.o";
	expect_direct = argc > 2;
	const int n_progs = expect_direct ? 1 : 2; /* what a reload attaches */
	char msg[8192];
	pthread_t th[COMMS];
	setenv("NCCLBPF_CONTROL", "off", 1);
	setenv("NCCLBPF_POLICY", spec_a, 1);
	struct runtime_activation_ops ops = {seam_begin, seam_seq, NULL, NULL};
	runtime_set_activation_ops(&ops);
	for (int c = 0; c < COMMS; c++) {
		atomic_store(&act_seq[c], UINT64_MAX);
		tuner_comm_open(6, 0x7000 + (uint64_t)c, 8, 2, NULL, &ctx[c]);
	}

	/* round 1: staged at ~2000, activation seqs named at ~5000, committed at the end */
	run_round(th);
	wait_progress(2000);
	int rc = runtime_reload(spec_b, NB_HOOK_TUNER, 0, msg, sizeof(msg));
	CHECK(rc == n_progs);
	CHECK_STR_CONTAINS(msg, "staged (activating across ranks at an agreed seq)");
	uint64_t v = atomic_load(&begun_version);
	uint64_t content_b = atomic_load(&begun_content);
	CHECK(v > 0 && runtime_activation_pending() == v);
	CHECK(content_b != 0);
	check_direct(__LINE__, true);
	CHECK_EQ_U64(runtime_reload(spec_a, NB_HOOK_TUNER, 0, msg, sizeof(msg)),
		     (uint64_t)-EBUSY);
	CHECK_STR_CONTAINS(msg, "still activating across ranks");
	wait_progress(5000);
	uint64_t switch_at[COMMS];
	for (int c = 0; c < COMMS; c++) {
		switch_at[c] = 8000 + 700 * (uint64_t)c; /* different per communicator */
		atomic_store_explicit(&act_seq[c], switch_at[c], memory_order_release);
	}
	atomic_store(&gate_open, true);
	for (int c = 0; c < COMMS; c++)
		pthread_join(th[c], NULL);
	/* gated to the end: every decision took the general path, which records the version
	 * it ran (runtime/control.h general_mark) */
	for (int c = 0; c < COMMS; c++) {
		const struct tuner_comm *tc = ctx[c];
		CHECK_EQ_U64(atomic_load(&tc->stats.general_mark), atomic_load(&tc->stats.calls));
		CHECK_EQ_U64(atomic_load(&tc->stats.chain_version), v);
	}
	CHECK_EQ_U64(runtime_activation_done(v, true), 0);
	CHECK_EQ_U64(runtime_activation_pending(), 0);
	check_direct(__LINE__, false); /* the gate opened: B, directly */
	CHECK(runtime_activation_done(v, true) == -ENOENT);
	for (int c = 0; c < COMMS; c++) {
		long bad = 0;
		for (uint64_t s = 0; s < CALLS; s++)
			bad += picked[c][s] != (s < switch_at[c] ? 'A' : 'B');
		CHECK_EQ_U64(bad, 0);
	}

	/* round 2: staged again, abandoned (a rank could not activate in time): every
	 * communicator keeps B, and the staged chain is freed */
	for (int c = 0; c < COMMS; c++)
		atomic_store(&act_seq[c], UINT64_MAX); /* the layer has not decided yet */
	atomic_store(&gate_open, false);
	run_round(th);
	wait_progress(1000);
	CHECK(runtime_reload(spec_a, NB_HOOK_TUNER, 0, msg, sizeof(msg)) == n_progs);
	uint64_t v2 = atomic_load(&begun_version);
	CHECK(v2 > v);
	/* the content hash identifies what is activated, not the reload's number */
	CHECK(atomic_load(&begun_content) != content_b);
	wait_progress(3000);
	check_direct(__LINE__, true);
	CHECK_EQ_U64(runtime_activation_done(v2, false), 0);
	check_direct(__LINE__, false); /* abandoned: B again, directly */
	atomic_store(&gate_open, true);
	for (int c = 0; c < COMMS; c++)
		pthread_join(th[c], NULL);
	for (int c = 0; c < COMMS; c++) {
		long bad = 0;
		for (uint64_t s = 0; s < CALLS; s++)
			bad += picked[c][s] != 'B';
		CHECK_EQ_U64(bad, 0);
		/* after the abandon, a directly callable B runs on the straight path, which
		 * records nothing (`ctl status` shows the active version for it) */
		const struct tuner_comm *tc = ctx[c];
		uint64_t calls = atomic_load(&tc->stats.calls);
		uint64_t mark = atomic_load(&tc->stats.general_mark);
		if (expect_direct && vm_jit_available())
			CHECK(mark < calls);
		else
			CHECK_EQ_U64(mark, calls);
	}
	/* the same object from another path: the same content hash (ranks on other nodes) */
	uint64_t content_a = atomic_load(&begun_content);
	char copy[64], copy_spec[160], file_a[256];
	snprintf(copy, sizeof(copy), "/tmp/nbseam-%d.bpf.o", (int)getpid());
	snprintf(file_a, sizeof(file_a), "%s", spec_a);
	char *prog = strrchr(file_a, ':');
	if (prog)
		*prog++ = '\0';
	snprintf(copy_spec, sizeof(copy_spec), "%s%s%s", copy, prog ? ":" : "", prog ? prog : "");
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "cp %s %s", file_a, copy);
	CHECK(system(cmd) == 0);
	CHECK(runtime_reload(copy_spec, NB_HOOK_TUNER, 0, msg, sizeof(msg)) == n_progs);
	CHECK_EQ_U64(atomic_load(&begun_content), content_a);
	CHECK_EQ_U64(runtime_activation_done(atomic_load(&begun_version), false), 0);
	unlink(copy);
	const struct nb_hook_chain *t = runtime_hook_chain(NB_HOOK_TUNER);
	CHECK(t && t->version == v && !atomic_load(&t->gated));
	runtime_reclaim();
	struct runtime_registry_stats rs;
	runtime_registry_stats(&rs);
	CHECK_EQ_U64(rs.retired_pending, 0);
	CHECK_EQ_U64(rs.objects_live, 1);

	/* the control thread's poll ends an activation when the layer says so */
	struct runtime_activation_ops ops_poll = {seam_begin, seam_seq, seam_poll, NULL};
	runtime_set_activation_ops(&ops_poll);
	CHECK(runtime_reload(spec_b, NB_HOOK_TUNER, 0, msg, sizeof(msg)) == n_progs);
	runtime_activation_poll();
	CHECK(runtime_activation_pending() == atomic_load(&begun_version)); /* 0: not yet */
	atomic_store(&poll_verdict, -1);
	runtime_activation_poll();
	CHECK_EQ_U64(runtime_activation_pending(), 0); /* abandoned */
	t = runtime_hook_chain(NB_HOOK_TUNER);
	CHECK(t && t->version == v && !atomic_load(&t->gated));

	/* without a layer (or when it declines), a tuner reload in a multi-rank job is
	 * refused: ranks would switch at different collectives */
	runtime_set_activation_ops(NULL);
	CHECK(runtime_reload(spec_a, NB_HOOK_TUNER, 0, msg, sizeof(msg)) ==
	      -EPERM);
	CHECK_STR_CONTAINS(msg, "can deadlock NCCL");
	CHECK(runtime_detach(NB_HOOK_TUNER, 0, msg, sizeof(msg)) == -EPERM);
	t = runtime_hook_chain(NB_HOOK_TUNER);
	CHECK(t && t->version == v); /* unchanged */
	/* ... unless forced: then it switches at once */
	CHECK(runtime_reload(spec_a, NB_HOOK_TUNER, RUNTIME_RELOAD_FORCE, msg,
			     sizeof(msg)) == n_progs);
	CHECK_STR_CONTAINS(msg, "active version");
	t = runtime_hook_chain(NB_HOOK_TUNER);
	CHECK(t && !atomic_load(&t->gated));
	check_direct(__LINE__, false);
	for (int c = 0; c < COMMS; c++)
		tuner_comm_close(ctx[c]);
	runtime_unload_policies();
	check_direct(__LINE__, false); /* nothing attached: NULL */
	CHECK(atomic_load(&runtime_hook_direct[NB_HOOK_TUNER]) == NULL);
	TEST_DONE();
}
