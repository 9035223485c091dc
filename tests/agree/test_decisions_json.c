/* `ncclbpf decisions --json` (schema ncclbpf.decisions/1): the summary document parsed and
 * checked on consistent, divergent (two communicators, the second divergent at two seqs:
 * the first is reported, every communicator still summarized), partial, dropped, lost,
 * malformed and empty logs; exit codes 0/3/4/1/2 as without --json. Fail closed: nothing to
 * check (an empty directory or log, a directory named *.jsonl, a read error such as out of
 * memory) is exit 1, never "consistent"; dropped or lost decisions are exit 4, never
 * "consistent". Runs ./ncclbpf in the build directory. */
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "profiler/json_mini.h"
#include "test_util.h"
#include "tools/cli_run.h"

static char *out;

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NB_CLANG_ASAN 1
#endif
#endif
#ifndef NB_CLANG_ASAN
#define NB_CLANG_ASAN 0
#endif

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	free(out);
	return cli_run_alloc(cmd, &out, NULL);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static struct jm *parse(void)
{
	char err[256] = "";
	struct jm *v = jm_parse(out, err, sizeof(err));
	if (!v)
		fprintf(stderr, "JSON parse error: %s in:\n%s\n", err, out);
	return v;
}

static bool jstr_is(const struct jm *o, const char *k, const char *want)
{
	const char *s = jm_str(o, k);
	return s && !strcmp(s, want);
}

static int jbool(const struct jm *o, const char *k)
{
	const struct jm *v = o ? jm_get(o, k) : NULL;
	return v && v->type == JM_BOOL ? v->b : -1;
}

static bool jnull(const struct jm *o, const char *k)
{
	const struct jm *v = o ? jm_get(o, k) : NULL;
	return v && v->type == JM_NULL;
}

#define D(comm, rank, seq, algo, ch)                                                          \
	"{\"comm\":\"" comm "\",\"rank\":" #rank ",\"seq\":" #seq                                \
	",\"coll\":\"AllReduce\",\"bytes\":4096,\"algo\":" algo ",\"proto\":\"Simple\","        \
	"\"channels\":" #ch "}\n"

