/**
 * The nodes of the in-memory cluster: each with its addresses and the faults
 * a test gives it, and fakeNodes() to make N healthy ones whose names and
 * addresses carry their number (MemoryPods finds them by it).
 */

export interface FakeNode {
  name: string;
  ipv4?: string;
  ipv6?: string;
  /** Its pod stays Pending, unschedulable. */
  cordoned?: boolean;
  /** A container waiting reason, e.g. ImagePullBackOff. */
  waitingReason?: string;
  /** Nothing reaches it and it reaches nothing (connect TIMEOUT). */
  unreachable?: boolean;
  /** Its port 1199 refuses connections (connect REFUSED). */
  refuses?: boolean;
  /** Its iperf3 server answers "busy" this many times first. */
  busyTimes?: number;
  /** Bandwidth of paths leaving this node, bits/s. */
  egressBps?: number;
  /** Its pod never becomes ready. */
  neverReady?: boolean;
  /** UDP to and from it is dropped (TCP still passes). */
  udpBlocked?: boolean;
  /** Payloads above this many bytes vanish on paths to or from this node (an MTU black hole). */
  blackHoleAbove?: number;
  /** UDP packets above this many bytes (IP length) vanish on paths to or from this node; TCP passes. */
  udpBlackHoleAbove?: number;
  /** Round trip of paths to this node, ms (latency samples; the last one is 3× slower). */
  rttMs?: number;
}

/** Generates `n` healthy fake nodes with IPv4 and IPv6 addresses. */
export function fakeNodes(n: number): FakeNode[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `node-${String(i).padStart(4, "0")}`,
    ipv4: `10.${(i >> 8) & 255}.${i & 255}.2`,
    ipv6: `fd00::${i.toString(16)}:2`,
  }));
}
