/* The policy registry: NCCLBPF_POLICY parsing, attach order, error entries (one WARN each,
 * skipped), `file:prog`, chain replacement while other threads run chains, fault counts. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "rt_test_common.h"
#include "test_util.h"

static int32_t run_tuner_chain(void)
{
	struct ncclbpf_tuner_ctx c;
	rt_tuner_ctx(&c, 1, 4096, NCCLBPF_COLL_ALLREDUCE);
	/* a reader section: a concurrent reload frees the chain only after we leave */
	runtime_chain_run(runtime_chain_enter(NB_HOOK_TUNER), &c, sizeof(c));
	runtime_chain_exit();
	return c.n_channels;
}

static void test_order(void)
{
	CHECK(runtime_hook_chain(NB_HOOK_TUNER) == NULL);
	CHECK_EQ_U64(runtime_load_policies(RT_PROG("runtime_order")), 3);
	/* held in a reader section across the reload below */
	const struct nb_hook_chain *t = runtime_chain_enter(NB_HOOK_TUNER);
	CHECK(t && t->len == 2 && t->hook == NB_HOOK_TUNER);
	if (t && t->len == 2) {
		CHECK(!strcmp(t->items[0].label, "runtime_order.bpf.o:first"));
		CHECK(!strcmp(t->items[1].label, "runtime_order.bpf.o:second"));
	}
	CHECK_EQ_U64(run_tuner_chain(), 12);
	const struct nb_hook_chain *ch = runtime_hook_chain(NB_HOOK_TUNER_CHUNK);
	CHECK(ch && ch->len == 1);
	struct ncclbpf_chunk_ctx cc = {.chunk_size = 10};
	CHECK(runtime_chain_run(ch, &cc, sizeof(cc)) == 0);
	CHECK_EQ_U64(cc.chunk_size, 20);
	CHECK(runtime_hook_chain(NB_HOOK_PROFILER) == NULL);

	/* explicit programs, in the order given (whitespace around entries ignored) */
	CHECK_EQ_U64(runtime_load_policies(" " RT_PROG("runtime_order") ":second , "
					   RT_PROG("runtime_order") ":first"), 2);
	CHECK_EQ_U64(run_tuner_chain(), 21);
	CHECK(runtime_hook_chain(NB_HOOK_TUNER_CHUNK) == NULL);
	/* the replaced chain stays valid for a reader still inside its section */
	struct ncclbpf_tuner_ctx c;
	struct runtime_registry_stats rs;
	rt_tuner_ctx(&c, 1, 1, 1);
	CHECK(runtime_chain_run(t, &c, sizeof(c)) == 0);
	CHECK_EQ_U64(c.n_channels, 12);
	CHECK(runtime_reclaim() >= 1);
	runtime_registry_stats(&rs);
	CHECK(rs.retired_pending >= 1);
	runtime_chain_exit();
	/* ... and is freed once it left */
	CHECK_EQ_U64(runtime_reclaim(), 0);
	runtime_registry_stats(&rs);
	CHECK_EQ_U64(rs.retired_pending, 0);
}

static void test_bad_entries(void)
{
	rt_clear_logs();
	int n = runtime_load_policies(
		"tests/progs/missing.bpf.o,"
		RT_PROG("runtime_bad") ","               /* unchecked rejected, good attached */
		RT_PROG("runtime_order") ":nosuch,"      /* unknown program */
		RT_PROG("runtime_bad") ":nohook,"        /* section names no hook */
		RT_PROG("runtime_bad") ":unchecked,"     /* verifier rejection */
		"CMakeCache.txt,"                        /* not an ELF */
		",,"
		RT_PROG("runtime_order") ":first");
	CHECK_EQ_U64(n, 2);
	const char *log = rt_logs();
	CHECK_EQ_U64(rt_warn_count(), 6);
	CHECK_STR_CONTAINS(log, "policy tests/progs/missing.bpf.o skipped: ");
	CHECK_STR_CONTAINS(log, "runtime_bad.bpf.o:unchecked skipped: ");
	CHECK_STR_CONTAINS(log, "E-NULL-DEREF");
	CHECK_STR_CONTAINS(log, "no program 'nosuch' in tests/progs/runtime_order.bpf.o "
				"(programs: first, second, chunk)");
	CHECK_STR_CONTAINS(log, "runtime_bad.bpf.o:nohook skipped: its section 'other' names no hook");
	CHECK_STR_CONTAINS(log, "policy CMakeCache.txt skipped: ");
	CHECK_STR_CONTAINS(log, "attached tests/progs/runtime_bad.bpf.o:good to hook tuner");
	const struct nb_hook_chain *t = runtime_hook_chain(NB_HOOK_TUNER);
	CHECK(t && t->len == 2);
	CHECK_EQ_U64(run_tuner_chain(), 51); /* good sets 5, first appends 1 */
	CHECK(runtime_find_map("m") != NULL);
	CHECK(runtime_find_map("no_such_map") == NULL);

	/* nothing loadable: pass-through */
	rt_clear_logs();
	CHECK_EQ_U64(runtime_load_policies("nope.o"), 0);
	CHECK(runtime_hook_chain(NB_HOOK_TUNER) == NULL);
	CHECK_EQ_U64(runtime_load_policies(""), 0);
}

/* A hot reload is all or nothing: a bad entry refuses the whole reload, and the reply says
 * so - never "skipped", which reads as if the rest had been applied. */
