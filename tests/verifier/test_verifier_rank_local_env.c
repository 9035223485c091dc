/* NCCLBPF_RANK_LOCAL through the public API: a policy deciding from the latency map is
 * refused by ncclbpf_program_prepare by default (E-RANK-LOCAL in the error), loads with
 * NCCLBPF_RANK_LOCAL=allow, and an unknown value means strict. A rank-invariant policy loads
 * either way.
 * Usage: test_verifier_rank_local_env BINARY_DIR */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ncclbpf/ncclbpf.h"
#include "test_util.h"

static const char *bin;

/* prepare of the first program of policies/<name>.bpf.o with NCCLBPF_RANK_LOCAL = env */
static int prepare(const char *name, const char *env, char *err, size_t errlen)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/policies/%s.bpf.o", bin, name);
	if (env)
		setenv("NCCLBPF_RANK_LOCAL", env, 1);
	else
		unsetenv("NCCLBPF_RANK_LOCAL");
	struct ncclbpf_object *obj = NULL;
	int rc = ncclbpf_object_open_file(path, &obj, err, errlen);
	CHECK(rc == 0);
	if (rc) {
		fprintf(stderr, "%s: %s\n", path, err);
		return rc;
	}
	rc = ncclbpf_program_prepare(ncclbpf_object_program(obj, 0), NCCLBPF_HOOK_AUTO, NULL, err,
				     errlen);
	ncclbpf_object_close(obj);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s BINARY_DIR\n", argv[0]);
		return 2;
	}
	bin = argv[1];
	unsetenv("NCCLBPF_VERIFY"); /* strict verification */
	char err[2048];
	static const char *const rank_local[] = { "unsafe/rank_local_latency",
						  "unsafe/rank_local_ktime" };
	for (int i = 0; i < 2; i++) {
		CHECK(prepare(rank_local[i], NULL, err, sizeof(err)) == -EACCES);
		CHECK_STR_CONTAINS(err, "[E-RANK-LOCAL]");
		CHECK_STR_CONTAINS(err, "NCCLBPF_RANK_LOCAL=allow");
		CHECK(prepare(rank_local[i], "strict", err, sizeof(err)) == -EACCES);
		CHECK(prepare(rank_local[i], "allowed", err, sizeof(err)) == -EACCES);
		CHECK(prepare(rank_local[i], "allow", err, sizeof(err)) == 0);
	}
	CHECK(prepare("size_aware", NULL, err, sizeof(err)) == 0);
	/* the closed-loop policies read agreed maps: accepted in strict mode */
	CHECK(prepare("adaptive_channels", NULL, err, sizeof(err)) == 0);
	CHECK(prepare("slo_enforcer", NULL, err, sizeof(err)) == 0);
	CHECK(prepare("table_rules", NULL, err, sizeof(err)) == 0);
	CHECK(prepare("size_aware", "allow", err, sizeof(err)) == 0);
	TEST_DONE();
}
