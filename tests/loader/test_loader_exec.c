/* End-to-end: objects loaded by the loader, linked here (maps created with the maps module,
 * pseudo LDDWs replaced by the map handle / value address, as the runtime does) and run
 * by the reference interpreter in checked mode, so that every global-data access must land
 * inside the storage the loader's map index and offset designate. The expected results
 * are recomputed in C from the programs' source (tests/progs/loader_calls.bpf.c,
 * loader_basic.bpf.c).
 *
 * usage: test_loader_exec <build/tests/progs> */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/object.h"
#include "maps/map.h"
#include "ncclbpf/policy.h"
#include "test_util.h"
#include "vm/vm.h"

struct linked {
	struct nb_object *obj;
	struct nb_map **maps;
};

static int printk_calls;
static char printk_fmt[64];

static uint64_t h_lookup(uint64_t r1, uint64_t r2, uint64_t r3, uint64_t r4, uint64_t r5)
{
	(void)r3, (void)r4, (void)r5;
	return (uint64_t)(uintptr_t)map_lookup((struct nb_map *)(uintptr_t)r1,
					       (const void *)(uintptr_t)r2);
}

static uint64_t h_printk(uint64_t r1, uint64_t r2, uint64_t r3, uint64_t r4, uint64_t r5)
{
	(void)r3, (void)r4, (void)r5;
	printk_calls++;
	/* the format string is addressed in .rodata through a section-symbol relocation
	 * whose offset is in the LDDW's own immediate */
	snprintf(printk_fmt, sizeof(printk_fmt), "%.*s", (int)(r2 < 64 ? r2 : 63),
		 (const char *)(uintptr_t)r1);
	return 0;
}

static vm_helper_fn helpers[NB_HELPER_MAX];
static const struct nb_helper_proto *protos[NB_HELPER_MAX];
static const struct nb_helper_proto lookup_proto = {
	.id = 1, .name = "map_lookup_elem", .ret = NB_RET_MAP_VALUE_OR_NULL};

static int open_and_create(const char *dir, const char *name, struct linked *l)
{
	char path[1024], err[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	memset(l, 0, sizeof(*l));
	int ret = loader_open_file(path, &l->obj, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "%s: %s\n", path, err);
		return ret;
	}
	l->maps = calloc(l->obj->map_cnt + 1, sizeof(*l->maps));
	for (size_t i = 0; i < l->obj->map_cnt; i++) {
		const struct nb_map_def *d = &l->obj->maps[i];
		struct nb_map_spec spec = {d->name, d->type, d->key_size, d->value_size,
					   d->max_entries, d->map_flags};
		ret = map_create(&spec, &l->maps[i], err, sizeof(err));
		if (ret) {
			fprintf(stderr, "map %s: %s\n", d->name, err);
			return ret;
		}
		if (d->init_data) {
			uint32_t k = 0;
			ret = map_update(l->maps[i], &k, d->init_data, 0);
			if (ret)
				return ret;
		}
	}
	return 0;
}

static void close_linked(struct linked *l)
{
	for (size_t i = 0; l->obj && i < l->obj->map_cnt; i++)
		if (l->maps[i])
			map_free(l->maps[i]);
	free(l->maps);
	loader_close(l->obj);
}

static struct nb_map *map_by_name(const struct linked *l, const char *name)
{
	for (size_t i = 0; i < l->obj->map_cnt; i++)
		if (strcmp(l->obj->maps[i].name, name) == 0)
			return l->maps[i];
	return NULL;
}

