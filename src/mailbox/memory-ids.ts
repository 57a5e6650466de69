// Names for the JS memory behind put sources and posted buffers, so that a provider keeping
// registrations of it (verbs) may reuse them and knows when to drop them. A name lives as
// long as its ArrayBuffer object: while a put or a posted buffer holds a view of it, the
// memory cannot be freed, and once the object is collected, `forget` tells the native side.

/** Memory that may move or shrink under a registration (resizable, growable) gets no name. */
function lasting(buffer: ArrayBufferLike): boolean {
  const b = buffer as { resizable?: boolean; growable?: boolean };
  return b.resizable !== true && b.growable !== true;
}

export class MemoryIds {
  private readonly ids = new WeakMap<ArrayBufferLike, number>();
  private readonly collected: FinalizationRegistry<number>;
  private next = 1;

  constructor(forget: (id: number) => void) {
    this.collected = new FinalizationRegistry(forget);
  }

  /** The name of the memory under `view`; 0 for memory that gets none. */
  of(view: Uint8Array): number {
    const buffer = view.buffer;
    let id = this.ids.get(buffer);
    if (id === undefined) {
      id = lasting(buffer) ? this.next++ : 0;
      this.ids.set(buffer, id);
      if (id !== 0) this.collected.register(buffer, id);
    }
    return id;
  }
}
