/* libncclbpf.so is injected into every rank of a training job: it may depend on libc,
 * libpthread and libdl only (plus the sanitizer runtimes in a sanitizer build), and every
 * dependency must resolve. */
#include <stdlib.h>

#include "cli_run.h"
#include "test_util.h"

static int allowed(const char *lib, int sanitize)
{
	static const char *ok[] = {"libc.so.6", "libpthread.so.0", "libdl.so.2"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(lib, ok[i]))
			return 1;
	return sanitize && (!strncmp(lib, "libasan.so", 10) || !strncmp(lib, "libubsan.so", 11));
}

int main(int argc, char **argv)
{
	int sanitize = argc > 1 && !strcmp(argv[1], "--sanitize");
	char *out = NULL;
	int needed = 0;

	CHECK(cli_run_alloc("readelf -d libncclbpf.so", &out, NULL) == 0);
	for (char *p = out ? strstr(out, "(NEEDED)") : NULL; p; p = strstr(p + 1, "(NEEDED)")) {
		char lib[256] = "";
		const char *lb = strchr(p, '[');
		if (lb)
			sscanf(lb + 1, "%255[^]]", lib);
		needed++;
		int ok = allowed(lib, sanitize);
		CHECK(ok);
		if (!ok)
			fprintf(stderr, "libncclbpf.so needs %s: only libc, libpthread, libdl allowed\n", lib);
	}
	CHECK(needed >= 1);
	free(out);
	CHECK(cli_run_alloc("ldd libncclbpf.so 2>&1", &out, NULL) == 0);
	CHECK(out && !strstr(out, "not found"));
	CHECK_STR_CONTAINS(out, "libc.so.6");
	free(out);
	/* the plugin names NCCL resolves */
	CHECK(cli_run_alloc("ls libnccl-tuner-ncclbpf.so libnccl-profiler-ncclbpf.so", &out, NULL) == 0);
	free(out);
	TEST_DONE();
}
