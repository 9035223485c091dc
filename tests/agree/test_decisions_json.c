/* `ncclbpf decisions --json` (schema ncclbpf.decisions/1): the summary document parsed and
 * checked on consistent, divergent (two communicators, the second divergent at two seqs:
 * the first is reported, every communicator still summarized), partial, dropped, malformed
 * and empty logs; exit codes 0/3/1/2 as without --json. Runs ./ncclbpf in the build
 * directory. */
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "profiler/json_mini.h"
#include "test_util.h"
#include "tools/cli_run.h"

static char *out;

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

static const char *jstr(const struct jm *o, const char *k)
{
	const struct jm *v = o ? jm_get(o, k) : NULL;
	return v && v->type == JM_STR ? v->str : NULL;
}

static bool jstr_is(const struct jm *o, const char *k, const char *want)
{
	const char *s = jstr(o, k);
	return s && !strcmp(s, want);
}

static double jnum(const struct jm *o, const char *k)
{
	const struct jm *v = o ? jm_get(o, k) : NULL;
	return v && v->type == JM_NUM ? v->num : -1;
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

static const struct jm *jidx(const struct jm *o, const char *k, size_t i)
{
	const struct jm *v = o ? jm_get(o, k) : NULL;
	return v && v->type == JM_ARR && i < v->n ? v->items[i] : NULL;
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
	CHECK(run("./ncclbpf decisions --json %s", dir) == 0);
	struct jm *j = parse();
	CHECK(j != NULL);
	CHECK(jstr_is(j, "schema", "ncclbpf.decisions/1"));
	CHECK(jnum(j, "files") == 2 && jnum(j, "decisions") == 5 && jnum(j, "dropped") == 5);
	CHECK(jbool(j, "consistent") == 1 && jnull(j, "divergence"));
	const struct jm *c0 = jidx(j, "communicators", 0);
	CHECK(c0 && !jidx(j, "communicators", 1));
	CHECK(jstr_is(c0, "comm", "0x1f"));
	CHECK(jnum(c0, "ranks") == 2 && jnum(c0, "min_rank") == 0 && jnum(c0, "max_rank") == 1);
	CHECK(jnum(c0, "collectives") == 3 && jnum(c0, "logged_by_all") == 2 &&
	      jnum(c0, "logged_by_fewer") == 1);
	CHECK(jnum(c0, "changed") == 3); /* seq 2: proto Simple is a change too */
	CHECK(jbool(c0, "consistent") == 1);
	jm_free(j);
	/* -q does not silence the document */
	CHECK(run("./ncclbpf decisions -q --json %s", dir) == 0);
	j = parse();
	CHECK(jstr_is(j, "schema", "ncclbpf.decisions/1"));
	jm_free(j);

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
	CHECK(jnum(j, "files") == 4 && jnum(j, "decisions") == 9);
	CHECK(jbool(j, "consistent") == 0);
	const struct jm *c1 = jidx(j, "communicators", 1);
	CHECK(jbool(jidx(j, "communicators", 0), "consistent") == 1);
	CHECK(jstr_is(c1, "comm", "0x2a") && jbool(c1, "consistent") == 0);
	CHECK(jnum(c1, "collectives") == 2 && jnum(c1, "ranks") == 2);
	const struct jm *dv = j ? jm_get(j, "divergence") : NULL;
	CHECK(dv && dv->type == JM_OBJ);
	CHECK(jstr_is(dv, "comm", "0x2a") && jnum(dv, "seq") == 5);
	const struct jm *r0 = jidx(dv, "decisions", 0), *r1 = jidx(dv, "decisions", 1);
	CHECK(r0 && r1 && !jidx(dv, "decisions", 2));
	CHECK(jnum(r0, "rank") == 0 && jnum(r0, "channels") == 2);
	CHECK(jnum(r1, "rank") == 1 && jnum(r1, "channels") == 8);
	CHECK(jstr(r1, "file") && strstr(jstr(r1, "file"), "decisions-d.jsonl"));
	CHECK(jstr_is(r0, "coll", "AllReduce") && jnum(r0, "bytes") == 4096);
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
	CHECK(jnull(jidx(dv, "decisions", 1), "algo"));
	jm_free(j);

	/* malformed: exit 1, nothing on stdout; usage: 2; empty log: a consistent document */
	write_text("decisions_json.d/m.jsonl", "{\"comm\":\"0x1f\",\"rank\":1}\n");
	CHECK(run("./ncclbpf decisions --json decisions_json.d/m.jsonl 2>/dev/null") == 1);
	CHECK(out[0] == '\0');
	CHECK(run("./ncclbpf decisions --json 2>&1") == 2);
	CHECK(run("./ncclbpf decisions --json --frobnicate %s 2>&1", dir) == 2);
	write_text("decisions_json.d/e.jsonl", "");
	CHECK(run("./ncclbpf decisions --json decisions_json.d/e.jsonl") == 0);
	j = parse();
	CHECK(j && jnum(j, "decisions") == 0 && jbool(j, "consistent") == 1);
	CHECK(jidx(j, "communicators", 0) == NULL && jnull(j, "divergence"));
	jm_free(j);
	CHECK(run("rm -rf %s", dir) == 0);
	free(out);
	TEST_DONE();
}
