/* Hex byte parsing for raw programs and memory images (`ncclbpf exec`, bpf_conformance's
 * plugin protocol: "b7  00  00  ..." with any whitespace, optional 0x prefix per token). */
#include <ctype.h>
#include <errno.h>

#include "isa/isa.h"

static int isa_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

long isa_parse_hex_bytes(const char *text, uint8_t *out, size_t cap)
{
	size_t n = 0;
	const char *p = text;
	if (!text)
		return -EINVAL;
	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
			p += 2;
		int hi = isa_hex_digit(p[0]);
		if (hi < 0)
			return -EINVAL;
		int v = hi, digits = 1;
		int lo = isa_hex_digit(p[1]);
		if (lo >= 0) {
			v = hi * 16 + lo;
			digits = 2;
		}
		p += digits;
		/* a token is one byte: at most two digits, then whitespace or the end */
		if (*p && !isspace((unsigned char)*p))
			return -EINVAL;
		if (n >= cap)
			return -E2BIG;
		out[n++] = (uint8_t)v;
	}
	return (long)n;
}
