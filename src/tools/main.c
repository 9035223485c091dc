/* ncclbpf: the command-line front end (dispatcher, help, version).
 *
 * Adding a command (e.g. `ncclbpf ctl`), all in your own src/tools/cmd_ctl.c (the build
 * globs src/tools/cmd_*.c; nothing else to edit):
 *
 *     #include "tools/cli.h"
 *     static int cmd_ctl(int argc, char **argv);   // argv[0] = "ctl"
 *     NCCLBPF_CLI_COMMAND(ctl, .name = "ctl", .run = cmd_ctl,
 *                         .synopsis = "[--json] SOCKET REQUEST",
 *                         .summary = "talk to a running job's control socket",
 *                         .help = "Sends REQUEST to ...\n"
 *                                 "\n"
 *                                 "options:\n"
 *                                 "  --json      one JSON document on stdout (schema below)\n");
 *
 * The dispatcher then gives you, for free: `ncclbpf help ctl`, `ncclbpf ctl --help` / `-h`
 * (handled before your function runs, so it never sees them), the line in `ncclbpf help`,
 * and the section in docs/cli.md (regenerate it with `cmake --build build --target
 * cli-docs`; the test cli_docs_current fails while it is stale).
 *
 * Conventions every command follows (tools/cli.h has the helpers):
 *  - exit codes: CLI_EXIT_OK 0, CLI_EXIT_REFUSED 1 (the input was refused: bad or missing
 *    object, verifier rejection, failed run), CLI_EXIT_USAGE 2 (unknown option, bad value,
 *    missing argument). Return them from run().
 *  - one message per failure, on stderr, "ncclbpf CMD: ..." (cli_error) or, about an input
 *    file, "FILE: error: ..."; usage errors through cli_usage_error (adds the help hint).
 *  - options: "--opt VALUE" and "--opt=VALUE" (cli_opt_value); numbers range-checked
 *    (cli_parse_range), never atoi.
 *  - `--json`: one JSON document on stdout through struct cli_json, with a "schema" member
 *    "ncclbpf.<command>/<version>"; document the members in the help text's "json:" block
 *    (it lands in docs/cli.md). Add members freely; renaming or removing one bumps the
 *    version.
 *  - colour only through cli_use_color(stream) (TTY, NO_COLOR unset).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ncclbpf_version.h"
#include "tools/cli.h"
#include "vm/vm.h"

/* The linker collects every NCCLBPF_CLI_COMMAND pointer between these two symbols. */
extern const struct cli_command *const __start_ncclbpf_cli_commands[];
extern const struct cli_command *const __stop_ncclbpf_cli_commands[];

#define CLI_MAX_COMMANDS 64
static const struct cli_command *sorted[CLI_MAX_COMMANDS];
static size_t n_sorted;

static int cmp_cmd(const void *a, const void *b)
{
	return strcmp((*(const struct cli_command *const *)a)->name,
		      (*(const struct cli_command *const *)b)->name);
}

size_t cli_commands(const struct cli_command *const **out)
{
	if (!n_sorted) {
		for (const struct cli_command *const *p = __start_ncclbpf_cli_commands;
		     p < __stop_ncclbpf_cli_commands && n_sorted < CLI_MAX_COMMANDS; p++)
			if (*p)
				sorted[n_sorted++] = *p;
		qsort(sorted, n_sorted, sizeof(sorted[0]), cmp_cmd);
	}
	*out = sorted;
	return n_sorted;
}

const struct cli_command *cli_find_command(const char *name)
{
	const struct cli_command *const *cmds;
	size_t n = cli_commands(&cmds);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(cmds[i]->name, name))
			return cmds[i];
	return NULL;
}

/* ---- help ---- */

static bool is_help_flag(const char *a)
{
	return !strcmp(a, "-h") || !strcmp(a, "--help");
}

static const char global_help[] =
	"Inspects, disassembles, verifies and runs eBPF policies for NCCL (libncclbpf.so).\n"
	"\n"
	"global options:\n"
	"  -h, --help       this text; `ncclbpf help CMD` or `ncclbpf CMD --help` for a command\n"
	"  -V, --version    version, git commit, build type, JIT, NCCL plugin ABI versions\n"
	"\n"
	"exit status (every command):\n"
	"  0  success\n"
	"  1  the input was refused: missing or malformed object, verifier rejection, failed\n"
	"     run or benchmark\n"
	"  2  usage error: unknown command or option, bad or out-of-range value, missing\n"
	"     argument\n"
	"  3  the answer is \"no\", not an error: `decisions` found ranks that decided\n"
	"     differently; `ctl` reached no process\n"
	"  4  incomplete: `decisions` found no divergence, but some decisions were dropped\n"
	"     or lost by the writers, so those collectives were not checked\n";

static void print_usage_line(FILE *f, const struct cli_command *c)
{
	fprintf(f, "usage: ncclbpf %s%s%s\n", c->name, c->synopsis && *c->synopsis ? " " : "",
		c->synopsis ? c->synopsis : "");
}

