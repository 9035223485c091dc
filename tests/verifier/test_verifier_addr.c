/* Address independence (property test, issue 14): nothing a verified program produces may
 * depend on where the host placed its objects. Random programs mix pointer comparisons
 * (pointer with number, pointers into one or different objects, 32-bit, JSET), pointer
 * arithmetic, pointers stored, spilled, returned and passed to helpers (map lookup / update
 * / delete, bpf_trace_printk with formats of 0-3 conversions and arguments of every kind),
 * maps (hash, array), global data and the stack. Every program the verifier accepts runs
 * twice, in two worlds whose context, stack (the interpreter is entered from different
 * stack depths), maps and global data lie at different addresses but hold the same bytes;
 * return value, context, map contents and the printk lines must be identical.
 * Regression: pointer comparisons were explored both ways and accepted, so an address bit
 * could reach a map, the log or a decision.
 * Rank variance (same run): programs also accepted with the rank-variance rule on run in two
 * processes (fork) whose rank-local inputs differ (writable map contents, rank-local context
 * fields, timers) while the rank-invariant ones are equal: the decisions (algo, proto,
 * n_channels) must be identical.
 * Usage: test_verifier_addr [programs] [seed] [rank test every Nth strict-accepted program,
 * 0 = off]   (CI: a short run; long run in results.md) */
#include <alloca.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "insn_macros.h"
#include "maps/map.h"
#include "test_util.h"
#include "verifier/verifier.h"
#include "vm/vm.h"

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static unsigned rn(unsigned n) { return (unsigned)(rnd() % n); }

/* ---- two worlds ---- */
enum { M_HASH, M_ARR, M_DATA, M_RODATA, M_COUNT };
static uint8_t formats[32] = "a=%d\0%u %x\0%d %d %d\0none\0%%\0";
static const uint8_t fmt_off[] = { 0, 5, 11, 20, 25 }, fmt_len[] = { 5, 6, 9, 5, 3 };
static const struct nb_map_def defs[M_COUNT] = {
	{ .name = "h", .origin = NB_MAP_ORIGIN_BTF, .type = NB_MAP_TYPE_HASH, .key_size = 8, .value_size = 16, .max_entries = 16 },
	{ .name = "a", .origin = NB_MAP_ORIGIN_BTF, .type = NB_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 64, .max_entries = 4 },
	{ .name = ".data", .origin = NB_MAP_ORIGIN_DATA, .type = NB_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 64, .max_entries = 1 },
	{ .name = ".rodata", .origin = NB_MAP_ORIGIN_RODATA, .type = NB_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 32, .max_entries = 1, .map_flags = NB_MAP_F_RDONLY_PROG, .init_data = formats },
};

#define LOG_MAX 2048
struct world {
	struct nb_map *maps[M_COUNT];
	uint8_t *ctx_buf; /* ctx = ctx_buf + shift */
	uint8_t *ctx;
	char log[LOG_MAX];
	size_t log_len;
	uint64_t r0;
	int rc;
};
static struct world worlds[2];
static uint64_t ktime_base, ktime_skew;
static struct world *cur; /* the world whose helpers run */

