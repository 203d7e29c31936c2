/**
 * `host:port` text, as Go's net.SplitHostPort and net.JoinHostPort handle it
 * (IPv6 hosts in brackets): for listen addresses, probe destinations and
 * netcheck's agnhost stand-in, which must report Go's exact messages.
 */

/**
 * Splits "host:port" or "[v6]:port" into host and port text, like Go's
 * net.SplitHostPort; throws an Error with Go's message for malformed input.
 * The port is not checked: callers decide what a port may be.
 */
export function splitHostPort(address: string): [string, string] {
  const missingPort = `address ${address}: missing port in address`;
  const tooManyColons = `address ${address}: too many colons in address`;
  if (address.startsWith("[")) {
    const end = address.indexOf("]");
    if (end < 0) throw new Error(`address ${address}: missing ']' in address`);
    if (address[end + 1] !== ":") throw new Error(missingPort);
    const port = address.slice(end + 2);
    if (port.includes(":") || port.includes("]")) throw new Error(tooManyColons);
    return [address.slice(1, end), port];
  }
  const colon = address.lastIndexOf(":");
  if (colon < 0) throw new Error(missingPort);
  const host = address.slice(0, colon);
  if (host.includes(":")) throw new Error(tooManyColons);
  return [host, address.slice(colon + 1)];
}

/** `host:port`, with an IPv6 host in brackets, like Go's net.JoinHostPort. */
export function joinHostPort(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}
