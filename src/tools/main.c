/* ncclbpf: command-line front end. Each subcommand is `int cmd_<name>(int argc, char **argv)`
 * in its own cmd_<name>.c, called with argv[0] = the subcommand name (like git), returning
 * the process exit status. Subcommands owned by other modules are weak references so a
 * build without their file still links and says so. */
#include <stdio.h>
#include <string.h>

int cmd_info(int argc, char **argv);
int cmd_disasm(int argc, char **argv);
int cmd_exec(int argc, char **argv);
extern int cmd_verify(int argc, char **argv) __attribute__((weak));
extern int cmd_bench(int argc, char **argv) __attribute__((weak));
extern int cmd_trace(int argc, char **argv) __attribute__((weak));
extern int cmd_ctl(int argc, char **argv) __attribute__((weak));
extern int cmd_decisions(int argc, char **argv) __attribute__((weak));

struct subcommand {
	const char *name;
	int (*fn)(int, char **);
	const char *usage;
};

static void usage(FILE *f, const struct subcommand *cmds, size_t n)
{
	fprintf(f, "usage: ncclbpf <command> [args]\n\ncommands:\n");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].usage);
}

int main(int argc, char **argv)
{
	const struct subcommand cmds[] = {
		{"info", cmd_info, "OBJ                 programs, hooks, maps, BTF, license"},
		{"disasm", cmd_disasm, "OBJ [PROG]          disassembly with source lines"},
		{"exec", cmd_exec,
		 "[MEMHEX] [--interpret|--jit] [--elf] [--verify=on|off] [--debug]\n"
		 "                    run a raw program from stdin (bpf_conformance plugin)"},
		{"verify", cmd_verify, "[--type HOOK] [--stats] [--budget N] OBJ...\n"
				       "                    verify programs, compiler-style diagnostics"},
		{"bench", cmd_bench, "[--calls N] [--policies a,b]  per-decision cost against native C"},
		{"trace", cmd_trace, "DIR [-o trace.json] merge NCCLBPF_TRACE logs into a Chrome trace"},
		{"ctl", cmd_ctl, "list | PID|--all status|maps|dump|update|reload|detach  running jobs"},
		{"decisions", cmd_decisions, "[-q] DIR|FILE...  check NCCLBPF_DECISION_LOG files: all ranks agree?"},
	};
	const size_t n = sizeof(cmds) / sizeof(cmds[0]);

	if (argc < 2) {
		usage(stderr, cmds, n);
		return 1;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout, cmds, n);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(argv[1], cmds[i].name))
			continue;
		if (!cmds[i].fn) {
			fprintf(stderr, "ncclbpf: '%s' is not part of this build\n", cmds[i].name);
			return 1;
		}
		return cmds[i].fn(argc - 1, argv + 1);
	}
	fprintf(stderr, "ncclbpf: unknown command '%s'\n", argv[1]);
	usage(stderr, cmds, n);
	return 1;
}
