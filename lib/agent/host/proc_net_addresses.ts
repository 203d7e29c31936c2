/**
 * The local addresses of a network namespace, parsed from its /proc/<pid>/net files (any
 * process's view of its own namespace, readable without setns): IPv4 from `fib_trie`, IPv6 from
 * `if_inet6`. Pure; kubelet_netns_addresses.ts reads the files.
 */

/**
 * The IPv4 addresses `fib_trie` lists as `/32 host LOCAL`: the ones the kernel delivers locally
 * (primary and secondary addresses of every interface, loopback's 127.0.0.1 too). A leaf line
 * (`|-- 10.0.0.1`) is followed by its prefixes (`/32 host LOCAL`, `/24 link UNICAST`, ...); only
 * the /32 LOCAL ones name an address of the namespace. Throws on text that is not fib_trie.
 */
export function parseFibTrieLocal(text: string): string[] {
  const out = new Set<string>();
  let leaf: string | null = null;
  let sawTable = false;
  const lines = text.split("\n");
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === "") continue;
    if (/^(?:Main|Local|Id \d+):$/.test(line)) {
      sawTable = true; // "Main:", "Local:", "Id 101:" (a policy-routing table)
      leaf = null;
      continue;
    }
    let m = /^\|-- (\d{1,3}(?:\.\d{1,3}){3})$/.exec(line);
    if (m) {
      if (!m[1].split(".").every((o) => Number(o) <= 255)) throw fibError(i, raw);
      leaf = m[1];
      continue;
    }
    if (/^\+-- \d{1,3}(?:\.\d{1,3}){3}\/\d{1,2} \d+ \d+ \d+$/.test(line)) {
      leaf = null;
      continue;
    }
    m = /^\/(\d{1,2}) (\S+) (\S+)$/.exec(line);
    if (m) {
      if (leaf === null) throw fibError(i, raw, "a prefix line before any leaf");
      if (m[1] === "32" && m[2] === "host" && m[3] === "LOCAL") out.add(leaf);
      continue;
    }
    throw fibError(i, raw);
  }
  if (!sawTable && out.size === 0 && text.trim() !== "") throw fibError(0, lines[0]);
  return [...out];
}

function fibError(i: number, line: string, what = "not a fib_trie line"): Error {
  return new Error(
    `cannot parse fib_trie line ${i + 1} (${JSON.stringify(line.slice(0, 80))}): ${what}; ` +
      "expected the text of /proc/<pid>/net/fib_trie",
  );
}

/**
 * The IPv6 addresses of `if_inet6` (`<32 hex digits> <ifindex> <prefixlen> <scope> <flags>
 * <name>` a line), in canonical text form; tentative ones too (the kernel may own them in a
 * moment). Throws on a line of another shape.
 */
export function parseIfInet6(text: string): string[] {
  const out = new Set<string>();
  for (const [i, raw] of text.split("\n").entries()) {
    const line = raw.trim();
    if (line === "") continue;
    const m = /^([0-9a-fA-F]{32}) [0-9a-fA-F]+ [0-9a-fA-F]+ [0-9a-fA-F]+ [0-9a-fA-F]+ +\S+$/
      .exec(line);
    if (!m) {
      throw new Error(
        `cannot parse if_inet6 line ${i + 1} (${JSON.stringify(raw.slice(0, 80))}): expected ` +
          "32 hex digits, index, prefix length, scope, flags and a name, as in /proc/<pid>/net/if_inet6",
      );
    }
    out.add(ipv6Text(m[1].toLowerCase()));
  }
  return [...out];
}

/** RFC 5952 text of 32 hex digits (longest zero run of two or more groups as "::"). */
function ipv6Text(hex: string): string {
  const groups = Array.from({ length: 8 }, (_, g) => parseInt(hex.slice(g * 4, g * 4 + 4), 16));
  let best = -1, bestLen = 0;
  for (let g = 0; g < 8;) {
    if (groups[g] !== 0) {
      g++;
      continue;
    }
    let e = g;
    while (e < 8 && groups[e] === 0) e++;
    if (e - g > bestLen && e - g >= 2) [best, bestLen] = [g, e - g];
    g = e;
  }
  const t = (a: number[]) => a.map((x) => x.toString(16)).join(":");
  return best < 0 ? t(groups) : `${t(groups.slice(0, best))}::${t(groups.slice(best + bestLen))}`;
}