static void test_reload_wording(void)
{
	char msg[4096];
	CHECK(runtime_reload("tests/progs/missing.bpf.o," RT_PROG("runtime_order") ":first",
			     NB_HOOK_COUNT, 0, msg, sizeof(msg)) < 0);
	CHECK_STR_CONTAINS(msg, "error: policy tests/progs/missing.bpf.o refused: ");
	CHECK(strstr(msg, "skipped") == NULL);
	CHECK_STR_CONTAINS(msg, "nothing was reloaded: the running policy is unchanged");
	CHECK(runtime_reload(RT_PROG("runtime_bad") ":unchecked", NB_HOOK_COUNT, 0, msg,
			     sizeof(msg)) < 0);
	CHECK(strstr(msg, "skipped") == NULL);
	CHECK_STR_CONTAINS(msg, "nothing was reloaded");
}

static void test_faults(void)
{
	/* an unprepared program in a hand-made chain fails to run: counted, logged, and the
	 * next program still runs */
	struct ncclbpf_object *obj = rt_open(RT_PROG("runtime_order"));
	struct ncclbpf_program *first = ncclbpf_object_find_program(obj, "first");
	struct ncclbpf_program *second = ncclbpf_object_find_program(obj, "second");
	char err[256];
	CHECK(rt_prepare(second, NCCLBPF_HOOK_AUTO, 0, 0, err, sizeof(err)) == 0);
	/* a flexible array member cannot be embedded portably (clang rejects it): allocate */
	struct nb_hook_chain *chain = calloc(1, sizeof(*chain) + 2 * sizeof(struct nb_attachment));
	CHECK(chain != NULL);
	if (!chain)
		return;
	chain->hook = NB_HOOK_TUNER;
	chain->len = 2;
	chain->items[0] = (struct nb_attachment){first, "x:first", NULL};
	chain->items[1] = (struct nb_attachment){second, "x:second", NULL};
	CHECK_EQ_U64(runtime_load_policies(""), 0); /* resets the counters */
	uint64_t before = runtime_fault_count(NB_HOOK_TUNER);
	CHECK_EQ_U64(before, 0);
	rt_clear_logs();
	struct ncclbpf_tuner_ctx c;
	rt_tuner_ctx(&c, 1, 1, 1);
	CHECK(runtime_chain_run(chain, &c, sizeof(c)) == 1);
	CHECK_EQ_U64(c.n_channels, 2);
	CHECK_EQ_U64(runtime_fault_count(NB_HOOK_TUNER), 1);
	CHECK_STR_CONTAINS(rt_logs(), "x:first failed on hook tuner");
	/* a wrong context size is a failure of every program */
	CHECK(runtime_chain_run(chain, &c, sizeof(c) - 8) == 2);
	CHECK_EQ_U64(runtime_fault_count(NB_HOOK_TUNER), 3);
	CHECK(runtime_chain_run(NULL, &c, sizeof(c)) == 0);
	free(chain);
	ncclbpf_object_close(obj);
}

/* Readers run the tuner chain in a loop while the main thread swaps it between two orders;
 * every run must see one complete chain (312 or 321), never a mix or freed memory. */
static atomic_bool stop;
static atomic_long bad_results, total_runs;

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		int32_t v = run_tuner_chain();
		if (v != 312 && v != 321)
			atomic_fetch_add(&bad_results, 1);
		atomic_fetch_add(&total_runs, 1);
	}
	return NULL;
}

static void test_concurrent_reload(int reloads)
{
	const char *a = RT_PROG("runtime_maps") ":pick," RT_PROG("runtime_order") ":first,"
			RT_PROG("runtime_order") ":second";
	const char *b = RT_PROG("runtime_maps") ":pick," RT_PROG("runtime_order") ":second,"
			RT_PROG("runtime_order") ":first";
	pthread_t th[4];

	CHECK_EQ_U64(runtime_load_policies(a), 3);
	CHECK_EQ_U64(run_tuner_chain(), 312);
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, reader, NULL);
	for (int i = 0; i < reloads; i++)
		CHECK_EQ_U64(runtime_load_policies(i % 2 ? a : b), 3);
	atomic_store(&stop, true);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	CHECK_EQ_U64(atomic_load(&bad_results), 0);
	CHECK(atomic_load(&total_runs) > 0);
	printf("concurrent: %ld chain runs across %d reloads\n", atomic_load(&total_runs), reloads);
}

static void test_env(void)
{
	setenv("NCCLBPF_POLICY", RT_PROG("runtime_order") ":first", 1);
	CHECK_EQ_U64(runtime_load_policies_from_env(), 1);
	CHECK_EQ_U64(run_tuner_chain(), 1);
	setenv("NCCLBPF_POLICY", RT_PROG("runtime_order"), 1);
	CHECK_EQ_U64(runtime_load_policies_from_env(), 1); /* once per process */
	CHECK_EQ_U64(run_tuner_chain(), 1);
	runtime_unload_policies();
	CHECK(runtime_hook_chain(NB_HOOK_TUNER) == NULL);
	CHECK(runtime_hook_chain(NB_HOOK_TUNER_CHUNK) == NULL);
	CHECK(runtime_find_map("m") == NULL);
}

int main(int argc, char **argv)
{
	int reloads = argc > 1 ? atoi(argv[1]) : 20;
	rt_capture_logs();
	test_order();
	test_bad_entries();
	test_reload_wording();
	test_faults();
	test_concurrent_reload(reloads);
	test_env();
	TEST_DONE();
}
