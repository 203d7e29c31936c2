/**
 * What a test world has built, to be undone in reverse order: every step
 * runs even when an earlier one fails, and the failures are thrown together.
 */
export class CleanupStack {
  readonly #steps: (() => unknown)[] = [];

  /** `label` names the world in the error, e.g. "SimWorld". */
  constructor(readonly label: string) {}

  /** Adds a step, to run before every step added earlier. */
  push(step: () => unknown): void {
    this.#steps.push(step);
  }

  /** Runs and forgets every step, newest first; throws an AggregateError of the failures. */
  async run(): Promise<void> {
    const errors: unknown[] = [];
    while (this.#steps.length) {
      try {
        await this.#steps.pop()!();
      } catch (e) {
        errors.push(e);
      }
    }
    if (errors.length) throw new AggregateError(errors, `${this.label} cleanup failed`);
  }
}
