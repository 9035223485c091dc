/* The net plugin the way NCCL 2.28+ loads it: dlopen(RTLD_NOW | RTLD_LOCAL) of
 * libnccl-net-ncclbpf.so, ncclNetPlugin_v12 (and the v11/v10, env and tuner symbols the same
 * library exports), init per communicator, traffic, finalize, dlclose when the last
 * communicator ends, then a second dlopen/init cycle in the same process. Threads of the
 * transport must be gone after close (nothing may run while the library is "unloaded").
 * Usage: test_net_dlopen LIBDIR */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "net_harness.h"
#include "test_util.h"

static int count_threads(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

static void cycle(const char *lib, int round)
{
	void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	CHECK(dl != NULL);
	if (!dl) {
		fprintf(stderr, "%s\n", dlerror());
		return;
	}
	CHECK(dlsym(dl, "ncclNetPlugin_v10") && dlsym(dl, "ncclNetPlugin_v11"));
	CHECK(dlsym(dl, "ncclEnvPlugin_v1") && dlsym(dl, "ncclEnvPlugin_v2"));
	CHECK(dlsym(dl, "ncclTunerPlugin_v5") != NULL); /* NCCL finds the tuner here too */
	struct hnet a, b; /* two communicators */
	CHECK(hnet_open(&a, dl, 12) == 0 && hnet_open(&b, dl, 12) == 0);
	CHECK(hnet_init(&a, 100 + (uint64_t)round) == 0);
	CHECK(hnet_init(&b, 200 + (uint64_t)round) == 0);
	CHECK(!strcmp(*(const char *const *)a.table, "ncclbpf"));
	int threads0 = count_threads();
	char handle[NB_NET_HANDLE_MAXSIZE];
	void *lc = NULL, *sc = NULL, *rc = NULL;
	CHECK(hnet_listen(&a, 0, handle, &lc) == 0);
	while (!sc || !rc) {
		if (!sc)
			CHECK(hnet_connect_step(&b, 0, handle, &sc) == 0);
		if (!rc)
			CHECK(hnet_accept_step(&a, lc, &rc) == 0);
	}
	size_t n = 3u << 20; /* large: worker threads start */
	char *s = malloc(n), *r = malloc(n);
	hnet_fill(s, n, (uint64_t)round);
	void *sreq = NULL;
	int got = 0;
	CHECK(hnet_isend(&b, sc, s, n, 1, NULL, &sreq) == 0 && sreq);
	CHECK(hnet_recv_msg(&a, rc, r, n, 1, &got, 20000) == 0 && got == (int)n);
	CHECK(hnet_wait(&b, sreq, &got, 20000) == 0);
	CHECK(hnet_verify(r, n, (uint64_t)round));
	CHECK(count_threads() > threads0);
	CHECK(hnet_close_send(&b, sc) == 0);
	CHECK(hnet_close_recv(&a, rc) == 0);
	CHECK(hnet_close_listen(&a, lc) == 0);
	CHECK(count_threads() == threads0); /* every worker joined */
	CHECK(hnet_finalize(&a) == 0);
	CHECK(hnet_finalize(&b) == 0);
	free(s);
	free(r);
	CHECK(dlclose(dl) == 0); /* NCCL 2.28+: the last communicator is gone */
}

int main(int argc, char **argv)
{
	char lib[1024];
	snprintf(lib, sizeof(lib), "%s/libnccl-net-ncclbpf.so", argc > 1 ? argv[1] : ".");
	setenv("NCCL_SOCKET_IFNAME", "lo", 0);
	int threads = count_threads();
	for (int round = 0; round < 3; round++)
		cycle(lib, round);
	CHECK(count_threads() == threads);
	TEST_DONE();
}