static uint64_t h_lookup(uint64_t m, uint64_t k, uint64_t a, uint64_t b, uint64_t c)
{
	(void)a; (void)b; (void)c;
	return (uint64_t)(uintptr_t)map_lookup((struct nb_map *)(uintptr_t)m, (const void *)(uintptr_t)k);
}
static uint64_t h_update(uint64_t m, uint64_t k, uint64_t v, uint64_t f, uint64_t c)
{
	(void)c;
	return (uint64_t)(int64_t)map_update((struct nb_map *)(uintptr_t)m, (const void *)(uintptr_t)k,
					     (const void *)(uintptr_t)v, f & 3);
}
static uint64_t h_delete(uint64_t m, uint64_t k, uint64_t a, uint64_t b, uint64_t c)
{
	(void)a; (void)b; (void)c;
	return (uint64_t)(int64_t)map_delete((struct nb_map *)(uintptr_t)m, (const void *)(uintptr_t)k);
}
/* like the runtime's: one register per conversion, in order */
static uint64_t h_printk(uint64_t fmt, uint64_t len, uint64_t a, uint64_t b, uint64_t c)
{
	const char *f = (const char *)(uintptr_t)fmt;
	uint64_t args[3] = { a, b, c };
	unsigned used = 0;
	char line[160];
	size_t n = 0;
	for (uint64_t i = 0; i < len && f[i] && n + 24 < sizeof(line); i++) {
		if (f[i] != '%') {
			line[n++] = f[i];
			continue;
		}
		if (i + 1 < len && f[i + 1] == '%') {
			line[n++] = '%';
			i++;
			continue;
		}
		if (used == 3)
			break;
		n += (size_t)snprintf(line + n, sizeof(line) - n, "<%llx>", (unsigned long long)args[used++]);
		i++;
	}
	line[n] = 0;
	size_t l = strlen(line);
	if (cur->log_len + l + 2 < LOG_MAX) {
		memcpy(cur->log + cur->log_len, line, l);
		cur->log_len += l;
		cur->log[cur->log_len++] = '\n';
	}
	return n;
}

static uint64_t h_ktime(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	(void)a; (void)b; (void)c; (void)d; (void)e;
	return ktime_base + (cur == &worlds[1] ? ktime_skew : 0); /* ranks' clocks differ */
}

static vm_helper_fn helper_fns[NB_HELPER_MAX];
static const struct nb_helper_proto *helper_protos[NB_HELPER_MAX];

/* Same bytes in both worlds; with rank_local, world 1 gets other contents of everything a
 * rank may see differently: writable maps (profiler-written data), the rank-local context
 * fields, timer values. */
static void fill_worlds(bool rank_local)
{
	uint64_t seed = rnd(), other = rnd();
	size_t shift = 8 * (1 + rn(60));
	const struct nb_hook_desc *h = hook_desc(NB_HOOK_TUNER);
	for (int w = 0; w < 2; w++) {
		uint64_t saved = rng;
		rng = rank_local && w ? other : seed;
		struct world *W = &worlds[w];
		for (uint32_t k = 0; k < 4; k++) {
			uint8_t v[64];
			for (size_t i = 0; i < sizeof(v); i++)
				v[i] = (uint8_t)(rn(3) ? rn(40) : rnd());
			map_update(W->maps[M_ARR], &k, v, NB_ANY);
		}
		for (uint64_t k = 0; k < 12; k++) {
			if (rn(2)) {
				uint64_t v[2] = { rn(50), rnd() };
				map_update(W->maps[M_HASH], &k, v, NB_ANY);
			} else {
				map_delete(W->maps[M_HASH], &k);
			}
		}
		uint8_t *d = map_array_base(W->maps[M_DATA]);
		for (int i = 0; i < 64; i++)
			d[i] = (uint8_t)rn(60);
		/* the context moves by a multiple of 8 inside its buffer */
		W->ctx = W->ctx_buf + (w ? shift : 0);
		rng = seed;
		for (int i = 0; i < 160; i++)
			W->ctx[i] = (uint8_t)(rn(2) ? rn(50) : rnd());
		rng = other;
		for (size_t f = 0; rank_local && w && f < h->field_cnt; f++)
			if (h->fields[f].variance == NB_RANK_LOCAL)
				for (uint32_t b = 0; b < h->fields[f].size; b++)
					W->ctx[h->fields[f].off + b] = (uint8_t)(rn(2) ? rn(50) : rnd());
		W->log_len = 0;
		rng = saved;
	}
	ktime_base = rnd();
	ktime_skew = rank_local ? 12345 : 0;
}

