/* agree: process-wide configuration (NCCLBPF_AGREE*, docs/agreement.md "Configuration"),
 * the reasons of a fallback as words, and test-only fault injection. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agree/agree_internal.h"
#include "runtime/runtime.h"

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
static struct agree_config config;

uint64_t agree_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t env_u64(const char *name, uint64_t def)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return def;
	char *end;
	unsigned long long x = strtoull(v, &end, 10);
	return *end ? def : (uint64_t)x;
}

/* "host:port" -> parts; false if malformed. */
static bool split_addr(const char *s, char *host, size_t hostlen, uint16_t *port)
{
	const char *colon = strrchr(s, ':');
	if (!colon || colon == s || (size_t)(colon - s) >= hostlen)
		return false;
	char *end;
	unsigned long p = strtoul(colon + 1, &end, 10);
	if (*end || p == 0 || p > 65535)
		return false;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = '\0';
	*port = (uint16_t)p;
	return true;
}

static void parse_faults(const char *s)
{
	/* comma-separated key=value; test-only (docs/agreement.md "Testing") */
	while (s && *s) {
		unsigned long long v = 0;
		if (sscanf(s, "leader_delay_ms=%llu", &v) == 1)
			config.fault_leader_delay_ns = v * 1000000ull;
		else if (sscanf(s, "drop_after_epochs=%llu", &v) == 1)
			config.fault_drop_after_epochs = v;
		else if (sscanf(s, "stall_service_ms=%llu", &v) == 1)
			config.fault_stall_service_ns = v * 1000000ull;
		else if (sscanf(s, "block_after_ms=%llu", &v) == 1)
			config.fault_block_after_ns = v * 1000000ull;
		else if (sscanf(s, "block_ms=%llu", &v) == 1)
			config.fault_block_ns = v * 1000000ull;
		else if (sscanf(s, "no_commit_after=%llu", &v) == 1)
			config.fault_no_commit_after = v;
		else if (sscanf(s, "kill_after_commit=%llu", &v) == 1)
			config.fault_kill_after_commit = v;
		else if (sscanf(s, "retry_ms=%llu", &v) == 1)
			config.retry_ns = v * 1000000ull;
		else if (sscanf(s, "kill_mid_commit_last=%llu", &v) == 1)
			config.fault_kill_mid_commit_last = v;
		else if (sscanf(s, "kill_mid_commit=%llu", &v) == 1)
			config.fault_kill_mid_commit = v;
		else if (sscanf(s, "hold_after_data=%llu", &v) == 1)
			config.fault_hold_after_data = v;
		else if (sscanf(s, "hold_file=%255[^,]", config.fault_hold_file) == 1)
			config.fault_hold_file[sizeof(config.fault_hold_file) - 1] = '\0';
		s = strchr(s, ',');
		if (s)
			s++;
	}
}

bool agree_fault_blocked(uint64_t now)
{
	return config.fault_block_ns && now >= config.start_ns + config.fault_block_after_ns &&
	       now < config.start_ns + config.fault_block_after_ns + config.fault_block_ns;
}

/* Without a secret the job key is public: only this user's processes on this host are
 * accepted, so a rendezvous on another host cannot work. Said once, at startup, rather
 * than by a timeout. */
static void check_secret_needed(void)
{
	if (config.secret_set || !config.have_addr)
		return;
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
	if (getaddrinfo(config.host, NULL, &hints, &res) != 0 || !res)
		return; /* the service says it cannot resolve it */
	uint32_t addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr;
	freeaddrinfo(res);
	if (agree_addr_is_local(addr))
		return;
	snprintf(config.refused, sizeof(config.refused),
		 "the rendezvous %s:%u is on another host and NCCLBPF_AGREE_SECRET is not set "
		 "(across hosts the agreement layer needs a secret shared by the job's ranks)",
		 config.host, config.port);
	runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_TUNING, "agree: %s; policies that read "
		    "agreed maps get NCCL's default decisions on every rank", config.refused);
}

