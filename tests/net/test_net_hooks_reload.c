/* Hot reload of SEC("net") programs while the data path runs them: a thread runs the net
 * hooks (as isend/test do) back to back while the main thread replaces the net chain 150
 * times. The hook path must hold an epoch section (runtime_chain_enter) for the whole run,
 * or the reload frees the chain and its program mid-run: use after free (ASan), or a crash
 * in the unmapped JIT code. argv[1]: a slow net program (tests/net/progs/net_slow.bpf.o). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "plugin/net/net_plugin.h"
#include "runtime/runtime.h"
#include "test_util.h"

static _Atomic int stop;
static _Atomic uint64_t runs;

static void *runner(void *arg)
{
	(void)arg;
	struct net_hook_args a = { .comm_id = 1, .conn_id = 2, .bytes = 4096, .op = NET_OP_ISEND,
				   .abi_version = 12, .tag = 1 };
	while (!atomic_load(&stop)) {
		a.bytes++;
		net_hooks_run(&a);
		atomic_fetch_add(&runs, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	CHECK(argc == 2);
	if (argc != 2)
		TEST_DONE();
	CHECK(runtime_load_policies(argv[1]) == 1);
	CHECK(net_hooks_active());
	pthread_t t;
	CHECK(pthread_create(&t, NULL, runner, NULL) == 0);
	int ok = 0;
	char msg[1024];
	for (int i = 0; i < 150; i++) {
		uint64_t before = atomic_load(&runs);
		if (runtime_reload(argv[1], NB_HOOK_NET, 0, msg, sizeof(msg)) > 0)
			ok++;
		else
			fprintf(stderr, "reload %d: %s\n", i, msg);
		while (atomic_load(&runs) < before + 2) /* the runner is inside the hooks */
			sched_yield();
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	CHECK(ok == 150);
	CHECK(runtime_fault_count(NB_HOOK_NET) == 0);
	runtime_reclaim();
	struct runtime_registry_stats st;
	runtime_registry_stats(&st);
	CHECK(st.retired_pending == 0);
	fprintf(stderr, "%llu hook runs during 150 reloads\n", (unsigned long long)atomic_load(&runs));
	TEST_DONE();
}
