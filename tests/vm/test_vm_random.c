/* Robustness on random instruction streams: isa_validate and isa_disasm_insn never crash on
 * arbitrary bytes, and every program isa_validate accepts runs in checked mode to an r0 or a
 * clean fault (never a crash), whatever its memory accesses, calls and loops do.
 * usage: test_vm_random [iterations] (CI default: 20000) */
#include <errno.h>
#include <stdlib.h>

#include "vm/vm_test_harness.h"

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* An opcode biased towards valid ones, with plausible fields. */
static struct bpf_insn random_insn(size_t pc, size_t n)
{
	static const uint8_t common[] = {
		0x07, 0x0f, 0x17, 0x1f, 0x27, 0x2f, 0x37, 0x3f, 0x47, 0x4f, 0x57, 0x5f, 0x67, 0x6f,
		0x77, 0x7f, 0x87, 0x97, 0x9f, 0xa7, 0xaf, 0xb7, 0xbf, 0xc7, 0xcf, 0xd7, 0x04, 0x0c,
		0x14, 0x24, 0x34, 0x3c, 0x44, 0x54, 0x64, 0x74, 0x84, 0x94, 0x9c, 0xa4, 0xb4, 0xbc,
		0xc4, 0xd4, 0xdc, 0x61, 0x69, 0x71, 0x79, 0x81, 0x89, 0x91, 0x62, 0x6a, 0x72, 0x7a,
		0x63, 0x6b, 0x73, 0x7b, 0xc3, 0xdb, 0x05, 0x06, 0x15, 0x1d, 0x25, 0x2d, 0x35, 0x45,
		0x55, 0x65, 0x75, 0xa5, 0xb5, 0xc5, 0xd5, 0x16, 0x1e, 0x26, 0x56, 0xa6, 0xce, 0x85,
		0x95,
	};
	struct bpf_insn in;
	uint64_t r = rnd();
	in.code = (r & 7) == 0 ? (uint8_t)(r >> 8) : common[(r >> 8) % sizeof(common)];
	in.dst_reg = (r >> 16) % 11;
	in.src_reg = (r >> 20) % 11;
	in.off = 0;
	in.imm = 0;
	uint8_t cls = BPF_CLASS(in.code);
	if (cls == BPF_JMP || cls == BPF_JMP32) {
		int64_t t = (int64_t)((r >> 24) % (n + 2)) - (int64_t)pc - 1;
		in.off = (int16_t)t;
		in.imm = (r >> 40) & 1 ? (int32_t)(r >> 44) % 1000 : 0;
		if (in.code == 0x06)
			in.imm = (int32_t)t, in.off = 0;
		if (in.code == 0x85) {
			in.src_reg = (r >> 50) & 1;
			in.dst_reg = 0;
			in.imm = in.src_reg ? (int32_t)t : (int32_t)((r >> 52) % 8);
		}
	} else if (cls == BPF_LDX || cls == BPF_ST || cls == BPF_STX) {
		in.off = (int16_t)((int64_t)((r >> 24) % 1100) - 550);
		in.imm = cls == BPF_ST ? (int32_t)(r >> 40) : 0;
		if (in.code == 0xc3 || in.code == 0xdb) {
			static const int32_t aops[] = { 0, 1, 0x40, 0x41, 0x50, 0x51, 0xa0, 0xa1, 0xe1,
							0xf1 };
			in.imm = aops[(r >> 40) % 10];
		}
	} else {
		in.off = (r >> 30) % 5 == 0 ? (int16_t)((r >> 33) % 2 ? 1 : 8) : 0;
		in.imm = (r >> 36) % 3 == 0 ? 16 << ((r >> 40) % 3) : (int32_t)(r >> 32);
	}
	return in;
}

static uint64_t h_identity(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	(void)b, (void)c, (void)d, (void)e;
	return a;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 20000;
	struct bpf_insn prog[48];
	uint8_t ctx[64];
	char err[256], buf[128];
	long accepted = 0, ok = 0, faulted = 0;
	test_helpers[5] = h_identity;
	for (long it = 0; it < iters; it++) {
		size_t n = 2 + rnd() % 40;
		for (size_t i = 0; i < n; i++)
			prog[i] = random_insn(i, n);
		if (rnd() % 2)
			prog[n - 1] = EXIT();
		for (size_t pc = 0; pc < n;) {
			int s = isa_disasm_insn(prog, n, pc, buf, sizeof(buf));
			if (s != 1 && s != 2) {
				CHECK(0);
				break;
			}
			pc += (size_t)s;
		}
		/* repair: regenerate the instruction the validator names, a few times */
		int v = -1;
		for (int attempt = 0; attempt < 40 && v; attempt++) {
			size_t bad;
			if (!(v = isa_validate(prog, n, err, sizeof(err))))
				break;
			if (sscanf(err, "insn %zu", &bad) != 1 || bad >= n)
				break;
			prog[bad] = strstr(err, "last instruction") ? EXIT() : random_insn(bad, n);
		}
		if (v)
			continue;
		accepted++;
		struct vm_program p = { prog, n, test_helpers, test_protos };
		struct vm_checked chk;
		struct vm_fault f;
		uint64_t r0;
		memset(&chk, 0, sizeof(chk));
		memset(ctx, 0, sizeof(ctx));
		vm_checked_add_region(&chk, (uint64_t)(uintptr_t)ctx, sizeof(ctx), true, "context");
		chk.insn_budget = 5000;
		int rc = vm_interp_run(&p, (uint64_t)(uintptr_t)ctx, sizeof(ctx), &r0, &chk, &f);
		if (rc == 0) {
			ok++;
		} else {
			faulted++;
			CHECK(rc == -EFAULT && f.kind != VM_FAULT_NONE && f.pc < n);
			CHECK(!strncmp(f.msg, "insn ", 5));
		}
		CHECK(chk.region_cnt == 1);
	}
	printf("%ld programs, %ld valid: %ld returned, %ld faulted cleanly\n", iters, accepted, ok,
	       faulted);
	CHECK(iters < 1000 || accepted > iters / 50);
	TEST_DONE();
}