static void config_init(void)
{
	const char *a = getenv("NCCLBPF_AGREE");
	config.start_ns = agree_now_ns();
	config.enabled = true;
	config.wait_ns = env_u64("NCCLBPF_AGREE_WAIT_MS", AGREE_DEFAULT_WAIT_MS) * 1000000ull;
	config.collect_ns = config.wait_ns / 4;
	config.retry_ns = 20000000ull;
	int b = runtime_env_parse_bool(a);
	if (b == 0) { /* off, 0, no, false */
		config.enabled = false;
	} else if (a && *a && b < 0) {
		if (split_addr(a, config.host, sizeof(config.host), &config.port))
			config.have_addr = true;
		else
			runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_TUNING,
				    "agree: NCCLBPF_AGREE='%s' is not host:port or off; agreement "
				    "disabled (policies that read agreed maps get NCCL's default "
				    "decisions on every rank)", a);
	} else {
		const char *h = getenv("MASTER_ADDR"), *p = getenv("MASTER_PORT");
		unsigned long port = p ? strtoul(p, NULL, 10) : 0;
		if (h && *h && port > 0 && port + AGREE_PORT_OFFSET <= 65535 &&
		    strlen(h) < sizeof(config.host)) {
			snprintf(config.host, sizeof(config.host), "%s", h);
			config.port = (uint16_t)(port + AGREE_PORT_OFFSET);
			config.have_addr = true;
		}
	}
	const char *secret = getenv("NCCLBPF_AGREE_SECRET");
	config.secret_set = secret && *secret;
	agree_job_key(config.secret_set ? secret : NULL, &config.key);
	parse_faults(getenv("NCCLBPF_AGREE_TEST_FAULT"));
	if (config.enabled)
		check_secret_needed();
}

const struct agree_config *agree_config(void)
{
	pthread_once(&config_once, config_init);
	return &config;
}

void agree_why_text(uint32_t why, uint32_t rank, uint32_t detail, char *buf, size_t len)
{
	switch (why) {
	case AGREE_WHY_LOST:
		snprintf(buf, len, "rank %u left the group", rank);
		break;
	case AGREE_WHY_DESTROYED:
		snprintf(buf, len, "rank %u destroyed the communicator", rank);
		break;
	case AGREE_WHY_TIMEOUT:
		snprintf(buf, len, "rank %u waited %llu ms for %s %u without a verdict", rank,
			 (unsigned long long)(config.wait_ns / 2000000),
			 detail ? "version" : "the join barrier, collective", detail);
		break;
	case AGREE_WHY_CONFIG:
		snprintf(buf, len, "rank %u's configuration differs from rank 0's: %s", rank,
			 agree_fp_field_name(detail));
		break;
	case AGREE_WHY_NORANK:
		snprintf(buf, len, "a rank without ncclbpf's profiler plugin is a member: it has no "
			 "rank and cannot join (or a process that holds two ranks of the "
			 "communicator)");
		break;
	case AGREE_WHY_MISSING:
		snprintf(buf, len, "rank %u%s did not join within %llu ms (not started, no policy "
			 "with agreed maps there, NCCLBPF_AGREE=off, another NCCLBPF_AGREE_SECRET, "
			 "or unreachable)", rank, detail > 1 ? " and others" : "",
			 (unsigned long long)(config.wait_ns / 1000000));
		break;
	case AGREE_WHY_RANK:
		snprintf(buf, len, "rank %u joined twice or is out of range", rank);
		break;
	case AGREE_WHY_OOM:
		snprintf(buf, len, "out of memory");
		break;
	case AGREE_WHY_HUB:
		snprintf(buf, len, "the rendezvous hub refused this communicator's registration");
		break;
	default:
		snprintf(buf, len, "a rank could not agree");
		break;
	}
}