/* Replaces the loader's pseudo LDDW forms by plain 64-bit immediates. */
static struct bpf_insn *link_prog(const struct linked *l, const struct nb_program *p)
{
	struct bpf_insn *in = malloc(p->insn_cnt * sizeof(*in));
	memcpy(in, p->insns, p->insn_cnt * sizeof(*in));
	for (size_t i = 0; i + 1 < p->insn_cnt; i++) {
		if (in[i].code != BPF_LDDW)
			continue;
		uint64_t v = 0;
		if (in[i].src_reg == BPF_PSEUDO_MAP_FD) {
			v = (uint64_t)(uintptr_t)l->maps[in[i].imm];
		} else if (in[i].src_reg == BPF_PSEUDO_MAP_VALUE) {
			uint8_t *base = map_array_base(l->maps[in[i].imm]);
			CHECK(base != NULL);
			CHECK((uint32_t)in[i + 1].imm <= map_value_size(l->maps[in[i].imm]));
			v = (uint64_t)(uintptr_t)(base + (uint32_t)in[i + 1].imm);
		} else {
			v = (uint32_t)in[i].imm | (uint64_t)(uint32_t)in[i + 1].imm << 32;
		}
		in[i].src_reg = 0;
		in[i].imm = (int32_t)(uint32_t)v;
		in[i + 1].imm = (int32_t)(uint32_t)(v >> 32);
		i++;
	}
	return in;
}

/* Runs program `name` in checked mode on ctx; global data and array maps are the only
 * memory besides the context (and the stack the interpreter adds). */
static int run(const struct linked *l, const char *name, void *ctx, size_t ctx_size, uint64_t *r0)
{
	const struct nb_program *p = NULL;
	for (size_t i = 0; i < l->obj->prog_cnt; i++)
		if (strcmp(l->obj->progs[i].name, name) == 0)
			p = &l->obj->progs[i];
	CHECK(p != NULL);
	if (!p)
		return -ENOENT;
	struct bpf_insn *insns = link_prog(l, p);
	struct vm_program vp = {insns, p->insn_cnt, helpers, protos};
	struct vm_checked chk;
	struct vm_fault fault;
	memset(&chk, 0, sizeof(chk));
	memset(&fault, 0, sizeof(fault));
	chk.insn_budget = 100000;
	vm_checked_add_region(&chk, (uint64_t)(uintptr_t)ctx, ctx_size, true, "context");
	for (size_t i = 0; i < l->obj->map_cnt; i++) {
		void *base = map_array_base(l->maps[i]);
		if (base && l->obj->maps[i].max_entries == 1)
			vm_checked_add_region(&chk, (uint64_t)(uintptr_t)base,
					      l->obj->maps[i].value_size,
					      !(l->obj->maps[i].map_flags & NB_MAP_F_RDONLY_PROG),
					      l->obj->maps[i].name);
	}
	map_epoch_enter();
	int ret = vm_interp_run(&vp, (uint64_t)(uintptr_t)ctx, 0, r0, &chk, &fault);
	map_epoch_exit();
	if (ret)
		fprintf(stderr, "%s: fault: %s\n", name, fault.msg);
	free(insns);
	return ret;
}

static uint64_t leaf(uint64_t x) { return x * 3 + 1; }
static uint64_t mid(uint64_t x) { return leaf(x) + leaf(x + 1); }
static uint64_t glob(uint64_t x) { return mid(x) ^ 0x55; }

static void test_calls(const char *dir)
{
	struct linked l;
	uint64_t r0 = 0;
	if (open_and_create(dir, "loader_calls.bpf.o", &l)) {
		CHECK(0);
		close_linked(&l);
		return;
	}
	uint32_t k = 1;
	uint64_t bonus = 77;
	CHECK(map_update(map_by_name(&l, "bonus"), &k, &bonus, 0) == 0);

	uint64_t acc = 0, counter = 10;
	for (uint64_t n = 0; n < 2000; n += 333) {
		struct ncclbpf_tuner_ctx t;
		memset(&t, 0, sizeof(t));
		t.n_bytes = n;
		t.algo = -1;
		CHECK(run(&l, "calls_a", &t, sizeof(t), &r0) == 0);
		acc += n;
		counter++;
		CHECK_EQ_U64(r0, (uint32_t)(int)mid(2) );
		CHECK_EQ_U64((uint32_t)t.algo, glob(n) & 0xff);
		CHECK(run(&l, "calls_b", &t, sizeof(t), &r0) == 0);
		CHECK_EQ_U64((uint32_t)r0, (uint32_t)(leaf(n) + counter + acc + bonus));
	}
	/* the globals themselves, read back through the maps */
	uint32_t z = 0;
	uint64_t *data = map_lookup(map_by_name(&l, ".data"), &z);
	uint64_t *bss = map_lookup(map_by_name(&l, ".bss"), &z);
	CHECK(data && bss && *data == counter && *bss == acc);

	static const char lit[] = "literal string";
	for (uint32_t c = 0; c < 8; c++) {
		struct ncclbpf_profiler_ctx p;
		memset(&p, 0, sizeof(p));
		p.coll_type = c;
		CHECK(run(&l, "strlit", &p, sizeof(p), &r0) == 0);
		CHECK_EQ_U64(r0, (uint64_t)(int64_t)lit[c]);
	}
	close_linked(&l);
}

