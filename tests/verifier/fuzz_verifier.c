/* libFuzzer target: arbitrary instruction streams (and hook choice) through the verifier.
 * It must never crash, hang or trip a sanitizer, whatever the input. */
#include <stdint.h>
#include <string.h>

#include "verifier/verifier.h"

/* .rodata holds printk formats (the verifier counts their conversions) */
static uint8_t rodata[32] = "%d %u %x\0%%\0%llu%";
static const struct nb_map_def maps[] = {
	{ .name = "h", .type = 1, .key_size = 8, .value_size = 16, .max_entries = 8 },
	{ .name = "a", .type = 2, .key_size = 4, .value_size = 64, .max_entries = 2 },
	{ .name = ".rodata", .origin = NB_MAP_ORIGIN_RODATA, .type = 2, .key_size = 4,
	  .value_size = 32, .max_entries = 1, .map_flags = 1u << 7, .init_data = rodata },
	{ .name = "wo", .type = 2, .key_size = 4, .value_size = 16, .max_entries = 1,
	  .map_flags = 1u << 8 },
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct bpf_insn insns[512];
	if (size < 1)
		return 0;
	enum nb_hook_type h = (enum nb_hook_type)(data[0] % NB_HOOK_COUNT);
	size_t n = (size - 1) / sizeof(struct bpf_insn);
	if (n > 512)
		n = 512;
	memcpy(insns, data + 1, n * sizeof(struct bpf_insn));
	struct nb_program prog = { .name = "fuzz", .insns = insns, .insn_cnt = n,
				   .main_insn_cnt = n };
	struct nb_verifier_opts opts = { .budget = 20000, .mem_size = 64,
					 .allow_rank_local = (data[size - 1] & 1) != 0 };
	struct nb_verifier_diag diag;
	struct nb_verifier_stats st;
	verifier_check(&prog, maps, sizeof(maps) / sizeof(maps[0]), hook_desc(h), &opts, &diag, &st);
	return 0;
}
