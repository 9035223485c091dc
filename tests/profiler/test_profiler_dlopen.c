/* The built libncclbpf.so as NCCL sees it (dlopen RTLD_NOW | RTLD_LOCAL, dlsym by name):
 * ncclProfiler_v1 .. v6 are exported data objects with every function set; each version
 * inits (always success), honours NCCLBPF_PROFILE for the activation mask, and runs a
 * collective with PXN events and NULL handles without a fault.
 * Usage: test_profiler_dlopen LIBNCCLBPF.so */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "plugin/profiler/nccl_profiler_abi.h"
#include "profiler_host.h"
#include "test_util.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s LIBNCCLBPF.so\n", argv[0]);
		return 2;
	}
	setenv("NCCLBPF_PROFILE", "full", 1);
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_POLICY");
	for (int v = 1; v <= 7; v++) {
		struct ph_host h;
		char err[512];
		int rc = ph_open(&h, argv[1], v, err, sizeof(err));
		if (rc)
			fprintf(stderr, "%s\n", err);
		CHECK(rc == 0);
		if (rc)
			continue;
		/* every table starts with name and five function pointers */
		const struct nb_profiler_v5 *t = h.table;
		CHECK(t->name && !strcmp(t->name, "ncclbpf"));
		CHECK(t->init && t->startEvent && t->stopEvent && t->recordEventState && t->finalize);
		struct ph_comm c;
		CHECK(ph_comm_init(&h, &c, 0xd1000 + (uint64_t)v, "dl", 2, 4, 1) == 0);
		uint32_t all = v == 7 ? NB_PROF_ALL_V7 : v == 6 ? NB_PROF_ALL_V6 : v == 5 ? NB_PROF_ALL_V5 : v >= 3 ? NB_PROF_ALL_V3 : NB_PROF_ALL_V1;
		CHECK_EQ_U64(h.mask, all);
		for (int i = 0; i < 8; i++) {
			struct ph_coll k = {.coll_type = i % 5, .count = 4096, .algo = 1, .proto = 2,
					    .n_channels = 2, .gpu_ns = 1000, .network = true,
					    .steps = 2, .proxy_pid = i % 2 ? getpid() + 7 : 0};
			ph_coll_run(&c, &k);
		}
		CHECK(ph_stop(&h, NULL) == 0);
		CHECK(ph_record(&h, NULL, NB_PROF_ST_NET_PLUGIN_UPDATE, 0) == 0);
		CHECK(ph_comm_finalize(&c) == 0);
		ph_close(&h);
	}
	TEST_DONE();
}
