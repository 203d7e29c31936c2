/**
 * What a start (or a test world, or a benchmark figure) has built, to be
 * undone in reverse order: every step runs even when an earlier one fails.
 */
export class CleanupStack {
  readonly #steps: (() => unknown)[] = [];

  /** `label` names what is cleaned up in the error, e.g. "agent start". */
  constructor(readonly label: string) {}

  /** Adds a step, to run before every step added earlier. */
  push(step: () => unknown): void {
    this.#steps.push(step);
  }

  /** Runs and forgets every step, newest first; returns the failures. */
  async runAll(): Promise<unknown[]> {
    const errors: unknown[] = [];
    while (this.#steps.length) {
      try {
        await this.#steps.pop()!();
      } catch (e) {
        errors.push(e);
      }
    }
    return errors;
  }

  /** Runs and forgets every step, newest first; throws an AggregateError of the failures. */
  async run(): Promise<void> {
    const errors = await this.runAll();
    if (errors.length) throw new AggregateError(errors, `${this.label} cleanup failed`);
  }
}