/* ---- generator ---- */
#define MAXI 300
static struct bpf_insn prog[MAXI];
static int n;
static void emitn(const struct bpf_insn *in, size_t k)
{
	for (size_t i = 0; i < k && n < MAXI; i++)
		prog[n++] = in[i];
}
/* one instruction or an LDDW pair */
#define emit(...)                                                                   \
	do {                                                                        \
		const struct bpf_insn e_[] = { __VA_ARGS__ };                       \
		emitn(e_, sizeof(e_) / sizeof(e_[0]));                              \
	} while (0)
static int32_t rimm(void) { return rn(4) ? (int32_t)rn(64) : (int32_t)rnd(); }
static int vreg(void) { static const int r[] = { 0, 2, 3, 4, 5, 7, 8, 9 }; return r[rn(8)]; }

/* some pointer into register r: context, stack, map value (from a lookup), global data,
 * map handle */
static void gen_pointer(int r)
{
	switch (rn(6)) {
	case 0: emit(MOV64_REG(r, 6)); break;
	case 1: emit(MOV64_REG(r, 10)); emit(ALU64_IMM(BPF_ADD, r, -8 * (int32_t)(1 + rn(8)))); break;
	case 2: emit(LD_MAP_VALUE(r, M_DATA, (int32_t)(8 * rn(8)))); break;
	case 3: emit(LD_MAP_VALUE(r, M_RODATA, (int32_t)rn(32))); break;
	case 4: emit(LD_MAP(r, rn(2) ? M_HASH : M_ARR)); break;
	default: { /* lookup result, NULL-checked or not */
		int m = rn(2) ? M_HASH : M_ARR;
		emit(ST(m == M_HASH ? BPF_DW : BPF_W, 10, -8, (int32_t)rn(m == M_HASH ? 14 : 5)));
		emit(MOV64_REG(2, 10));
		emit(ALU64_IMM(BPF_ADD, 2, -8));
		emit(LD_MAP(1, m));
		emit(CALL(1));
		if (rn(4)) {
			emit(JMP_IMM(BPF_JNE, 0, 0, 2));
			emit(MOV64_IMM(0, 0));
			emit(EXIT());
		}
		if (r != 0)
			emit(MOV64_REG(r, 0));
		if (rn(2))
			emit(ALU64_IMM(BPF_ADD, r, (int32_t)(8 * rn(4))));
	}
	}
}

/* an observable effect: a context output, a map / global write, a printk */
static void gen_effect(void)
{
	switch (rn(4)) {
	case 0: emit(ST(BPF_W, 6, (int16_t)(140 + 4 * rn(3)), rimm())); break;
	case 1: emit(LD_MAP_VALUE(1, M_DATA, (int32_t)(8 * rn(8)))); emit(ST(BPF_DW, 1, 0, rimm())); break;
	case 2: /* often r9, where loads go */
		emit(STX(BPF_W, 6, rn(2) ? 9 : vreg(), (int16_t)(140 + 4 * rn(3))));
		break;
	default: emit(MOV64_IMM(0, rimm())); break;
	}
}

static void gen_printk(void)
{
	unsigned f = rn(5);
	for (int r = 3; r <= 5; r++) {
		switch (rn(4)) {
		case 0: gen_pointer(r); break;
		case 1: break; /* whatever it holds: uninitialised, clobbered, old value */
		default: emit(MOV64_IMM(r, rimm())); break;
		}
	}
	if (rn(6) == 0) { /* format on the stack: unknown to the verifier */
		emit(ST(BPF_DW, 10, -16, 0x6425)); /* "%d" */
		emit(MOV64_REG(1, 10));
		emit(ALU64_IMM(BPF_ADD, 1, -16));
		emit(MOV64_IMM(2, 3));
	} else {
		emit(LD_MAP_VALUE(1, M_RODATA, fmt_off[f]));
		emit(MOV64_IMM(2, fmt_len[f]));
	}
	emit(CALL(6));
}

