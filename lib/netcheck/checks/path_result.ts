/**
 * What a check found on one directed path: the record every phase produces,
 * that the summary counts, the metrics observe and the reports list.
 */
import type { LatencyFigures } from "./latency.ts";

export type Phase = "connect" | "udp" | "latency" | "mtu" | "bandwidth" | "isolation";

/** One tested directed path. */
export interface PathResult {
  phase: Phase;
  /** The network of --networks ("A"), or for isolation "A → B"; absent without --networks. */
  network?: string;
  from: string;
  to: string;
  fromPod: string;
  toPod: string;
  ok: boolean;
  /**
   * TIMEOUT/REFUSED/DNS/OTHER/UNKNOWN for connect; TIMEOUT, BAD_ANSWER,
   * WRONG_POD, LATENCY, NO_CURL or UNKNOWN for latency; IPERF, SLOW or BAD_ANSWER for
   * bandwidth; TOO_LONG in any phase but isolation (an exec cut at EXEC_OUTPUT_LIMIT).
   */
  errorClass?: string;
  message?: string;
  bitsPerSecond?: number;
  /** mtu phase: the largest payload (bytes) that came back whole, and the source pod's MTU. */
  largestPayload?: number;
  podMtu?: number;
  /** mtu phase: the MSS a TCP connection on the path got (iperf3's getsockopt TCP_MAXSEG). */
  mss?: number;
  /** mtu phase: the largest UDP datagram payload (bytes) through, and whether the full-size one was. */
  udpDatagram?: number;
  udpFullSize?: boolean;
  /** Connect and request round trip percentiles (latency phase). */
  latency?: LatencyFigures;
  attempts: number;
  durationMs: number;
}
