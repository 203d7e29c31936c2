/**
 * The kernel's CLOCK_MONOTONIC, the clock of the probe map's last_hit_ns
 * (bpf_ktime_get_coarse_ns): performance.now() counts from process start, so
 * it cannot be compared with times the datapath recorded.
 */
import { CLOCK_MONOTONIC } from "./ffi.ts";
import { lastErrno, libcSymbols } from "./library.ts";
import { BpfError } from "./errors.ts";

/** Nanoseconds since boot on CLOCK_MONOTONIC, as the datapath's last_hit_ns counts them. */
export function monotonicNowNs(): bigint {
  const timespec = new BigInt64Array(2); // struct timespec { time_t tv_sec; long tv_nsec; } on 64-bit
  if (libcSymbols().clock_gettime(CLOCK_MONOTONIC, new Uint8Array(timespec.buffer)) !== 0) {
    throw new BpfError("clock_gettime(CLOCK_MONOTONIC)", lastErrno());
  }
  return timespec[0] * 1_000_000_000n + timespec[1];
}