static void gen_compare(void)
{
	static const uint8_t ops[] = { BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET, BPF_JNE, BPF_JSGT,
				       BPF_JSGE, BPF_JLT, BPF_JLE, BPF_JSLT, BPF_JSLE };
	int a = rn(2) ? 7 : 8, b = a == 7 ? 8 : 7;
	gen_pointer(a);
	switch (rn(3)) {
	case 0: gen_pointer(b); break; /* usually another object */
	case 1: emit(MOV64_IMM(b, rimm())); break;
	default: /* the same object, elsewhere */
		emit(MOV64_REG(b, a));
		emit(ALU64_IMM(BPF_ADD, b, (int32_t)rn(16) - 8));
	}
	uint8_t cls = rn(5) == 0 ? BPF_JMP32 : BPF_JMP;
	int at = n;
	if (rn(3))
		emit(INSN(cls | ops[rn(11)] | BPF_X, a, b, 0, 0));
	else
		emit(INSN(cls | ops[rn(11)] | BPF_K, a, 0, 0, rn(2) ? 0 : rimm()));
	int k = 1 + (int)rn(2);
	for (int i = 0; i < k; i++)
		gen_effect();
	if (at < n)
		prog[at].off = (int16_t)(n - at - 1);
}

/* pointer arithmetic / leaks the verifier must refuse, or allow harmlessly */
static void gen_ptr_misc(void)
{
	int r = rn(2) ? 7 : 8;
	gen_pointer(r);
	switch (rn(9)) {
	case 0: emit(ALU64_IMM(BPF_AND, r, (int32_t)(1u << rn(31)))); break;
	case 1: emit(ALU64_IMM(BPF_RSH, r, (int32_t)rn(64))); break;
	case 2: emit(MOV32_REG(r, r)); break;
	case 3: gen_pointer(0); emit(ALU64_REG(BPF_SUB, r, 0)); break;
	case 4: emit(STX(BPF_DW, 10, r, -24)); emit(LDX(BPF_W, 0, 10, -24 + 4 * (int)rn(2))); break;
	case 5: emit(STX(BPF_DW, 6, r, 144)); break;
	case 6: emit(LD_MAP_VALUE(1, M_DATA, 0)); emit(STX(BPF_DW, 1, r, 8)); break;
	case 7: emit(STX(BPF_DW, 10, r, -24)); emit(MOV64_IMM(1, 1));
		emit(INSN(BPF_STX | BPF_ATOMIC | BPF_DW, 10, 1, -24, BPF_ADD | BPF_FETCH)); break;
	default: emit(MOV64_REG(0, r)); emit(EXIT()); break;
	}
}

static void gen_scalar(void)
{
	switch (rn(8)) {
	case 4: emit(CALL(5)); emit(MOV64_REG(9, 0)); break; /* bpf_ktime_get_ns */
	case 5: /* global data (writable: rank-local) */
		emit(LD_MAP_VALUE(1, M_DATA, (int32_t)(8 * rn(8))));
		emit(LDX(BPF_W, 9, 1, 0)); /* r9: loaded numbers (pointers go to r7, r8) */
		break;
	case 6: { /* a map value, NULL-checked */
		int m = rn(2) ? M_HASH : M_ARR;
		emit(ST(m == M_HASH ? BPF_DW : BPF_W, 10, -8, (int32_t)rn(m == M_HASH ? 14 : 5)));
		emit(MOV64_REG(2, 10));
		emit(ALU64_IMM(BPF_ADD, 2, -8));
		emit(LD_MAP(1, m));
		emit(CALL(1));
		emit(JMP_IMM(BPF_JEQ, 0, 0, 1));
		emit(LDX(BPF_W, 9, 0, 0));
		break;
	}
	case 7: { /* a branch on a number, around an output write */
		int at = n;
		emit(JMP_IMM(BPF_JGT, 9, (int32_t)rn(40), 0));
		gen_effect();
		if (at < n)
			prog[at].off = (int16_t)(n - at - 1);
		break;
	}
	case 0: emit(LDX(BPF_W, vreg(), 6, (int16_t)(4 * rn(36)))); break;
	case 1: emit(ALU64_IMM(BPF_ADD, vreg(), rimm())); break;
	case 2: emit(ST(BPF_DW, 10, (int16_t)(-8 * (1 + (int)rn(8))), rimm())); break;
	default: emit(LDX(BPF_DW, vreg(), 10, (int16_t)(-8 * (1 + (int)rn(8))))); break;
	}
}

