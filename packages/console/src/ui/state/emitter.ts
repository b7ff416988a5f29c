/** A minimal event emitter: listeners are called in order; one that throws does not stop the rest. */
export class Emitter<T> {
  readonly #listeners = new Set<(value: T) => void>();

  on(listener: (value: T) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(value: T): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(value);
      } catch (error) {
        console.error('@fanout/console: a listener failed', error);
      }
    }
  }
}
