/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * Lace's probe datapath: cgroup connect programs attached to the kubelet's
 * cgroup. A TCP connect whose destination (family, address, port) is a
 * registered probe target gets SO_MARK = the target's mark before the route
 * lookup, so the data plane delivers it into that target's overlay network.
 * The destination is never rewritten and no connect is ever rejected.
 */
#include <linux/bpf.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/socket.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "lace.h"

/* Verdicts of cgroup/connect programs. */
#define SYS_REJECT 0
#define SYS_PROCEED 1

/* Not in the uapi headers that clang -target bpf can include cleanly. */
#ifndef SOL_SOCKET
#define SOL_SOCKET 1
#endif
#ifndef SO_MARK
#define SO_MARK 36
#endif
#ifndef SOCK_STREAM
#define SOCK_STREAM 1
#endif

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The map layout this object was built for; the agent reads it from the ELF symbol table. */
const volatile __u32 lace_abi_version = LACE_ABI_VERSION;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LACE_MAX_TARGETS);
	__type(key, struct lace_probe_key);
	__type(value, struct lace_probe_value);
} probe_targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LACE_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lace_info);
} info SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, LACE_MAX_RANGES);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, struct lace_range_key);
	__type(value, struct lace_range_value);
} pod_ranges SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lace_range_filter);
} range_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LACE_MAX_NETWORKS);
	__type(key, __u32);
	__type(value, struct lace_network_counts);
} network_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, LACE_REPORT_RING_BYTES);
} reports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lace_report_window);
} report_window SEC(".maps");

/*
 * The hook-cost benchmark (bench/hook_programs.ts) builds this file twice more
 * to split a connect's cost: -DLACE_BENCH_NOOP, programs that return at once
 * (what the kernel charges for running any cgroup connect program), and
 * -DLACE_BENCH_LOOKUP_ONLY, the lookup and the mark and nothing counted (the
 * least a program that tags must do).
 */
#ifdef LACE_BENCH_NOOP
#define bench_noop() 1
#else
#define bench_noop() 0
#endif
#ifdef LACE_BENCH_LOOKUP_ONLY
#define bench_lookup_only() 1
#else
#define bench_lookup_only() 0
#endif

static __always_inline void count(__u32 slot)
{
	__u64 *value;

	if (bench_lookup_only())
		return;
	value = bpf_map_lookup_elem(&counters, &slot);
	if (value)
		*value += 1;
}

/*
 * Upgrade tests build this file with -DLACE_TEST_VARIANT: other instructions,
 * the same maps, and a visible trace (the last, unused counter slot) that the
 * variant is the program running.
 */
#ifdef LACE_TEST_VARIANT
#define count_variant() count(LACE_CNT_MAX - 1)
#else
#define count_variant()
#endif

static __always_inline void count_network(__u32 network_id, int unmatched)
{
	struct lace_network_counts *counts;

	if (bench_lookup_only())
		return;
	counts = bpf_map_lookup_elem(&network_counts, &network_id);
	if (!counts)
		return;
	__sync_fetch_and_add(unmatched ? &counts->unmatched : &counts->tagged, 1);
}

/* Whether this CPU may send one more report in the current second. */
static __always_inline int report_allowed(void)
{
	__u32 zero = 0;
	struct lace_report_window *w = bpf_map_lookup_elem(&report_window, &zero);
	__u64 now;

	if (!w)
		return 0;
	now = bpf_ktime_get_coarse_ns();
	if (now - w->start_ns >= 1000000000ULL) {
		w->start_ns = now;
		w->sent = 0;
	}
	if (w->sent >= LACE_REPORTS_PER_SECOND)
		return 0;
	w->sent += 1;
	return 1;
}

/* Sends one report of an unmatched connect; false when the ring buffer is full. */
static __always_inline int send_report(struct lace_probe_key *key, __u16 network_id)
{
	struct lace_unmatched_report report = {
		.family = key->family,
		.port = key->port,
		.network_id = network_id,
	};

	__builtin_memcpy(report.addr, key->addr, 16);
	return bpf_ringbuf_output(&reports, &report, sizeof(report), 0) == 0;
}

/*
 * Whether the destination may lie in a pod range (lace.h, struct
 * lace_range_filter): false only when its bucket's bit is clear, which proves
 * it is outside every range: most of the kubelet's connects that match no
 * target (the API server, a registry, a host-network pod) then skip the trie
 * (what that saves: bench/RESULTS.md, "a range filter before the trie").
 */
