/* Fail closed (issue 26): a command that read nothing, or refused, exits non-zero with one
 * precise message and writes nothing; inputs that are not regular files (FIFOs, devices,
 * directories) are refused at once instead of hanging or growing without bound.
 * Every command runs under `timeout`: a hang is a failure (status 124), not a stuck CI.
 * Usage: test_cli_failclosed   (runs ./ncclbpf and ./mock_nccl_host in the build directory) */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"
#include "test_util.h"

static char *out;
static char dir[64];

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096], full[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	/* through the environment: the command may hold any quoting */
	setenv("CLI_FC_CMD", cmd, 1);
	snprintf(full, sizeof(full), "timeout 60 sh -c \"$CLI_FC_CMD\" 2>&1");
	free(out);
	return cli_run_alloc(full, &out, NULL);
}

static size_t count_lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static bool exists(const char *name)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

/* Non-regular inputs: refused by every command that reads a file, without blocking. */
static void test_non_regular(void)
{
	const char *cmds[] = {
		"./ncclbpf info %s/fifo",
		"./ncclbpf disasm %s/fifo",
		"./ncclbpf verify %s/fifo",
		"./ncclbpf rules compile %s/fifo -o %s/x.o",
		"./ncclbpf rules show %s/fifo",
		"./ncclbpf config %s/fifo",
		"./ncclbpf tune %s/fifo",
		"./ncclbpf run %s/fifo",
	};
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char c[512];
		snprintf(c, sizeof(c), cmds[i], dir, dir);
		CHECK(run("%s", c) == 1);
		CHECK_STR_CONTAINS(out, "fifo: error: not a regular file (a FIFO)");
		CHECK(count_lines(out) == 1);
	}
	/* devices never end: refused, not read up to a limit */
	CHECK(run("./ncclbpf tune /dev/zero") == 1);
	CHECK_STR_CONTAINS(out, "/dev/zero: error: not a regular file (a character device)");
	CHECK(run("./ncclbpf info /dev/zero") == 1);
	CHECK_STR_CONTAINS(out, "not a regular file (a character device)");
	/* a directory says so (it used to be "Input/output error") */
	CHECK(run("./ncclbpf tune /tmp") == 1);
	CHECK_STR_CONTAINS(out, "/tmp: error: not a regular file (a directory)");
	CHECK(strstr(out, "Input/output") == NULL);
	CHECK(run("./ncclbpf rules compile /tmp -o %s/x.o", dir) == 1);
	CHECK_STR_CONTAINS(out, "not a regular file (a directory)");
	CHECK(!exists("x.o"));
	/* the runtime: a FIFO in NCCLBPF_POLICY is skipped, init does not hang */
	CHECK(run("LD_LIBRARY_PATH=. env -u NCCL_DEBUG NCCLBPF_POLICY=%s/fifo ./mock_nccl_host "
		  "simulate", dir) == 0);
	CHECK_STR_CONTAINS(out, "fifo: not a regular file (a FIFO)");
	/* trace: a FIFO named *.jsonl is skipped, never read */
	CHECK(run("mkdir -p %s/tr && mkfifo %s/tr/p.jsonl && ./ncclbpf trace %s/tr -o %s/t.json",
		  dir, dir, dir, dir) == 1);
	CHECK_STR_CONTAINS(out, "p.jsonl: not a regular file (a FIFO)");
	CHECK(!exists("t.json"));
}

static void test_trace_junk(void)
{
	/* every input is junk: nothing written, exit 1 */
	CHECK(run("mkdir -p %s/tj && printf 'junk\\n{}\\n' > %s/tj/a.jsonl && "
		  "./ncclbpf trace %s/tj -o %s/tj.json", dir, dir, dir, dir) == 1);
	CHECK_STR_CONTAINS(out, "is an NCCLBPF_TRACE log; nothing written");
	CHECK(!exists("tj.json"));
	/* a process header without a single event: still nothing to show */
	CHECK(run("printf '{\"ev\":\"process\",\"pid\":7,\"host\":\"h\"}\\n' > %s/tj/b.jsonl && "
		  "./ncclbpf trace %s/tj -o %s/tj.json", dir, dir, dir) == 1);
	CHECK_STR_CONTAINS(out, "but no events; nothing written");
	CHECK(!exists("tj.json"));
	CHECK(run("./ncclbpf trace %s/tj -o \"\"", dir) == 2);
}

