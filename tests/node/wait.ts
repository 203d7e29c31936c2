/** Pauses for the real node's steps (its waits go through tests/helpers/wait.ts's waitFor). */

/** Resolves after ms. */
export const delay = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
