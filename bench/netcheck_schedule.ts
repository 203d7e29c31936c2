import type { FigureResult } from "./report.ts";
import type { Cleanups } from "./system.ts";
export function netcheckScheduling(_o: { quick: boolean }, _c: Cleanups): Promise<FigureResult> {
  return Promise.reject(new Error("not written yet"));
}