static void test_version(void)
{
	CHECK(run("./ncclbpf version --lib /nonexistent/lib.so") == 1);
	CHECK_STR_CONTAINS(out, "ncclbpf version: /nonexistent/lib.so: not loadable");
	CHECK(run("./ncclbpf version --lib /bin/ls") == 1);
	CHECK_STR_CONTAINS(out, "ncclbpf version: /bin/ls: ");
	/* loadable, but not a plugin: no NCCL symbol (libm: any system has it) */
	CHECK(run("./ncclbpf version --lib libm.so.6 >/dev/null") == 1);
	CHECK_STR_CONTAINS(out, "exports no NCCL plugin symbol");
	CHECK(run("./ncclbpf version --json --lib /nonexistent/lib.so 2>/dev/null") == 1);
	CHECK_STR_CONTAINS(out, "\"library_error\"");
	CHECK(run("./ncclbpf version --lib \"\"") == 2);
	CHECK(run("./ncclbpf version --lib=") == 2);
	CHECK(run("./ncclbpf version") == 0);
}

static void test_rules_config_outputs(void)
{
	/* an empty rule file is refused: it would compile to a pass-through */
	CHECK(run("printf '# only a comment\\n\\n' > %s/empty.conf && ./ncclbpf rules compile "
		  "%s/empty.conf -o %s/e.o", dir, dir, dir) == 1);
	CHECK_STR_CONTAINS(out, "empty.conf: error: no rules");
	CHECK(count_lines(out) == 1);
	CHECK(!exists("e.o"));
	/* -o "" is a usage error in every command (it used to try to write a file named "") */
	CHECK(run("printf 'allreduce,0,65536,tree,ll,-1,-1,-1\\n' > %s/r.conf && ./ncclbpf rules "
		  "compile %s/r.conf -o \"\"", dir, dir) == 2);
	CHECK_STR_CONTAINS(out, "-o needs a value (got an empty one)");
	CHECK(run("./ncclbpf rules compile %s/r.conf --output=", dir) == 2);
	CHECK(run("./ncclbpf rules compile %s/r.conf -o %s/r.conf", dir, dir) == 2);
	CHECK_STR_CONTAINS(out, "is the rule file itself");
	CHECK(run("./ncclbpf rules compile %s/r.conf -o %s/r.o", dir, dir) == 0);
	/* config -o OBJ: refused (the help promises OBJ is never changed), also through
	 * another name for the same file */
	CHECK(run("cp %s/r.o %s/keep.o && ./ncclbpf config %s/r.o tuned_n_rules=0 -o %s/r.o",
		  dir, dir, dir, dir) == 2);
	CHECK_STR_CONTAINS(out, "is OBJ itself");
	CHECK(run("ln -sf r.o %s/alias.o && ./ncclbpf config %s/r.o tuned_n_rules=0 -o %s/alias.o",
		  dir, dir, dir) == 2);
	CHECK(run("cmp %s/r.o %s/keep.o", dir, dir) == 0);
	CHECK(run("./ncclbpf config %s/r.o tuned_n_rules=0 -o \"\"", dir) == 2);
	/* tune -o onto its own input */
	CHECK(run("./ncclbpf tune %s/r.conf -o %s/r.conf", dir, dir) == 2);
	CHECK_STR_CONTAINS(out, "is one of the inputs");
}

static void test_info_json_error(void)
{
	/* --json: the error is a document (like verify --json), exit 1 */
	CHECK(run("./ncclbpf info --json %s/nosuch.o 2>/dev/null", dir) == 1);
	CHECK_STR_CONTAINS(out, "\"schema\": \"ncclbpf.info/1\"");
	CHECK_STR_CONTAINS(out, "\"error\": \"No such file or directory\"");
	/* long names do not push the next column: the instruction count ends under the
	 * "insns" header even for a 300-character program name */
	CHECK(run("./ncclbpf info tests/progs/cli_kernel_object.bpf.o") == 0);
	const char *h = strstr(out, "  section"), *row = h ? strchr(h, '\n') : NULL;
	const char *hi = h ? strstr(h, "insns") : NULL, *rh = row ? strstr(row, "  (none)") : NULL;
	CHECK(hi && rh && (hi + 5 - h) == (rh - (row + 1)));
}

int main(void)
{
	snprintf(dir, sizeof(dir), "cli_failclosed_XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char fifo[128];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	if (mkfifo(fifo, 0600) != 0) {
		perror("mkfifo");
		return 1;
	}
	test_non_regular();
	test_trace_junk();
	test_version();
	test_rules_config_outputs();
	test_info_json_error();
	if (!test_failures)
		run("rm -rf %s", dir);
	free(out);
	TEST_DONE();
}
