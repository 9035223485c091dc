/* Runs bpf_conformance-style .data files in the interpreter, unchecked and checked.
 *
 * Format: "-- raw" (one 64-bit instruction word per line, hex, opcode in the lowest byte),
 * optional "-- mem" (hex bytes), "-- result" (0x... or decimal), optional "-- error"
 * (the program must be rejected or fault); "-- asm", "-- c" and '#' comments are ignored.
 * Environment of each run: r1 = a writable copy of mem (0 without mem), r2 = its length,
 * helper 5 = identity.
 *
 * usage: conformance_runner DIR|FILE...
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "test_util.h"
#include "vm/vm.h"

#define MAX_INSNS 4096
#define MAX_MEM 65536

struct conf_test {
	struct bpf_insn insns[MAX_INSNS];
	size_t insn_cnt;
	uint8_t mem[MAX_MEM];
	long mem_len; /* -1: no mem section */
	uint64_t result;
	bool has_result, expect_error;
};

static uint64_t h_identity(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	(void)b, (void)c, (void)d, (void)e;
	return a;
}

static vm_helper_fn helpers[NB_HELPER_MAX];

/* Returns 0, or -1 with a message in err. */
static int conf_parse(const char *path, struct conf_test *t, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char line[4096], section[32] = "";
	char *memtext = NULL;
	size_t memtext_len = 0;
	int rc = 0;
	if (!f) {
		snprintf(err, errlen, "cannot open: %s", strerror(errno));
		return -1;
	}
	t->insn_cnt = 0;
	t->mem_len = -1;
	t->has_result = t->expect_error = false;
	while (fgets(line, sizeof(line), f) && !rc) {
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncmp(p, "--", 2)) {
			if (sscanf(p + 2, " %31s", section) != 1)
				section[0] = '\0';
			if (!strcmp(section, "error"))
				t->expect_error = true;
			if (!strcmp(section, "mem") && t->mem_len < 0)
				t->mem_len = 0;
			continue;
		}
		if (!strcmp(section, "raw")) {
			char *tok, *save = NULL;
			for (tok = strtok_r(p, " \t\r\n", &save); tok;
			     tok = strtok_r(NULL, " \t\r\n", &save)) {
				char *end;
				errno = 0;
				uint64_t v = strtoull(tok, &end, 16);
				if (errno || *end || t->insn_cnt >= MAX_INSNS) {
					snprintf(err, errlen, "bad raw word \"%s\"", tok);
					rc = -1;
					break;
				}
				memcpy(&t->insns[t->insn_cnt++], &v, 8); /* host is little-endian */
			}
		} else if (!strcmp(section, "mem")) {
			size_t l = strlen(p);
			char *nt = realloc(memtext, memtext_len + l + 2);
			if (!nt) {
				rc = -1;
				break;
			}
			memtext = nt;
			memcpy(memtext + memtext_len, p, l);
			memtext_len += l;
			memtext[memtext_len++] = ' ';
			memtext[memtext_len] = '\0';
		} else if (!strcmp(section, "result")) {
			char *end;
			while (*p == ' ' || *p == '\t')
				p++;
			if (*p == '\n' || *p == '\r' || !*p)
				continue;
			t->result = strtoull(p, &end, 0);
			t->has_result = true;
		}
	}
	fclose(f);
	if (!rc && memtext) {
		long n = isa_parse_hex_bytes(memtext, t->mem, sizeof(t->mem));
		if (n < 0) {
			snprintf(err, errlen, "bad mem section (%ld)", n);
			rc = -1;
		}
		t->mem_len = n;
	}
	free(memtext);
	if (!rc && t->insn_cnt == 0) {
		snprintf(err, errlen, "no -- raw section");
		rc = -1;
	}
	if (!rc && !t->has_result && !t->expect_error) {
		snprintf(err, errlen, "no -- result section");
		rc = -1;
	}
	return rc;
}

static int files_run, files_passed;

static void conf_run_file(const char *path)
{
	static struct conf_test t;
	static uint8_t copy[MAX_MEM];
	char err[256];
	files_run++;
	test_checks++;
	if (conf_parse(path, &t, err, sizeof(err))) {
		test_failures++;
		fprintf(stderr, "FAIL %s: %s\n", path, err);
		return;
	}
	int v = isa_validate(t.insns, t.insn_cnt, err, sizeof(err));
	if (v) {
		if (!t.expect_error) {
			test_failures++;
			fprintf(stderr, "FAIL %s: rejected: %s\n", path, err);
		} else {
			files_passed++;
		}
		return;
	}
	struct vm_program prog = { t.insns, t.insn_cnt, helpers, NULL };
	bool ok = true;
	for (int checked = 0; checked < 2; checked++) {
		struct vm_checked chk;
		struct vm_fault fault;
		uint64_t r0 = 0;
		size_t len = t.mem_len > 0 ? (size_t)t.mem_len : 0;
		memcpy(copy, t.mem, len);
		uint64_t a1 = t.mem_len >= 0 ? (uint64_t)(uintptr_t)copy : 0;
		memset(&chk, 0, sizeof(chk));
		if (t.mem_len > 0)
			vm_checked_add_region(&chk, a1, len, true, "memory");
		chk.insn_budget = 10 * 1000 * 1000;
		int rc = vm_interp_run(&prog, a1, len, &r0, checked ? &chk : NULL, &fault);
		const char *mode = checked ? "checked" : "unchecked";
		if (t.expect_error) {
			if (rc == 0) {
				fprintf(stderr, "FAIL %s (%s): expected an error, got 0x%llx\n", path,
					mode, (unsigned long long)r0);
				ok = false;
			}
		} else if (rc) {
			fprintf(stderr, "FAIL %s (%s): %s\n", path, mode, fault.msg);
			ok = false;
		} else if (r0 != t.result) {
			fprintf(stderr, "FAIL %s (%s): r0 0x%llx, expected 0x%llx\n", path, mode,
				(unsigned long long)r0, (unsigned long long)t.result);
			ok = false;
		}
	}
	if (ok)
		files_passed++;
	else
		test_failures++;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void conf_run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;
	if (!d) {
		CHECK(!"cannot open test directory");
		return;
	}
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".data"))
			continue;
		char **nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn)
			break;
		names = nn;
		names[n] = malloc(strlen(dir) + l + 2);
		if (!names[n])
			break;
		sprintf(names[n++], "%s/%s", dir, e->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n; i++) {
		conf_run_file(names[i]);
		free(names[i]);
	}
	free(names);
}

int main(int argc, char **argv)
{
	helpers[NB_HELPER_CONFORMANCE_IDENTITY] = h_identity;
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
		return 2;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			conf_run_dir(argv[i]);
		else
			conf_run_file(argv[i]);
	}
	printf("conformance: %d of %d files passed (unchecked and checked)\n", files_passed,
	       files_run);
	CHECK(files_run >= 1);
	TEST_DONE();
}
