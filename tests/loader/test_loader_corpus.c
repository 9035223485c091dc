/* Loader robustness, deterministic (runs in every CTest build, any compiler):
 *  1. every broken object in tests/loader/corpus/ (listed with the error it must produce
 *     in expected.txt) fails to load with that specific, non-empty message;
 *  2. a bounded number of random mutations (byte flips, boundary values in header and
 *     table fields, truncation) of real clang objects never crash; objects that still
 *     load are walked completely so the sanitizer build sees every pointer.
 *
 * usage: test_loader_corpus <corpus dir> <build/tests/progs> [iterations, default 2000] */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/object.h"
#include "test_util.h"

static uint8_t *read_all(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
	if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
		free(b);
		b = NULL;
	}
	fclose(f);
	*size = (size_t)n;
	return b;
}

/* Touches everything a loaded object exposes. Returns a checksum so it is not elided. */
static uint64_t walk(const struct nb_object *o)
{
	uint64_t sum = strlen(o->name) + strlen(o->license);
	for (size_t i = 0; i < o->prog_cnt; i++) {
		const struct nb_program *p = &o->progs[i];
		sum += strlen(p->name) + strlen(p->section) + p->main_insn_cnt;
		CHECK(p->main_insn_cnt <= p->insn_cnt && p->func_cnt >= 1);
		for (size_t k = 0; k < p->insn_cnt; k++)
			sum += (uint64_t)p->insns[k].imm + p->insns[k].code;
		for (size_t k = 0; k < p->line_cnt; k++) {
			CHECK(p->lines[k].insn < p->insn_cnt);
			sum += strlen(p->lines[k].file) + strlen(p->lines[k].line_src) + p->lines[k].line;
		}
		for (size_t k = 0; k < p->func_cnt; k++) {
			CHECK(p->funcs[k].insn < p->insn_cnt);
			sum += strlen(p->funcs[k].name);
		}
		sum += loader_line_for_insn(p, p->insn_cnt / 2) != NULL;
	}
	for (size_t i = 0; i < o->map_cnt; i++) {
		const struct nb_map_def *m = &o->maps[i];
		sum += strlen(m->name) + m->type + m->key_size;
		if (m->init_data)
			for (uint32_t k = 0; k < m->value_size; k++)
				sum += m->init_data[k];
	}
	return sum;
}

static void run_corpus(const char *dir)
{
	char path[1024], line[512], err[256];
	int files = 0;
	snprintf(path, sizeof(path), "%s/expected.txt", dir);
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		line[strcspn(line, "\n")] = '\0';
		char *tab = strchr(line, '\t');
		if (!tab)
			continue;
		*tab = '\0';
		const char *expect = tab + 1;
		size_t size;
		snprintf(path, sizeof(path), "%s/%s", dir, line);
		uint8_t *buf = read_all(path, &size);
		CHECK(buf != NULL);
		if (!buf)
			continue;
		struct nb_object *o = NULL;
		err[0] = '\0';
		int ret = loader_open_mem(buf, size, line, &o, err, sizeof(err));
		CHECK(ret < 0 && o == NULL);
		CHECK(strlen(err) > 10);
		CHECK_STR_CONTAINS(err, expect);
		if (ret >= 0)
			loader_close(o);
		free(buf);
		files++;
	}
	fclose(f);
	printf("corpus: %d broken objects rejected\n", files);
	CHECK(files >= 20);
	/* every object in the directory is listed */
	DIR *d = opendir(dir);
	struct dirent *de;
	int objs = 0;
	while (d && (de = readdir(d)))
		objs += strlen(de->d_name) > 2 && strcmp(de->d_name + strlen(de->d_name) - 2, ".o") == 0;
	if (d)
		closedir(d);
	CHECK_EQ_U64(objs, files);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static void mutate(uint8_t *b, size_t *size)
{
	static const uint32_t boundary[] = {0, 1, 7, 8, 0x7f, 0x80, 0xff, 0xffff, 0x7fffffff,
					    0x80000000u, 0xfffffff8u, 0xffffffffu};
	int n = 1 + (int)(rnd() % 4);
	for (int k = 0; k < n; k++) {
		size_t s = *size;
		if (s == 0)
			return;
		switch (rnd() % 6) {
		case 0: /* bit flip */
			b[rnd() % s] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1: /* random byte */
			b[rnd() % s] = (uint8_t)rnd();
			break;
		case 2: /* boundary value in a 4-byte field anywhere */
		case 3: {
			if (s < 4)
				break;
			size_t at = (rnd() % (s - 3)) & ~(size_t)3;
			uint32_t v = boundary[rnd() % (sizeof(boundary) / sizeof(boundary[0]))];
			memcpy(b + at, &v, 4);
			break;
		}
		case 4: /* boundary value in the ELF header / section header table area */
		{
			uint64_t shoff;
			if (s < 64)
				break;
			memcpy(&shoff, b + 40, 8);
			size_t at = shoff < s && (rnd() & 1) ? (size_t)shoff + (rnd() % (s - shoff)) : rnd() % 64;
			if (at + 4 > s)
				break;
			uint32_t v = boundary[rnd() % (sizeof(boundary) / sizeof(boundary[0]))];
			memcpy(b + at, &v, 4);
			break;
		}
		default: /* truncate */
			*size = rnd() % s;
			break;
		}
	}
}

static void run_mutations(const char *progs, long iters)
{
	static const char *const names[] = {"loader_basic.bpf.o", "loader_calls.bpf.o",
					    "loader_legacy.bpf.o"};
	char path[1024], err[256];
	long loaded = 0, rejected = 0;
	uint64_t sum = 0;
	for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
		size_t size;
		snprintf(path, sizeof(path), "%s/%s", progs, names[n]);
		uint8_t *orig = read_all(path, &size);
		CHECK(orig != NULL);
		if (!orig)
			continue;
		uint8_t *b = malloc(size);
		for (long i = 0; i < iters / 3 + 1; i++) {
			size_t s = size;
			memcpy(b, orig, size);
			mutate(b, &s);
			struct nb_object *o = NULL;
			err[0] = '\0';
			int ret = loader_open_mem(b, s, names[n], &o, err, sizeof(err));
			if (ret == 0) {
				sum += walk(o);
				loader_close(o);
				loaded++;
			} else {
				CHECK(o == NULL && err[0] != '\0');
				rejected++;
			}
		}
		free(b);
		free(orig);
	}
	printf("mutations: %ld loaded, %ld rejected (checksum %llx)\n", loaded, rejected,
	       (unsigned long long)sum);
	CHECK(rejected > 0);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s <corpus dir> <progs dir> [iterations]\n", argv[0]);
		return 2;
	}
	long iters = argc > 3 ? strtol(argv[3], NULL, 0) : 2000;
	run_corpus(argv[1]);
	run_mutations(argv[2], iters);
	TEST_DONE();
}