static void print_command_help(FILE *f, const struct cli_command *c)
{
	print_usage_line(f, c);
	fprintf(f, "\n%s", c->help ? c->help : "");
}

static void print_global_help(FILE *f)
{
	const struct cli_command *const *cmds;
	size_t n = cli_commands(&cmds);
	fprintf(f, "usage: ncclbpf [--version] [--help] <command> [args]\n\n%s\ncommands:\n",
		global_help);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %-10s %s\n", cmds[i]->name, cmds[i]->summary);
}

/* docs/cli.md: the same text as --help, as Markdown. */
static void print_markdown(FILE *f)
{
	const struct cli_command *const *cmds;
	size_t n = cli_commands(&cmds);
	fprintf(f, "# The `ncclbpf` command-line tool\n\n"
		   "<!-- Generated by `ncclbpf help --markdown` and `mock_nccl_host --markdown` "
		   "from the\n     commands' --help text (src/tools/, tests/mock_nccl/mock_host.c). "
		   "Do not edit:\n     change the help text, then run "
		   "`cmake --build build --target cli-docs`. -->\n\n"
		   "```\nusage: ncclbpf [--version] [--help] <command> [args]\n\n%s```\n\n"
		   "| command | what it does |\n|---|---|\n",
		global_help);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "| [`ncclbpf %s`](#ncclbpf-%s) | %s |\n", cmds[i]->name, cmds[i]->name,
			cmds[i]->summary);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "\n## ncclbpf %s\n\n```\n", cmds[i]->name);
		print_command_help(f, cmds[i]);
		fprintf(f, "```\n");
	}
}

static int cmd_help(int argc, char **argv)
{
	if (argc == 1) {
		print_global_help(stdout);
		return CLI_EXIT_OK;
	}
	if (argc == 2 && !strcmp(argv[1], "--markdown")) {
		print_markdown(stdout);
		return CLI_EXIT_OK;
	}
	if (argc != 2)
		return cli_usage_error("help", "takes one command name");
	if (is_help_flag(argv[1])) {
		print_command_help(stdout, cli_find_command("help"));
		return CLI_EXIT_OK;
	}
	const struct cli_command *c = cli_find_command(argv[1]);
	if (!c) {
		fprintf(stderr, "ncclbpf help: unknown command '%s' (commands: see `ncclbpf help`)\n",
			argv[1]);
		return CLI_EXIT_USAGE;
	}
	print_command_help(stdout, c);
	return CLI_EXIT_OK;
}

NCCLBPF_CLI_COMMAND(help, .name = "help", .run = cmd_help, .synopsis = "[CMD | --markdown]",
		    .summary = "this list, or one command's options",
		    .help = "Prints the list of commands, or the usage and options of CMD (the "
			    "same text as\n`ncclbpf CMD --help`).\n"
			    "\n"
			    "options:\n"
			    "  --markdown   the reference of every command as Markdown "
			    "(docs/cli.md)\n");

/* ---- version ---- */

/* The plugin ABI versions a library actually exports (dlsym), so this never drifts from
 * the build: the symbol names NCCL looks up, per plugin type. */
static const struct {
	const char *type;
	const char *symbol; /* printf format with the version */
} abi_kinds[] = {
	{ "tuner", "ncclTunerPlugin_v%d" },   { "profiler", "ncclProfiler_v%d" },
	{ "net", "ncclNetPlugin_v%d" },       { "collnet", "ncclCollNetPlugin_v%d" },
	{ "gin", "ncclGinPlugin_v%d" },       { "env", "ncclEnvPlugin_v%d" },
};
#define ABI_MAX_VERSION 32