static void generate(void)
{
	n = 0;
	emit(MOV64_REG(6, 1));
	for (int r = 0; r <= 9; r++)
		if (r != 1 && r != 6 && rn(3))
			emit(MOV64_IMM(r, rimm()));
	for (int k = 1; k <= 8; k++)
		emit(ST(BPF_DW, 10, (int16_t)(-8 * k), rimm()));
	int k = 1 + (int)rn(5);
	for (int i = 0; i < k && n < MAXI - 40; i++) {
		switch (rn(10)) {
		case 0: case 1: case 2: gen_compare(); break;
		case 3: gen_printk(); break;
		case 4: gen_ptr_misc(); break;
		default: gen_scalar(); break;
		}
	}
	emit(rn(2) ? MOV64_IMM(0, rimm()) : MOV64_REG(0, vreg()));
	emit(EXIT());
}

/* ---- running ---- */
static struct vm_program link_for(struct world *W, const struct nb_program *p, struct bpf_insn *out)
{
	memcpy(out, p->insns, p->insn_cnt * sizeof(*out));
	for (size_t i = 0; i + 1 < p->insn_cnt; i++) {
		if (out[i].code != BPF_LDDW)
			continue;
		uint64_t addr;
		if (out[i].src_reg == BPF_PSEUDO_MAP_FD)
			addr = (uint64_t)(uintptr_t)W->maps[out[i].imm];
		else if (out[i].src_reg == BPF_PSEUDO_MAP_VALUE)
			addr = (uint64_t)(uintptr_t)map_array_base(W->maps[out[i].imm]) + (uint32_t)out[i + 1].imm;
		else {
			i++;
			continue;
		}
		out[i].src_reg = 0;
		out[i].imm = (int32_t)(uint32_t)addr;
		out[i + 1].imm = (int32_t)(uint32_t)(addr >> 32);
		i++;
	}
	return (struct vm_program){ .insns = out, .insn_cnt = p->insn_cnt, .helpers = helper_fns,
				    .helper_protos = helper_protos };
}

/* runs at a stack depth that differs per world (the interpreter's stack is on ours) */
static __attribute__((noinline)) void run_at_depth(struct world *W, const struct vm_program *vp,
						   size_t depth)
{
	volatile uint8_t *pad = alloca(depth);
	pad[0] = 0;
	struct vm_checked chk = { .insn_budget = 1000000 };
	vm_checked_add_region(&chk, (uint64_t)(uintptr_t)W->ctx, 160, true, "context");
	for (int m = M_ARR; m < M_COUNT; m++)
		vm_checked_add_region(&chk, (uint64_t)(uintptr_t)map_array_base(W->maps[m]),
				      (uint64_t)defs[m].value_size * defs[m].max_entries, m != M_RODATA,
				      defs[m].name);
	struct vm_fault fault;
	cur = W;
	W->r0 = 0;
	map_epoch_enter();
	W->rc = vm_interp_run(vp, (uint64_t)(uintptr_t)W->ctx, 0, &W->r0, &chk, &fault);
	map_epoch_exit();
	if (W->rc)
		fprintf(stderr, "fault: %s\n", fault.msg);
}

/* Rank variance in two processes: world 1 runs in a child (another process, as another
 * rank would), which sends its decision back. */