static __always_inline int may_be_in_range(struct lace_probe_key *key)
{
	__u32 zero = 0, fam = key->family == LACE_AF_INET6, prefix, hi, lo = 0;
	struct lace_range_filter *f = bpf_map_lookup_elem(&range_filter, &zero);
	struct lace_range_filter_slot *s;
	__u64 top, idx;

	if (!f)
		return 1;
	/*
	 * One load of `active`, then only its slot, whose bytes the agent's next
	 * write leaves as they are (lace.h): volatile, so that the compiler loads
	 * each of `active` and the prefix once and uses what it loaded.
	 */
	s = &f->slot[*(volatile __u32 *)&f->active & 1];
	prefix = *(volatile __u32 *)&s->prefix[fam];
	if (prefix == 0 || prefix > (fam ? 64 : 32))
		return 1;
	__builtin_memcpy(&hi, key->addr, 4);
	if (fam)
		__builtin_memcpy(&lo, key->addr + 4, 4);
	/* The address's first 64 bits, then its top `prefix` of them, folded. */
	top = ((__u64)bpf_ntohl(hi) << 32 | bpf_ntohl(lo)) >> (64 - prefix);
	idx = top ^ (top >> LACE_FILTER_BITS) ^ (top >> 2 * LACE_FILTER_BITS) ^
	      (top >> 3 * LACE_FILTER_BITS) ^ (top >> 4 * LACE_FILTER_BITS);
	idx &= (1 << LACE_FILTER_BITS) - 1;
	return (s->bits[fam][idx / 64] >> (idx % 64)) & 1;
}

/*
 * A kubelet connect that matched no target: when its destination lies in a
 * Lace pod range, count it and report it (rate-limited; a full ring buffer
 * loses the report, never the connect, which always proceeds untouched). The
 * report is only built when the limit lets it go: past it, a flood of such
 * connects is only counted.
 */
static __always_inline void unmatched(struct lace_probe_key *key)
{
	struct lace_range_key rk = { .prefixlen = 8 + 128, .family = key->family };
	struct lace_range_value *range;

	if (bench_lookup_only() || !may_be_in_range(key))
		return;
	__builtin_memcpy(rk.addr, key->addr, 16);
	range = bpf_map_lookup_elem(&pod_ranges, &rk);
	if (!range)
		return;
	count(LACE_CNT_UNMATCHED);
	count_network(range->network_id, 1);
	if (!report_allowed() || !send_report(key, range->network_id))
		count(LACE_CNT_REPORTS_DROPPED);
}

/* Looks the key up and, on a match, marks the socket. */
static __always_inline void tag(struct bpf_sock_addr *ctx, struct lace_probe_key *key,
				__u32 tagged_slot)
{
	struct lace_probe_value *value = bpf_map_lookup_elem(&probe_targets, key);
	__u32 mark;

	if (!value) {
		unmatched(key);
		return;
	}
	mark = value->mark;
	if (bpf_setsockopt(ctx, SOL_SOCKET, SO_MARK, &mark, sizeof(mark)) != 0) {
		count(LACE_CNT_SETSOCKOPT_FAILED);
		return;
	}
	count(tagged_slot);
	if (bench_lookup_only())
		return;
	/* Shared by every CPU: atomic, no lock; the time is coarse and racy by design. */
	__sync_fetch_and_add(&value->hits, 1);
	value->last_hit_ns = bpf_ktime_get_coarse_ns();
	count_network(value->network_id, 0);
}

SEC("cgroup/connect4")
int lace_connect4(struct bpf_sock_addr *ctx)
{
	struct lace_probe_key key = {};
	__u32 ip4;

	if (bench_noop())
		return SYS_PROCEED;

	if (ctx->type != SOCK_STREAM)
		return SYS_PROCEED;
	count(LACE_CNT_CONNECT4_SEEN);
	count_variant();

	ip4 = ctx->user_ip4;
	key.family = LACE_AF_INET;
	key.port = (__be16)ctx->user_port;
	__builtin_memcpy(key.addr, &ip4, 4);
	tag(ctx, &key, LACE_CNT_CONNECT4_TAGGED);
	return SYS_PROCEED;
}

SEC("cgroup/connect6")
int lace_connect6(struct bpf_sock_addr *ctx)
{
	struct lace_probe_key key = {};
	__u32 w0, w1, w2, w3;

	if (bench_noop())
		return SYS_PROCEED;

	if (ctx->type != SOCK_STREAM)
		return SYS_PROCEED;
	count(LACE_CNT_CONNECT6_SEEN);
	count_variant();

	/* The context only allows 4-byte loads of user_ip6. */
	w0 = ctx->user_ip6[0];
	w1 = ctx->user_ip6[1];
	w2 = ctx->user_ip6[2];
	w3 = ctx->user_ip6[3];
	key.port = (__be16)ctx->user_port;
	/* ::ffff:a.b.c.d is the IPv4 destination a.b.c.d, looked up as such. */
	if (w0 == 0 && w1 == 0 && w2 == bpf_htonl(0x0000ffff)) {
		key.family = LACE_AF_INET;
		__builtin_memcpy(key.addr, &w3, 4);
	} else {
		key.family = LACE_AF_INET6;
		__builtin_memcpy(key.addr, &w0, 4);
		__builtin_memcpy(key.addr + 4, &w1, 4);
		__builtin_memcpy(key.addr + 8, &w2, 4);
		__builtin_memcpy(key.addr + 12, &w3, 4);
	}
	tag(ctx, &key, LACE_CNT_CONNECT6_TAGGED);
	return SYS_PROCEED;
}
