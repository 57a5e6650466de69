// The in-flight table of an endpoint's requests, keyed by their ascending ids.
//
// Not a Map: a Map whose keys always increase rehashes every few dozen inserts, and each
// obsolete table keeps a pointer to its successor and its entries. Once one obsolete table
// is promoted to the old generation, every scavenge finds the next one (and the requests in
// it) alive through it, and promotes that too: half of what a put allocates ended in the old
// generation, and garbage collection took a third of a busy sender's CPU. Here an id lives in
// the slot `id & mask` of one array that is only replaced when it grows; the rare id whose
// slot an older request still holds waits in a small overflow map.
export class IdTable<T extends { id: number }> {
  private slots: (T | undefined)[];
  private readonly overflow = new Map<number, T>();
  private count = 0;

  constructor(capacity = 1024) {
    this.slots = new Array<T | undefined>(capacity).fill(undefined);
  }

  get size(): number {
    return this.count;
  }

  get(id: number): T | undefined {
    const entry = this.slots[id & (this.slots.length - 1)];
    if (entry !== undefined && entry.id === id) return entry;
    return this.overflow.size === 0 ? undefined : this.overflow.get(id);
  }

  /** Adds entry under entry.id, which must not be in the table. */
  add(entry: T): void {
    if (this.count >= this.slots.length >> 1) this.grow();
    this.place(entry);
    this.count++;
  }

  delete(id: number): boolean {
    const index = id & (this.slots.length - 1);
    const entry = this.slots[index];
    if (entry !== undefined && entry.id === id) {
      this.slots[index] = undefined;
    } else if (!this.overflow.delete(id)) {
      return false;
    }
    this.count--;
    return true;
  }

  values(): T[] {
    const all: T[] = [];
    for (const entry of this.slots) if (entry !== undefined) all.push(entry);
    for (const entry of this.overflow.values()) all.push(entry);
    return all;
  }

  clear(): void {
    this.slots.fill(undefined);
    this.overflow.clear();
    this.count = 0;
  }

  private place(entry: T): void {
    const index = entry.id & (this.slots.length - 1);
    if (this.slots[index] === undefined) this.slots[index] = entry;
    else this.overflow.set(entry.id, entry);
  }

  private grow(): void {
    const entries = this.values();
    this.slots = new Array<T | undefined>(this.slots.length * 2).fill(undefined);
    this.overflow.clear();
    for (const entry of entries) this.place(entry);
  }
}
