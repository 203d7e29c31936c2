/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * The layout of Lace's probe map and counters, defined once. The agent's
 * codec (lib/datapath/probe_map.ts) mirrors these structs byte for byte; a change here
 * is a change of LACE_ABI_VERSION and of that codec (tests/bpf_layout_test.ts
 * compares the two through the built object's BTF).
 *
 * Each ABI version's maps are pinned in their own directory (abi<N> under the
 * pin path), so an upgrade or a rollback that changes the layout creates the
 * new maps beside the old ones, fills them, swaps the programs through the
 * links and only then removes the old maps. Fields are only ever appended to
 * struct lace_probe_value, and zero means "not set": an agent fills the fields
 * it knows and zeroes the rest, so it can fill a newer layout's map and read
 * an older one's. The probe key never changes size.
 */
#ifndef LACE_H
#define LACE_H

#define LACE_ABI_VERSION 2

/* Families as the kernel names them (AF_INET, AF_INET6). */
#define LACE_AF_INET 2
#define LACE_AF_INET6 10

#define LACE_MAX_TARGETS 65536

/*
 * One probe target: where the kubelet connects. IPv4 addresses sit in the
 * first 4 bytes of addr with the rest zero; IPv4-mapped IPv6 destinations are
 * looked up as IPv4. addr and port are in network byte order, as the kernel
 * hands them to connect programs.
 */
struct lace_probe_key {
	__u8 family;
	__u8 pad;
	__be16 port;
	__u8 addr[16];
};

/*
 * What a matching connect gets: the socket mark, and the network it names.
 * Since ABI 2 also what the datapath saw: the connects it tagged for this
 * target and when the last one was (CLOCK_MONOTONIC, coarse, in ns). The
 * agent writes those two as zero for a new or changed target and never again;
 * the program updates them without locks (an atomic add, a plain store).
 */
struct lace_probe_value {
	__u32 mark;
	__u16 network_id;
	__u16 flags; /* reserved, zero */
	__u64 hits;
	__u64 last_hit_ns;
};

/* Indexes into the per-CPU counters array. */
enum lace_counter {
	LACE_CNT_CONNECT4_SEEN = 0,
	LACE_CNT_CONNECT4_TAGGED = 1,
	LACE_CNT_CONNECT6_SEEN = 2,
	LACE_CNT_CONNECT6_TAGGED = 3,
	LACE_CNT_SETSOCKOPT_FAILED = 4,
	/* Kubelet connects into a Lace pod range that matched no target. */
	LACE_CNT_UNMATCHED = 5,
	/* Reports of those the rate limit or a full ring buffer dropped (the connects went on). */
	LACE_CNT_REPORTS_DROPPED = 6,
	LACE_CNT_MAX = 8,
};

/* Network ids are 1..65535; 0 counts a pod range the operator gave without a network. */
#define LACE_MAX_NETWORKS 65536

/*
 * A pod address range of Lace networks: an LPM trie key. prefixlen counts the
 * family byte's 8 bits plus the address prefix, so IPv4 and IPv6 ranges never
 * match each other's addresses.
 */
struct lace_range_key {
	__u32 prefixlen;
	__u8 family;
	__u8 addr[16];
};

#define LACE_MAX_RANGES 65536

/*
 * The pre-check before the pod ranges trie, so that a kubelet connect outside
 * every range (the API server, a registry, a host-network pod) skips the trie
 * lookup. Per family (0: IPv4, 1: IPv6), prefix is the shortest range prefix
 * (at most 32 or 64 bits) and bits holds one bit per bucket: a destination's
 * top `prefix` bits, xor-folded into LACE_FILTER_BITS bits, name its bucket.
 * The agent sets the bucket of every range (lib/datapath/range_filter.ts), so
 * every address inside a range finds its bit set; a clear bit proves the
 * destination is outside every range, a set one only sends it to the trie.
 * prefix 0 means "no filter": every destination asks the trie (a new object's
 * zeroed map, or a /0 range). Like the trie, each object has its own.
 *
 * Two slots, and `active` names the one the program reads. A connect program
 * can be preempted between loading a prefix and loading a word of the bits,
 * and each write of the map copies the whole value, so one buffer would let
 * a connect pair one filter's prefix with another's bits. The agent writes a
 * new filter into the other slot (the active slot's bytes written back as
 * they were, so a reader of it loads the same bytes throughout), then writes
 * the value again with `active` flipped. The program loads `active` once and
 * then reads only that slot: it pairs two filters' prefix and bits only if,
 * between its loads, the agent flips away from that slot and then begins the
 * next change, which writes over it.
 */
#define LACE_FILTER_BITS 14
#define LACE_FILTER_WORDS ((1 << LACE_FILTER_BITS) / 64)

struct lace_range_filter_slot {
	__u32 prefix[2];
	__u64 bits[2][LACE_FILTER_WORDS];
};

struct lace_range_filter {
	__u32 active; /* the slot the program reads: its lowest bit */
	__u32 pad; /* reserved, zero */
	struct lace_range_filter_slot slot[2];
};

/* The network a pod range belongs to (0: unknown, an operator's range). */
struct lace_range_value {
	__u16 network_id;
	__u16 flags; /* reserved, zero */
};

/*
 * Per-network counts of kubelet connects, indexed by network id: those tagged
 * for one of its targets and those into its pod ranges that matched no target
 * (its connects are the sum, so each connect costs one atomic add, not two).
 * The map is not pinned: each object reads only its own.
 */
struct lace_network_counts {
	__u64 tagged;
	__u64 unmatched;
};

/* A kubelet connect into a pod range that matched no target, as reported to the agent. */
struct lace_unmatched_report {
	__u8 family;
	__u8 pad;
	__be16 port;
	__u16 network_id;
	__u16 pad2;
	__u8 addr[16];
};

/* Reports sent per CPU per second at most; the rest are only counted. */
#define LACE_REPORTS_PER_SECOND 64
/* The ring buffer's size in bytes (a power of two, a multiple of the page size). */
#define LACE_REPORT_RING_BYTES 4096

/* The per-CPU rate limiter of reports. */
struct lace_report_window {
	__u64 start_ns;
	__u64 sent;
};

/*
 * The single entry of the info map, written by the loader after load, so that
 * `lace doctor` can tell whether the pinned program is the one this binary
 * carries.
 */
struct lace_info {
	__u32 abi_version;
	__u32 flags; /* reserved, zero */
	__u64 loaded_at; /* unix time in ms when the loader wrote it */
	__u8 object_sha256[32];
};

#endif
