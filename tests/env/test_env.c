/* Env plugin: file parsing (format, errors as file:line: error:), precedence against the
 * process environment, per-host sections, "no override at all" for a malformed file, the
 * audit log, env hook programs choosing among candidates, the v1/v2 ABI tables, string
 * lifetime, and the net plugin reading its configuration through the env plugin.
 * NCCLBPF_POLICY (set by CTest) = tests/env/progs/env_pick.bpf.o */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "plugin/env/env_plugin.h"
#include "plugin/net/net_tcp.h"
#include "test_util.h"

struct env_v2 {
	const char *name;
	int (*init)(uint8_t, uint8_t, uint8_t, const char *, void *);
	int (*finalize)(void);
	const char *(*get_env)(const char *);
};
struct env_v1 {
	const char *name;
	int (*init)(uint8_t, uint8_t, uint8_t, const char *);
	int (*finalize)(void);
	const char *(*get_env)(const char *);
};
extern const struct env_v1 ncclEnvPlugin_v1;
extern const struct env_v2 ncclEnvPlugin_v2;

static char dir[] = "/tmp/ncclbpf-envtest-XXXXXX";

static const char *write_file(const char *name, const char *text)
{
	static char path[4][256];
	static int k;
	char *p = path[k++ % 4];
	snprintf(p, 256, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
	return p;
}

static char *slurp(const char *path)
{
	static char buf[65536];
	int fd = open(path, O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void expect_error(const char *text, int line, const char *msg)
{
	struct env_file *f = (void *)1;
	char err[512] = "";
	int rc = env_file_parse(text, strlen(text), "x.env", "host1", &f, err, sizeof(err));
	char want[64];
	snprintf(want, sizeof(want), "x.env:%d: error: ", line);
	CHECK(rc == -EINVAL && f == NULL);
	CHECK_STR_CONTAINS(err, want);
	CHECK_STR_CONTAINS(err, msg);
}

static void t_parse(void)
{
	const char *text = "# comment\n"
			   "  \n"
			   "NCCL_ALGO = Ring\n"
			   "NCCL_PROTO=\"Simple, LL\"  \n"
			   "NCCL_ESC=\"a\\\"b\\\\c\"\n"
			   "NCCL_HASH=x#y\n"
			   "NCCL_EMPTY=\n"
			   "[host node1* other]\n"
			   "NCCL_ALGO=Tree\n"
			   "NCCL_BUFFSIZE=0x400000\n"
			   "[host gpu*]\n"
			   "NCCL_ALGO=NVLS\n"
			   "[*]\n"
			   "NCCL_ALGO=CollNet\r\n";
	struct env_file *f = NULL;
	char err[256] = "";
	CHECK(env_file_parse(text, strlen(text), "t.env", "node17.cluster", &f, err, sizeof(err)) == 0);
	CHECK(f != NULL);
	const struct env_var *v = env_file_find(f, "NCCL_ALGO");
	CHECK(v && v->n == 3);
	if (v && v->n == 3) {
		CHECK(!strcmp(v->values[0], "Ring") && v->lines[0] == 3);
		CHECK(!strcmp(v->values[1], "Tree") && v->lines[1] == 9);
		CHECK(!strcmp(v->values[2], "CollNet") && v->lines[2] == 14);
	}
	v = env_file_find(f, "NCCL_PROTO");
	CHECK(v && !strcmp(v->values[0], "Simple, LL"));
	v = env_file_find(f, "NCCL_ESC");
	CHECK(v && !strcmp(v->values[0], "a\"b\\c"));
	v = env_file_find(f, "NCCL_HASH");
	CHECK(v && !strcmp(v->values[0], "x#y"));
	v = env_file_find(f, "NCCL_EMPTY");
	CHECK(v && !strcmp(v->values[0], ""));
	v = env_file_find(f, "NCCL_BUFFSIZE");
	CHECK(v && v->nums[0] == 0x400000);
	CHECK(env_file_find(f, "NCCL_NOPE") == NULL);
	env_file_free(f, 0);

	expect_error("NCCL_A=1\nNCCL_B\n", 2, "expected NAME=value");
	expect_error("\n\n1BAD=x\n", 3, "invalid variable name");
	expect_error("NCCL_A=\"open\n", 1, "unterminated quote");
	expect_error("NCCL_A=\"x\" y\n", 1, "after the closing quote");
	expect_error("[rack 3]\n", 1, "unknown section");
	expect_error("[host ]\n", 1, "without a pattern");
	expect_error("[host a\n", 1, "without ']'");
	expect_error("A=1\nA=2\nA=3\nA=4\nA=5\nA=6\nA=7\nA=8\nA=9\n", 9, "more than 8 values");
	char nul[] = "A=1\nB=x\0y\n";
	struct env_file *f2 = NULL;
	CHECK(env_file_parse(nul, sizeof(nul) - 1, "n.env", "h", &f2, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "n.env:2: error: NUL byte");
	/* errors inside sections for other hosts still reject the file */
	expect_error("[host elsewhere]\nnot a line\n", 2, "expected NAME=value");
}

static void t_plugin(void)
{
	char audit[300];
	snprintf(audit, sizeof(audit), "%s/audit.log", dir);
	const char *file = write_file("good.env",
				      "NCCL_ALGO=Ring\n"
				      "NCCL_IB_HCA=mlx5_0\n"
				      "NCCL_BUFFSIZE=1048576\n"
				      "NCCL_BUFFSIZE=8388608\n"
				      "NCCL_BUFFSIZE=4194304\n"
				      "NCCL_PROTO=LL128\n"
				      "NCCL_PROTO=Simple\n"
				      "NCCLBPF_NET_NSOCKS=5\n"
				      "[host testhost-a]\n"
				      "NCCL_IB_HCA=mlx5_1\n");
	setenv("NCCLBPF_ENV_FILE", file, 1);
	setenv("NCCLBPF_ENV_AUDIT", audit, 1);
	setenv("NCCLBPF_ENV_HOSTNAME", "testhost-a", 1);
	setenv("NCCL_ALGO", "Tree", 1); /* the environment also sets it */
	unsetenv("NCCL_IB_HCA");
	CHECK(ncclEnvPlugin_v2.init(2, 28, 9, "+cuda13.0", NULL) == 0);
	const char *(*get)(const char *) = ncclEnvPlugin_v2.get_env;

	/* precedence env (default): the environment wins, the file fills the rest */
	CHECK(!strcmp(get("NCCL_ALGO"), "Tree"));
	CHECK(!strcmp(get("NCCL_IB_HCA"), "mlx5_1")); /* host section, later line */
	CHECK(get("NCCL_NOT_ANYWHERE") == NULL);
	/* env program: the largest of the three candidates */
	const char *bs = get("NCCL_BUFFSIZE");
	CHECK(bs && !strcmp(bs, "8388608"));
	/* env program: the first candidate on 2.28+ */
	CHECK(!strcmp(get("NCCL_PROTO"), "LL128"));
	CHECK(get("NCCL_BUFFSIZE") == bs); /* same storage every time */
	/* the net plugin reads its configuration through the env plugin */
	setenv("NCCL_SOCKET_IFNAME", "lo", 1);
	tcp_init();
	CHECK(tcp_config()->n_data == 5);

	/* audit: header, one line per variable and value, sources */
	get("NCCL_ALGO");
	setenv("NCCL_ALGO", "PAT", 1);
	CHECK(!strcmp(get("NCCL_ALGO"), "PAT"));
	char *log = slurp(audit);
	CHECK_STR_CONTAINS(log, "# ncclbpf env audit: pid ");
	CHECK_STR_CONTAINS(log, "nccl 2.28.9+cuda13.0 file ");
	CHECK_STR_CONTAINS(log, "(ok) precedence env");
	CHECK_STR_CONTAINS(log, "NCCL_ALGO\tTree\tenv\n");
	CHECK_STR_CONTAINS(log, "NCCL_ALGO\tPAT\tenv\n");
	CHECK_STR_CONTAINS(log, "NCCL_IB_HCA\tmlx5_1\tfile line 10\n");
	CHECK_STR_CONTAINS(log, "NCCL_NOT_ANYWHERE\t(unset)\tunset\n");
	CHECK_STR_CONTAINS(log, "NCCL_BUFFSIZE\t8388608\tpolicy env_pick.bpf.o:env_pick: file line 4\n");
	int tree_lines = 0;
	for (char *p = log; (p = strstr(p, "NCCL_ALGO\tTree")); p++)
		tree_lines++;
	CHECK(tree_lines == 1); /* asked twice, logged once */
	CHECK(ncclEnvPlugin_v2.finalize() == 0);
	CHECK(!strcmp(bs, "8388608")); /* still valid after finalize */
	env_plugin_reset();

	/* precedence file: the file wins over the environment */
	setenv("NCCLBPF_ENV_PRECEDENCE", "file", 1);
	setenv("NCCL_ALGO", "Tree", 1);
	CHECK(ncclEnvPlugin_v1.init(2, 30, 7, "") == 0);
	CHECK(!strcmp(ncclEnvPlugin_v1.get_env("NCCL_ALGO"), "Ring"));
	CHECK(!strcmp(ncclEnvPlugin_v1.get_env("NCCL_PROTO"), "LL128"));
	env_plugin_reset();

	/* another host: no host section applies */
	setenv("NCCLBPF_ENV_HOSTNAME", "testhost-b", 1);
	CHECK(ncclEnvPlugin_v1.init(2, 27, 0, "") == 0);
	CHECK(!strcmp(ncclEnvPlugin_v1.get_env("NCCL_IB_HCA"), "mlx5_0"));
	/* NCCL 2.27: the program leaves NCCL_PROTO at the default (last line) */
	CHECK(!strcmp(ncclEnvPlugin_v1.get_env("NCCL_PROTO"), "Simple"));
	env_plugin_reset();
	unsetenv("NCCLBPF_ENV_PRECEDENCE");

	/* malformed file: the error names file and line; nothing of it applies */
	const char *bad = write_file("bad.env", "NCCL_IB_HCA=mlx5_9\nNCCL_ALGO=Ring\n\nthis is wrong\n");
	setenv("NCCLBPF_ENV_FILE", bad, 1);
	setenv("NCCLBPF_ENV_PRECEDENCE", "file", 1);
	unlink(audit);
	CHECK(ncclEnvPlugin_v2.init(2, 30, 7, "", NULL) == 0); /* init never fails */
	CHECK(get("NCCL_IB_HCA") == NULL);
	CHECK(!strcmp(get("NCCL_ALGO"), "Tree"));
	log = slurp(audit);
	CHECK_STR_CONTAINS(log, "(rejected)");
	CHECK_STR_CONTAINS(log, "NCCL_IB_HCA\t(unset)\tunset\n");
	env_plugin_reset();

	/* missing file: same, no crash */
	setenv("NCCLBPF_ENV_FILE", "/nonexistent/ncclbpf.env", 1);
	CHECK(ncclEnvPlugin_v2.init(2, 30, 7, "", NULL) == 0);
	CHECK(!strcmp(get("NCCL_ALGO"), "Tree"));
	env_plugin_reset();
	unsetenv("NCCLBPF_ENV_PRECEDENCE");
	unsetenv("NCCLBPF_ENV_FILE");
	unsetenv("NCCLBPF_ENV_AUDIT");
}

int main(void)
{
	if (!mkdtemp(dir))
		return 1;
	CHECK(!strcmp(ncclEnvPlugin_v1.name, "ncclbpf") && !strcmp(ncclEnvPlugin_v2.name, "ncclbpf"));
	t_parse();
	t_plugin();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) {
	}
	TEST_DONE();
}
