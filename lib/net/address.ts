/**
 * IP addresses as every part of Lace names them: a family, the network-order
 * bytes, and one canonical text (IPv4 dotted quad, IPv6 compressed lower case,
 * RFC 5952), so that two spellings of one address are one key everywhere. Pure.
 */
import { isIPv4, isIPv6 } from "node:net";

export type Family = "ipv4" | "ipv6";

/**
 * Parses an IP address into its 4 or 16 network-order bytes. An IPv4-mapped
 * IPv6 address (`::ffff:a.b.c.d`) is returned as IPv4, the same way the
 * connect6 program looks it up.
 */
export function parseAddress(text: string): { family: Family; bytes: Uint8Array } {
  if (isIPv4(text)) {
    return { family: "ipv4", bytes: Uint8Array.from(text.split(".").map(Number)) };
  }
  if (!isIPv6(text)) throw new TypeError(`Invalid IP address: "${text}"`);
  const bytes = ipv6Bytes(text);
  const mapped = bytes.subarray(0, 10).every((b) => b === 0) && bytes[10] === 0xff &&
    bytes[11] === 0xff;
  if (mapped) return { family: "ipv4", bytes: bytes.slice(12) };
  return { family: "ipv6", bytes };
}

function ipv6Bytes(text: string): Uint8Array {
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    const v4 = text.slice(lastColon + 1).split(".").map(Number);
    tail = [(v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]];
    text = text.slice(0, lastColon + 1) + "0:0";
  }
  const [head, rest] = text.includes("::") ? text.split("::") : [text, undefined];
  const groups = (s: string) => (s === "" ? [] : s.split(":").map((g) => parseInt(g, 16)));
  let words = groups(head);
  if (rest !== undefined) {
    const back = groups(rest);
    words = [...words, ...new Array(8 - words.length - back.length).fill(0), ...back];
  }
  if (tail.length) words.splice(6, 2, ...tail);
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    out[i * 2] = w >> 8;
    out[i * 2 + 1] = w & 0xff;
  });
  return out;
}

/**
 * Formats 4 or 16 network-order bytes canonically (RFC 5952 for IPv6). Written
 * without arrays: a resync decodes every key of the map, which arrays and join
 * made measurably slower.
 */
export function formatAddress(family: Family, bytes: Uint8Array): string {
  if (family === "ipv4") return `${bytes[0]}.${bytes[1]}.${bytes[2]}.${bytes[3]}`;
  const word = (i: number) => (bytes[2 * i] << 8) | bytes[2 * i + 1];
  // The longest run of two or more zero words becomes "::" (the first of equal runs).
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (word(i) !== 0) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < 8 && word(j) === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  let text = "";
  for (let i = 0; i < 8; i++) {
    if (i === best) {
      text += "::";
      i += bestLen - 1;
      continue;
    }
    if (text !== "" && !text.endsWith(":")) text += ":";
    text += word(i).toString(16);
  }
  return text;
}

/** Returns the canonical textual form of an address, or throws TypeError. */
export function canonicalAddress(text: string): { family: Family; address: string } {
  const { family, bytes } = parseAddress(text);
  return { family, address: formatAddress(family, bytes) };
}

/**
 * The canonical text of 4 or 16 network-order bytes, read as canonicalAddress() reads text: an
 * IPv4-mapped IPv6 address comes out as its IPv4 address.
 */
export function addressFromBytes(family: Family, bytes: Uint8Array): string {
  if (family === "ipv4") return Array.from(bytes.subarray(0, 4)).join(".");
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(((bytes[i] << 8) | bytes[i + 1]).toString(16));
  return canonicalAddress(words.join(":")).address;
}