static int cmd_version(int argc, char **argv)
{
	bool json = false;
	const char *lib = NULL;
	for (int i = 1; i < argc; i++) {
		int r;
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if ((r = cli_opt_value("version", argc, argv, &i, "--lib", &lib)) != 0) {
			if (r < 0)
				return CLI_EXIT_USAGE;
		} else {
			return cli_usage_error("version", "unknown argument '%s'", argv[i]);
		}
	}
	char path[1200];
	if (lib) {
		snprintf(path, sizeof(path), "%s", lib);
	} else {
		char dir[1024];
		cli_exe_dir(dir, sizeof(dir));
		snprintf(path, sizeof(path), "%s/libncclbpf.so", dir);
	}
	void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
	const char *dlerr = h ? NULL : dlerror();
	const char *build =
#ifdef NCCLBPF_SANITIZED
		NCCLBPF_BUILD_TYPE " + ASan/UBSan";
#else
		NCCLBPF_BUILD_TYPE;
#endif
	bool jit = vm_jit_available();
	struct cli_json j;
	if (json) {
		cli_json_init(&j, stdout);
		cli_json_object(&j, NULL);
		cli_json_str(&j, "schema", "ncclbpf.version/1");
		cli_json_str(&j, "version", NCCLBPF_VERSION);
		cli_json_str(&j, "commit", NCCLBPF_GIT_COMMIT);
		cli_json_str(&j, "build_type", build);
		cli_json_bool(&j, "jit", jit);
		cli_json_str(&j, "library", path);
		if (!h)
			cli_json_str(&j, "library_error", dlerr);
		cli_json_object(&j, "abi");
	} else {
		printf("ncclbpf %s (commit %s, %s build)\n", NCCLBPF_VERSION, NCCLBPF_GIT_COMMIT,
		       build);
		printf("JIT:     %s\n", jit ? "x86-64 (policies are JIT-compiled; NCCLBPF_JIT=0 "
					      "interprets)"
					    : "not available on this architecture (interpreter)");
		printf("library: %s\n", path);
		if (h)
			printf("NCCL plugin ABI versions exported:\n");
	}
	int total = 0;
	for (size_t k = 0; h && k < sizeof(abi_kinds) / sizeof(abi_kinds[0]); k++) {
		char line[256] = "", sym[64];
		int found = 0;
		if (json)
			cli_json_array(&j, abi_kinds[k].type);
		for (int v = 1; v <= ABI_MAX_VERSION; v++) {
			snprintf(sym, sizeof(sym), abi_kinds[k].symbol, v);
			if (!dlsym(h, sym))
				continue;
			if (json)
				cli_json_int(&j, NULL, v);
			size_t l = strlen(line);
			snprintf(line + l, sizeof(line) - l, "%sv%d", found ? ", " : "", v);
			found++;
			total++;
		}
		if (json)
			cli_json_end(&j);
		else
			printf("  %-9s %s\n", abi_kinds[k].type, found ? line : "(none)");
	}
	/* fail closed: the ABI versions are what this command is asked for */
	char why[600] = "";
	if (!h)
		snprintf(why, sizeof(why), "not loadable: %.500s", dlerr ? dlerr : "?");
	else if (!total)
		snprintf(why, sizeof(why), "exports no NCCL plugin symbol (not libncclbpf.so?)");
	if (json) {
		cli_json_end(&j);
		if (h && !total)
			cli_json_str(&j, "library_error", why);
		cli_json_end(&j);
		cli_json_finish(&j);
	} else if (why[0]) {
		fflush(stdout);
		cli_error("version", "%s: %s", path, why);
	}
	if (h)
		dlclose(h);
	return why[0] ? CLI_EXIT_REFUSED : CLI_EXIT_OK;
}

NCCLBPF_CLI_COMMAND(version, .name = "version", .run = cmd_version,
		    .synopsis = "[--json] [--lib PATH]",
		    .summary = "version, git commit, build type, JIT, NCCL plugin ABI versions",
		    .help = "Prints the version, the git commit it was built from, the build type, "
			    "whether this\nmachine has a JIT, and the NCCL plugin ABI versions "
			    "(ncclTunerPlugin_vN,\nncclProfiler_vN, ...) that the library exports, "
			    "read from the library itself.\n`ncclbpf --version` is the same.\n"
			    "\n"
			    "options:\n"
			    "  --json       one JSON document (below)\n"
			    "  --lib PATH   the library to inspect (default: libncclbpf.so next to "
			    "this program)\n"
			    "\n"
			    "exit status: 0 the library was read; 1 it cannot be loaded or exports "
			    "no NCCL\nplugin symbol (the version lines are printed all the same); "
			    "2 usage.\n"
			    "\n"
			    "json (schema \"ncclbpf.version/1\"):\n"
			    "  {\"schema\", \"version\", \"commit\", \"build_type\": strings,\n"
			    "   \"jit\": bool, \"library\": path, \"library_error\": string (only "
			    "when it\n   cannot be loaded or exports no plugin symbol), \"abi\": {\"tuner\": [3, 4, ...], "
			    "\"profiler\": [...], \"net\",\n   \"collnet\", \"gin\", \"env\": "
			    "arrays of version numbers}}\n");

/* ---- dispatch ---- */

int main(int argc, char **argv)
{
	if (argc < 2) {
		print_global_help(stderr);
		return CLI_EXIT_USAGE;
	}
	const char *name = argv[1];
	if (is_help_flag(name)) {
		print_global_help(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(name, "-V") || !strcmp(name, "--version"))
		name = "version";
	const struct cli_command *c = cli_find_command(name);
	if (!c) {
		fprintf(stderr, "ncclbpf: unknown command '%s'; the commands are:", name);
		const struct cli_command *const *cmds;
		size_t n = cli_commands(&cmds);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %s", cmds[i]->name);
		fprintf(stderr, " (`ncclbpf help` describes them)\n");
		return CLI_EXIT_USAGE;
	}
	/* `CMD --help` anywhere before a "--" (help itself treats its arguments as names) */
	for (int i = 2; i < argc && c->run != cmd_help; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (is_help_flag(argv[i])) {
			print_command_help(stdout, c);
			return CLI_EXIT_OK;
		}
	}
	argv[1] = (char *)c->name;
	return c->run(argc - 1, argv + 1);
}
