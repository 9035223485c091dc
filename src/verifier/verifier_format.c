/* Compiler-style formatting of a verifier diagnostic (uses the isa disassembler). */
#include <stdio.h>
#include <string.h>

#include "verifier/verifier_internal.h"

int verifier_format_diag(const struct nb_verifier_diag *diag, const struct nb_program *prog,
			 char *buf, size_t buflen)
{
	char ins[128] = "";
	if (prog && diag->insn < prog->insn_cnt &&
	    isa_disasm_insn(prog->insns, prog->insn_cnt, diag->insn, ins, sizeof(ins)) < 0)
		snprintf(ins, sizeof(ins), "(cannot disassemble)");
	const char *file = diag->file ? diag->file : (prog ? prog->name : "program");
	const char *sev = diag->warning ? "warning" : "error";
	int n;
	if (diag->line)
		n = snprintf(buf, buflen, "%s:%u:%u: %s: %s [%s]\n", file, diag->line, diag->col,
			     sev, diag->msg, verifier_diag_code(diag));
	else
		n = snprintf(buf, buflen, "%s: %s: %s [%s]\n", file, sev, diag->msg,
			     verifier_diag_code(diag));
	size_t used = n > 0 ? (size_t)n : 0;
	if (diag->line && diag->line_src && diag->line_src[0]) {
		const char *s = diag->line_src;
		while (*s == ' ' || *s == '\t')
			s++;
		size_t skipped = (size_t)(s - diag->line_src), len = strlen(s);
		while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
			len--;
		char *p = used < buflen ? buf + used : NULL;
		n = snprintf(p, p ? buflen - used : 0, "%6u | %.*s\n", diag->line, (int)len, s);
		used += n > 0 ? (size_t)n : 0;
		/* a caret under the column (1-based, in the unstripped line); tabs are copied so
		 * the caret lines up however the terminal expands them */
		if (diag->col > skipped && diag->col - 1 - skipped <= len) {
			char mark[300];
			size_t k = 0, upto = diag->col - 1 - skipped;
			for (size_t i = 0; i < upto && k + 2 < sizeof(mark); i++)
				mark[k++] = s[i] == '\t' ? '\t' : ' ';
			mark[k++] = '^';
			mark[k] = '\0';
			p = used < buflen ? buf + used : NULL;
			n = snprintf(p, p ? buflen - used : 0, "       | %s\n", mark);
			used += n > 0 ? (size_t)n : 0;
		}
	}
	char *p = used < buflen ? buf + used : NULL;
	n = snprintf(p, p ? buflen - used : 0, "  insn %zu: %s\n", diag->insn, ins);
	used += n > 0 ? (size_t)n : 0;
	if (prog && !diag->line && prog->line_cnt == 0) {
		p = used < buflen ? buf + used : NULL;
		n = snprintf(p, p ? buflen - used : 0,
			     "  note: no source lines: the object has no BTF line info; compile "
			     "with clang -g to see the C line here\n");
		used += n > 0 ? (size_t)n : 0;
	}
	return (int)used;
}
