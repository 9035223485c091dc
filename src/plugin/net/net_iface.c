/* Interface selection with NCCL_SOCKET_IFNAME semantics (NCCL's socket transport):
 * a comma-separated list of name prefixes; a leading '^' turns the list into exclusions; a
 * leading '=' (after an optional '^') makes the names exact. Without a list: ib*, then
 * anything but docker*, lo*, virbr*, then docker*, then lo*. One address per interface
 * (IPv6 link-local addresses are skipped, as NCCL does). */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>

#include "plugin/net/net_tcp.h"

bool tcp_iface_matches(const char *spec, const char *ifname)
{
	bool exclude = false, exact = false;
	if (!spec || !ifname)
		return false;
	if (*spec == '^') {
		exclude = true;
		spec++;
	}
	if (*spec == '=') {
		exact = true;
		spec++;
	}
	bool hit = false;
	const char *p = spec;
	while (*p && !hit) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > 0) {
			if (exact)
				hit = strlen(ifname) == len && strncmp(ifname, p, len) == 0;
			else
				hit = strncmp(ifname, p, len) == 0;
		}
		p += len;
		if (*p == ',')
			p++;
	}
	return exclude ? !hit : hit;
}

static int collect(const char *spec, int family, struct tcp_iface *out, int max)
{
	struct ifaddrs *ifs = NULL;
	int n = 0;
	if (getifaddrs(&ifs) != 0)
		return 0;
	for (struct ifaddrs *a = ifs; a && n < max; a = a->ifa_next) {
		if (!a->ifa_addr || !a->ifa_name || !(a->ifa_flags & IFF_UP))
			continue;
		int fam = a->ifa_addr->sa_family;
		if (fam != AF_INET && fam != AF_INET6)
			continue;
		if (family && fam != family)
			continue;
		if (fam == AF_INET6) {
			const struct sockaddr_in6 *s6 = (const void *)a->ifa_addr;
			if (IN6_IS_ADDR_LINKLOCAL(&s6->sin6_addr))
				continue;
		}
		if (!tcp_iface_matches(spec, a->ifa_name))
			continue;
		bool dup = false;
		for (int i = 0; i < n; i++)
			dup |= strcmp(out[i].name, a->ifa_name) == 0;
		if (dup)
			continue;
		struct tcp_iface *f = &out[n];
		memset(f, 0, sizeof(*f));
		strncpy(f->name, a->ifa_name, sizeof(f->name) - 1);
		f->family = fam;
		if (fam == AF_INET) {
			memcpy(f->addr, &((const struct sockaddr_in *)(const void *)a->ifa_addr)->sin_addr, 4);
		} else {
			const struct sockaddr_in6 *s6 = (const void *)a->ifa_addr;
			memcpy(f->addr, &s6->sin6_addr, 16);
			f->scope_id = s6->sin6_scope_id;
		}
		n++;
	}
	freeifaddrs(ifs);
	return n;
}

int tcp_find_ifaces(const char *spec, int family, struct tcp_iface *out, int max)
{
	if (spec && *spec)
		return collect(spec, family, out, max);
	int n = collect("ib", family, out, max);
	if (!n)
		n = collect("^docker,lo,virbr", family, out, max);
	if (!n)
		n = collect("docker", family, out, max);
	if (!n)
		n = collect("lo", family, out, max);
	return n;
}