int main(void)
{
	const char *dir = "decisions_json.d";
	CHECK(run("rm -rf %s && mkdir -p %s", dir, dir) == 0);
	/* comm 0x1f: ranks 0,1 agree on seq 1-2; rank 1 logs seq 3 alone (started late) */
	write_text("decisions_json.d/decisions-a.jsonl",
		   D("0x1f", 0, 1, "\"Tree\"", 4) D("0x1f", 0, 2, "null", 0) "{\"dropped\":5}\n");
	write_text("decisions_json.d/decisions-b.jsonl",
		   D("0x1f", 1, 1, "\"Tree\"", 4) D("0x1f", 1, 2, "null", 0)
			   D("0x1f", 1, 3, "\"Ring\"", 2));
	/* 5 decisions dropped by a writer: the logged ones agree, but not all were checked */
	CHECK(run("./ncclbpf decisions --json %s", dir) == 4);
	struct jm *j = parse();
	CHECK(j != NULL);
	CHECK(jstr_is(j, "schema", "ncclbpf.decisions/1"));
	CHECK(jm_num(j, "files") == 2 && jm_num(j, "decisions") == 5 && jm_num(j, "dropped") == 5);
	CHECK(jm_num(j, "lost") == 0 && jbool(j, "complete") == 0);
	CHECK(jbool(j, "consistent") == 0 && jnull(j, "divergence"));
	const struct jm *c0 = jm_elem(j, "communicators", 0);
	CHECK(c0 && !jm_elem(j, "communicators", 1));
	CHECK(jstr_is(c0, "comm", "0x1f"));
	CHECK(jm_num(c0, "ranks") == 2 && jm_num(c0, "min_rank") == 0 && jm_num(c0, "max_rank") == 1);
	CHECK(jm_num(c0, "collectives") == 3 && jm_num(c0, "logged_by_all") == 2 &&
	      jm_num(c0, "logged_by_fewer") == 1);
	CHECK(jm_num(c0, "changed") == 3); /* seq 2: proto Simple is a change too */
	CHECK(jbool(c0, "consistent") == 1);
	jm_free(j);
	/* -q does not silence the document */
	CHECK(run("./ncclbpf decisions -q --json %s", dir) == 4);
	j = parse();
	CHECK(jstr_is(j, "schema", "ncclbpf.decisions/1"));
	jm_free(j);
	/* the text says so, -q too, and never "consistent" */
	CHECK(run("./ncclbpf decisions -q %s", dir) == 4);
	CHECK_STR_CONTAINS(out, "INCOMPLETE: 2 file(s), 5 decisions, 1 communicator(s) agree, "
				"but 5 decision(s) were dropped");
	CHECK(!strstr(out, "consistent"));
	/* lost (not written: disk full, file size limit) as the writer marks it */
	write_text("decisions_json.d/decisions-a.jsonl",
		   D("0x1f", 0, 1, "\"Tree\"", 4) D("0x1f", 0, 2, "null", 0)
			   "{\"lost\":7,\"reason\":\"No space left on device\"}\n");
	CHECK(run("./ncclbpf decisions %s", dir) == 4);
	CHECK_STR_CONTAINS(out, "7 could not be written (disk full or file size limit");
	CHECK(!strstr(out, "consistent"));
	CHECK(run("./ncclbpf decisions --json %s", dir) == 4);
	j = parse();
	CHECK(jm_num(j, "lost") == 7 && jm_num(j, "dropped") == 0 && jbool(j, "complete") == 0 &&
	      jbool(j, "consistent") == 0);
	jm_free(j);
	/* complete: exit 0, consistent */
	write_text("decisions_json.d/decisions-a.jsonl",
		   D("0x1f", 0, 1, "\"Tree\"", 4) D("0x1f", 0, 2, "null", 0));
	CHECK(run("./ncclbpf decisions --json %s", dir) == 0);
	j = parse();
	CHECK(jbool(j, "complete") == 1 && jbool(j, "consistent") == 1);
	jm_free(j);
	CHECK(run("./ncclbpf decisions %s", dir) == 0);
	CHECK_STR_CONTAINS(out, "2 file(s), 5 decisions, 1 communicator(s): consistent");
	/* a malformed lost line is malformed */
	write_text("decisions_json.d/bad-lost.jsonl", "{\"lost\":-1}\n");
	CHECK(run("./ncclbpf decisions decisions_json.d/bad-lost.jsonl 2>&1") == 1);
	write_text("decisions_json.d/bad-lost.jsonl", "{\"lost\":1,\"why\":\"x\"}\n");
	CHECK(run("./ncclbpf decisions decisions_json.d/bad-lost.jsonl 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "a lost line has the keys lost and reason");
	unlink("decisions_json.d/bad-lost.jsonl");
	/* a directory named like a log is not a log: skipped, and said */
	CHECK(run("mkdir -p %s/decisions-zdir.jsonl", dir) == 0);
	CHECK(run("./ncclbpf decisions %s 2>&1", dir) == 0);
	CHECK_STR_CONTAINS(out, "decisions-zdir.jsonl: not a regular file, skipped");
	CHECK(run("rmdir %s/decisions-zdir.jsonl", dir) == 0);
	/* a FIFO given by name: refused, not opened (it would block) */
	CHECK(run("mkfifo %s.fifo", dir) == 0);
	CHECK(run("timeout 20 ./ncclbpf decisions %s.fifo 2>&1", dir) == 1);
	CHECK_STR_CONTAINS(out, "not a regular file or directory");
	CHECK(run("rm -f %s.fifo", dir) == 0);
	write_text("decisions_json.d/decisions-a.jsonl",
		   D("0x1f", 0, 1, "\"Tree\"", 4) D("0x1f", 0, 2, "null", 0) "{\"dropped\":5}\n");

	/* a second communicator 0x2a diverging at seq 5 (channels) and seq 9 (algo): the
	 * first divergence is reported with each rank's decision; both communicators are
	 * summarized; exit 3 */
	write_text("decisions_json.d/decisions-c.jsonl",
		   D("0x2a", 0, 5, "\"Ring\"", 2) D("0x2a", 0, 9, "\"Ring\"", 2));
	write_text("decisions_json.d/decisions-d.jsonl",
		   D("0x2a", 1, 5, "\"Ring\"", 8) D("0x2a", 1, 9, "\"Tree\"", 2));
	CHECK(run("./ncclbpf decisions --json %s", dir) == 3);
	j = parse();
	CHECK(j != NULL);
	CHECK(jstr_is(j, "schema", "ncclbpf.decisions/1"));
	CHECK(jm_num(j, "files") == 4 && jm_num(j, "decisions") == 9);
	CHECK(jbool(j, "consistent") == 0);
	const struct jm *c1 = jm_elem(j, "communicators", 1);
	CHECK(jbool(jm_elem(j, "communicators", 0), "consistent") == 1);
	CHECK(jstr_is(c1, "comm", "0x2a") && jbool(c1, "consistent") == 0);
	CHECK(jm_num(c1, "collectives") == 2 && jm_num(c1, "ranks") == 2);
	const struct jm *dv = j ? jm_get(j, "divergence") : NULL;
	CHECK(dv && dv->type == JM_OBJ);
	CHECK(jstr_is(dv, "comm", "0x2a") && jm_num(dv, "seq") == 5);
	const struct jm *r0 = jm_elem(dv, "decisions", 0), *r1 = jm_elem(dv, "decisions", 1);
	CHECK(r0 && r1 && !jm_elem(dv, "decisions", 2));
	CHECK(jm_num(r0, "rank") == 0 && jm_num(r0, "channels") == 2);
	CHECK(jm_num(r1, "rank") == 1 && jm_num(r1, "channels") == 8);
	CHECK(jm_str(r1, "file") && strstr(jm_str(r1, "file"), "decisions-d.jsonl"));
	CHECK(jstr_is(r0, "coll", "AllReduce") && jm_num(r0, "bytes") == 4096);
	CHECK(jstr_is(r0, "algo", "Ring") && jstr_is(r0, "proto", "Simple"));
	jm_free(j);
	/* the text report names the same first divergence */
	CHECK(run("./ncclbpf decisions %s", dir) == 3);
	CHECK_STR_CONTAINS(out, "DIVERGENT: comm 0x2a seq 5");

	/* null algo in a divergence is JSON null */
	write_text("decisions_json.d/decisions-d.jsonl",
		   D("0x2a", 1, 5, "null", 2) D("0x2a", 1, 9, "\"Ring\"", 2));
	CHECK(run("./ncclbpf decisions --json %s", dir) == 3);
	j = parse();
	dv = j ? jm_get(j, "divergence") : NULL;
	CHECK(jnull(jm_elem(dv, "decisions", 1), "algo"));
	jm_free(j);

	/* malformed: exit 1, nothing on stdout; usage: 2; empty log: a consistent document */
	write_text("decisions_json.d/m.jsonl", "{\"comm\":\"0x1f\",\"rank\":1}\n");
	CHECK(run("./ncclbpf decisions --json decisions_json.d/m.jsonl 2>/dev/null") == 1);
	CHECK(out[0] == '\0');
	CHECK(run("./ncclbpf decisions --json 2>&1") == 2);
	CHECK(run("./ncclbpf decisions --json --frobnicate %s 2>&1", dir) == 2);
	/* nothing to check: exit 1 and why, nothing on stdout (before: "consistent", 0) */
	write_text("decisions_json.d/e.jsonl", "");
	CHECK(run("./ncclbpf decisions --json decisions_json.d/e.jsonl 2>/dev/null") == 1);
	CHECK(out[0] == '\0');
	CHECK(run("./ncclbpf decisions decisions_json.d/e.jsonl 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "no decision in 1 file(s): nothing to check");
	CHECK(run("rm -rf %s.empty && mkdir %s.empty", dir, dir) == 0);
	CHECK(run("./ncclbpf decisions %s.empty 2>&1", dir) == 1);
	CHECK_STR_CONTAINS(out, "no decisions-*.jsonl files: nothing to check");
	CHECK(run("./ncclbpf decisions --json %s.empty 2>/dev/null", dir) == 1);
	CHECK(out[0] == '\0');
	CHECK(run("rmdir %s.empty", dir) == 0);
	/* a read error (out of memory for a 40 MB line under a 60 MB address-space limit) is
	 * an error, not the end of the file (not under ASan, which needs the address space) */
#if !defined(__SANITIZE_ADDRESS__) && !NB_CLANG_ASAN
	CHECK(run("head -c 40000000 /dev/zero | tr '\\0' a > %s/decisions-big.jsonl", dir) == 0);
	CHECK(run("(ulimit -v 60000; ./ncclbpf decisions %s/decisions-big.jsonl) 2>&1", dir) == 1);
	CHECK_STR_CONTAINS(out, "decisions-big.jsonl:1: Cannot allocate memory");
#endif
	CHECK(run("rm -rf %s", dir) == 0);
	free(out);
	TEST_DONE();
}