static bool decide_in_child(struct world *W, const struct vm_program *vp, uint8_t out[12])
{
	int fd[2];
	if (pipe(fd))
		return false;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(fd[0]);
		run_at_depth(W, vp, 64 + 16 * (1 + rn(200)));
		uint8_t msg[13];
		msg[0] = (uint8_t)(W->rc == 0);
		memcpy(msg + 1, W->ctx + 140, 12);
		ssize_t k = write(fd[1], msg, sizeof(msg));
		_exit(k == (ssize_t)sizeof(msg) ? 0 : 1);
	}
	close(fd[1]);
	uint8_t msg[13];
	ssize_t k = pid > 0 ? read(fd[0], msg, sizeof(msg)) : -1;
	close(fd[0]);
	int st = 0;
	if (pid > 0)
		waitpid(pid, &st, 0);
	if (k != (ssize_t)sizeof(msg) || !msg[0])
		return false;
	memcpy(out, msg + 1, 12);
	return true;
}

static bool same_maps(void)
{
	for (int m = M_ARR; m <= M_DATA; m++)
		if (memcmp(map_array_base(worlds[0].maps[m]), map_array_base(worlds[1].maps[m]),
			   (size_t)map_array_stride(worlds[0].maps[m]) * defs[m].max_entries))
			return false;
	for (uint64_t k = 0; k < 16; k++) {
		const uint8_t *a = map_lookup(worlds[0].maps[M_HASH], &k);
		const uint8_t *b = map_lookup(worlds[1].maps[M_HASH], &k);
		if (!a != !b || (a && memcmp(a, b, 16)))
			return false;
	}
	return true;
}

static void print_program(const struct nb_program *p)
{
	char line[128];
	for (size_t i = 0; i < p->insn_cnt; i++) {
		if (isa_disasm_insn(p->insns, p->insn_cnt, i, line, sizeof(line)) < 0)
			snprintf(line, sizeof(line), "?");
		fprintf(stderr, "  %3zu: %s\n", i, line);
	}
}

