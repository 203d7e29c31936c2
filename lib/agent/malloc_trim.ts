/**
 * Gives the C heap's free memory back to the kernel once start-up is over.
 * Loading the module graph (the Kubernetes client's thousand generated
 * modules above all) and the first pod list leave megabytes freed but still
 * held by glibc's allocator, which an idle agent would otherwise keep in its
 * RSS for good.
 */
import { getLogger } from "@logtape/logtape";
import { libcSymbols } from "../libbpf/mod.ts";
import { errorText } from "../text/error.ts";

const log = getLogger(["lace", "agent"]);

/** Calls malloc_trim(0); a failure (no glibc) is logged at debug and otherwise ignored. */
export function trimMallocHeap(
  libc: () => { malloc_trim(pad: bigint): number } = libcSymbols,
): void {
  try {
    libc().malloc_trim(0n);
  } catch (error) {
    log.debug("Could not return freed memory to the kernel: {error}", { error: errorText(error) });
  }
}