static void test_basic(const char *dir)
{
	struct linked l;
	uint64_t r0 = 0;
	if (open_and_create(dir, "loader_basic.bpf.o", &l)) {
		CHECK(0);
		close_linked(&l);
		return;
	}
	static const uint32_t limits[4] = {1, 2, 3, 4};
	uint64_t calls = 7, total = 0;
	for (uint64_t n = 1000; n < 10000000; n *= 7) {
		struct ncclbpf_tuner_ctx t;
		memset(&t, 0, sizeof(t));
		t.n_bytes = n;
		t.coll_type = (uint32_t)(n % 5);
		CHECK(run(&l, "tuner_main", &t, sizeof(t), &r0) == 0);
		CHECK_EQ_U64(r0, 0);
		calls++;
		total += n;
		CHECK_EQ_U64((uint32_t)t.algo, n > 65536 ? 1 : 0);
		CHECK_EQ_U64((uint32_t)t.n_channels, limits[t.coll_type & 3]);
		uint32_t z = 0;
		uint64_t *s = map_lookup(map_by_name(&l, "scratch"), &z);
		uint64_t want = 3 * n > 1000000 ? 1000000 : 3 * n;
		CHECK(s && *s == want + 1);
	}
	uint32_t z = 0;
	uint8_t *data = map_lookup(map_by_name(&l, ".data"), &z);
	uint8_t *bss = map_lookup(map_by_name(&l, ".bss"), &z);
	uint64_t v;
	CHECK(data && bss);
	if (data && bss) {
		memcpy(&v, data, 8); /* calls is the first .data variable */
		CHECK_EQ_U64(v, calls);
		memcpy(&v, bss, 8); /* total_bytes is the first .bss variable */
		CHECK_EQ_U64(v, total);
	}
	/* profiler_main: unknown comm prints once; a known one updates its stats */
	struct ncclbpf_profiler_ctx p;
	memset(&p, 0, sizeof(p));
	p.comm_id = 42;
	p.host_ns = 5000;
	p.coll_type = 3;
	CHECK(run(&l, "profiler_main", &p, sizeof(p), &r0) == 0);
	CHECK_EQ_U64(printk_calls, 1);
	CHECK(strcmp(printk_fmt, "new comm %llu") == 0);
	struct ncclbpf_latency_stats st;
	memset(&st, 0, sizeof(st));
	uint64_t key = 42;
	CHECK(map_update(map_by_name(&l, "lat_hash"), &key, &st, 0) == 0);
	CHECK(run(&l, "profiler_main", &p, sizeof(p), &r0) == 0);
	CHECK(run(&l, "profiler_main", &p, sizeof(p), &r0) == 0);
	CHECK_EQ_U64(printk_calls, 1);
	map_epoch_enter();
	struct ncclbpf_latency_stats *got = map_lookup(map_by_name(&l, "lat_hash"), &key);
	CHECK(got && got->count == 2 && got->last_ns == 5000);
	map_epoch_exit();
	if (data) {
		uint32_t seen3;
		memcpy(&seen3, data + 8 + 3 * 4, 4); /* seen_bytes[3] after `calls` */
		CHECK_EQ_U64(seen3, 2);
	}
	close_linked(&l);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s <progs dir>\n", argv[0]);
		return 2;
	}
	helpers[1] = h_lookup;
	helpers[6] = h_printk;
	protos[1] = &lookup_proto;
	test_calls(argv[1]);
	test_basic(argv[1]);
	TEST_DONE();
}