int main(int argc, char **argv)
{
	long programs = argc > 1 ? atol(argv[1]) : 20000;
	rng = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x9e3779b97f4a7c15ull;
	if (!rng)
		rng = 1;
	char err[256];
	for (int w = 0; w < 2; w++) {
		/* world 1's maps come after a differently sized allocation: other addresses */
		void *spacer = malloc(4096 + 64 * (size_t)w);
		for (int m = 0; m < M_COUNT; m++) {
			struct nb_map_spec spec = { defs[m].name, defs[m].type, defs[m].key_size,
						    defs[m].value_size, defs[m].max_entries, defs[m].map_flags };
			int rc = map_create(&spec, &worlds[w].maps[m], err, sizeof(err));
			CHECK(rc == 0);
			if (rc)
				TEST_DONE();
		}
		memcpy(map_array_base(worlds[w].maps[M_RODATA]), formats, sizeof(formats));
		worlds[w].ctx_buf = aligned_alloc(64, 1024);
		free(spacer);
	}
	const struct nb_hook_desc *hook = hook_desc(NB_HOOK_TUNER);
	helper_fns[1] = h_lookup;
	helper_fns[2] = h_update;
	helper_fns[3] = h_delete;
	helper_fns[5] = h_ktime;
	helper_fns[6] = h_printk;
	for (int id = 0; id < NB_HELPER_MAX; id++)
		helper_protos[id] = helper_fns[id] ? hook_helper(hook, id) : NULL;

	uint64_t accepted = 0, differ = 0, faults = 0, codes[NB_VERR_COUNT] = { 0 };
	uint64_t rank_runs = 0, rank_differ = 0;
	long rank_every = argc > 3 ? atol(argv[3]) : 8;
	static struct bpf_insn linked[2][MAXI];
	clock_t t0 = clock();
	for (long i = 0; i < programs; i++) {
		generate();
		struct nb_program p = { .name = "rand", .insns = prog, .insn_cnt = (size_t)n,
					.main_insn_cnt = (size_t)n };
		struct nb_verifier_opts opts = { .budget = 20000, .allow_rank_local = true };
		struct nb_verifier_diag diag;
		int rc = verifier_check(&p, defs, M_COUNT, hook, &opts, &diag, NULL);
		if (rc == -13) {
			codes[diag.code]++;
			continue;
		}
		CHECK(rc == 0);
		if (rc)
			continue;
		accepted++;
		/* rank variance: accepted with the rule on, it decides the same with different
		 * rank-local inputs (every rank_every-th accepted program: a fork each) */
		struct nb_verifier_opts strict = { .budget = 20000 };
		if (rank_every && (accepted % (uint64_t)rank_every) == 0 &&
		    verifier_check(&p, defs, M_COUNT, hook, &strict, &diag, NULL) == 0) {
			fill_worlds(true);
			struct vm_program va = link_for(&worlds[0], &p, linked[0]);
			struct vm_program vb = link_for(&worlds[1], &p, linked[1]);
			run_at_depth(&worlds[0], &va, 64);
			uint8_t dec[12];
			bool ok = decide_in_child(&worlds[1], &vb, dec);
			rank_runs++;
			if (worlds[0].rc || !ok || memcmp(dec, worlds[0].ctx + 140, 12)) {
				if (++rank_differ <= 3) {
					fprintf(stderr, "RANK VARIANCE: decisions differ between processes\n");
					print_program(&p);
				}
			}
		}
		fill_worlds(false);
		for (int w = 0; w < 2; w++) {
			struct vm_program vp = link_for(&worlds[w], &p, linked[w]);
			run_at_depth(&worlds[w], &vp, 64 + (w ? 16 * (1 + rn(200)) : 0));
		}
		struct world *A = &worlds[0], *B = &worlds[1];
		if (A->rc || B->rc)
			faults++;
		if (A->rc != B->rc || A->r0 != B->r0 || memcmp(A->ctx, B->ctx, 160) || !same_maps() ||
		    A->log_len != B->log_len || memcmp(A->log, B->log, A->log_len)) {
			if (++differ <= 3) {
				fprintf(stderr, "ADDRESS DEPENDENCE: r0 %llx vs %llx, rc %d vs %d, logs:\n%.*s--\n%.*s--\n",
					(unsigned long long)A->r0, (unsigned long long)B->r0, A->rc,
					B->rc, (int)A->log_len, A->log, (int)B->log_len, B->log);
				print_program(&p);
			}
		}
	}
	printf("address independence: %ld programs, %llu accepted and run in two address layouts, "
	       "%llu differed, %llu faulted (%.1f s)\nrejections:",
	       programs, (unsigned long long)accepted, (unsigned long long)differ,
	       (unsigned long long)faults, (double)(clock() - t0) / CLOCKS_PER_SEC);
	for (int c = 1; c < NB_VERR_COUNT; c++)
		if (codes[c])
			printf(" %s=%llu", verifier_err_code((enum nb_verr)c), (unsigned long long)codes[c]);
	printf("\n");
	printf("rank variance: %llu programs accepted with the rule on decided in two processes "
	       "with different rank-local inputs, %llu differed\n",
	       (unsigned long long)rank_runs, (unsigned long long)rank_differ);
	CHECK(rank_differ == 0);
	CHECK(rank_every == 0 || rank_runs > 0);
	CHECK(differ == 0);
	CHECK(faults == 0);
	CHECK(accepted * 10 >= (uint64_t)programs); /* the generator must exercise acceptance */
	CHECK(codes[NB_VERR_POINTER_CMP] > 0);      /* and the rule under test */
	for (int w = 0; w < 2; w++) {
		for (int m = 0; m < M_COUNT; m++)
			map_free(worlds[w].maps[m]);
		free(worlds[w].ctx_buf);
	}
	TEST_DONE();
}
