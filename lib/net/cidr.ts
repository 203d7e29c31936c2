/**
 * Address ranges (CIDRs) in canonical form, each of a Lace network: parsing,
 * membership, and a set asked about the same addresses again and again. Pure.
 */
import { addressFromBytes, canonicalAddress, type Family, parseAddress } from "./address.ts";

/** One pod range: a CIDR of a Lace network (network 0: the operator's, network unknown). */
export interface PodRange {
  family: Family;
  /** Canonical network address (host bits zero). */
  address: string;
  prefix: number;
  networkId: number;
}

/** Parses "10.244.0.0/16" or "fd00::/64"; throws a TypeError saying what is wrong. */
export function parseCidr(text: string, networkId = 0): PodRange {
  const slash = text.indexOf("/");
  if (slash < 0) throw new TypeError(`Invalid CIDR "${text}": expected ADDRESS/PREFIX`);
  const prefixText = text.slice(slash + 1);
  let parsed: ReturnType<typeof parseAddress>;
  try {
    parsed = parseAddress(text.slice(0, slash));
  } catch {
    throw new TypeError(`Invalid CIDR "${text}": "${text.slice(0, slash)}" is not an IP address`);
  }
  const bits = parsed.family === "ipv4" ? 32 : 128;
  const prefix = Number(prefixText);
  if (!/^[0-9]{1,3}$/.test(prefixText) || prefix > bits) {
    throw new TypeError(`Invalid CIDR "${text}": the prefix must be 0..${bits}`);
  }
  const bytes = maskBytes(parsed.bytes, prefix);
  if (!bytes.every((b, i) => b === parsed.bytes[i])) {
    throw new TypeError(
      `Invalid CIDR "${text}": host bits are set (did you mean ${
        rangeText({
          family: parsed.family,
          address: addressFromBytes(parsed.family, bytes),
          prefix,
        })
      }?)`,
    );
  }
  return {
    family: parsed.family,
    address: addressFromBytes(parsed.family, bytes),
    prefix,
    networkId,
  };
}

/**
 * Whether `address` (any textual form parseAddress reads; IPv4-mapped IPv6 as its IPv4) lies in
 * one of `ranges`. False for text that is no address.
 */
export function inRanges(address: string, ranges: readonly PodRange[]): boolean {
  return new PodRangeSet(ranges).has(address);
}

/**
 * A set of ranges asked about the same addresses again and again (every pod address at every
 * reconcile): the ranges are parsed once and each address's answer is kept, up to 65,536 of
 * them (then forgotten all at once). Parsing them at each ask was most of what desiredState()
 * cost at thousands of pods.
 */
export class PodRangeSet {
  readonly ranges: readonly PodRange[];
  readonly #parsed: { family: Family; bytes: Uint8Array; prefix: number }[];
  readonly #answers = new Map<string, boolean>();

  constructor(ranges: readonly PodRange[]) {
    this.ranges = ranges;
    this.#parsed = ranges.map((r) => ({ ...parseAddress(r.address), prefix: r.prefix }));
  }

  /** Whether `address` lies in one of the ranges (inRanges()). */
  has(address: string): boolean {
    const known = this.#answers.get(address);
    if (known !== undefined) return known;
    let answer = false;
    try {
      const { family, bytes } = parseAddress(address);
      answer = this.#parsed.some((r) =>
        r.family === family && maskBytes(bytes, r.prefix).every((b, i) => b === r.bytes[i])
      );
    } catch { /* not an address: in no range */ }
    if (this.#answers.size >= 65_536) this.#answers.clear();
    this.#answers.set(address, answer);
    return answer;
  }
}

/** The range of exactly one address (/32 or /128). */
export function hostRange(address: string, networkId: number): PodRange {
  const { family, address: canonical } = canonicalAddress(address);
  return { family, address: canonical, prefix: family === "ipv4" ? 32 : 128, networkId };
}

/** "10.244.0.0/16". */
export function rangeText(r: Pick<PodRange, "family" | "address" | "prefix">): string {
  return `${r.address}/${r.prefix}`;
}

/** A stable identity of a range and its network, for diffs. */
export function rangeId(r: PodRange): string {
  return `${rangeText(r)} ${r.networkId}`;
}

function maskBytes(bytes: Uint8Array, prefix: number): Uint8Array {
  return bytes.map((b, i) => {
    const keep = Math.max(0, Math.min(8, prefix - i * 8));
    return b & ((0xff << (8 - keep)) & 0xff);
  });
}
