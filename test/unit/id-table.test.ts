// IdTable against a Map as the model: the same answers whatever the order of adds and
// deletes, including ids that share a slot (an old request still pending) and growth.
import fc from 'fast-check';
import { IdTable } from '../../src/mailbox/id-table';

interface Entry {
  id: number;
}

function sorted(entries: Entry[]): number[] {
  return entries.map((e) => e.id).sort((a, b) => a - b);
}

describe('IdTable', () => {
  test('an id whose slot an older entry holds is kept, found and deleted', () => {
    const table = new IdTable<Entry>(4);
    const old = { id: 1 };
    table.add(old);
    const later = { id: 5 }; // 5 & 3 === 1: the slot of id 1
    table.add(later);
    expect(table.get(1)).toBe(old);
    expect(table.get(5)).toBe(later);
    expect(table.get(9)).toBeUndefined();
    expect(table.delete(1)).toBe(true);
    expect(table.get(5)).toBe(later);
    expect(table.delete(1)).toBe(false);
    expect(table.delete(5)).toBe(true);
    expect(table.size).toBe(0);
  });

  test('grows past its capacity and keeps every entry', () => {
    const table = new IdTable<Entry>(2);
    for (let id = 1; id <= 1000; id++) table.add({ id });
    expect(table.size).toBe(1000);
    for (let id = 1; id <= 1000; id++) expect(table.get(id)?.id).toBe(id);
    expect(sorted(table.values())).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    table.clear();
    expect(table.size).toBe(0);
    expect(table.get(7)).toBeUndefined();
  });

  test('ids beyond 2^32 (a long-lived endpoint) map to slots by their low bits', () => {
    const table = new IdTable<Entry>(8);
    const ids = [2 ** 32 + 3, 2 ** 40 + 3, 2 ** 52 - 1, 3];
    for (const id of ids) table.add({ id });
    for (const id of ids) expect(table.get(id)?.id).toBe(id);
    expect(table.delete(2 ** 40 + 3)).toBe(true);
    expect(table.get(2 ** 40 + 3)).toBeUndefined();
    expect(table.get(2 ** 32 + 3)?.id).toBe(2 ** 32 + 3);
  });

  test('matches a Map under any sequence of ascending adds and deletes', () => {
    const op = fc.oneof(fc.constant({ kind: 'add' as const, pick: 0 }), fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }));
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 64 }), fc.array(op, { maxLength: 400 }), (capacityLog, ops) => {
        const table = new IdTable<Entry>(2 ** (capacityLog % 7));
        const model = new Map<number, Entry>();
        let next = 1;
        for (const o of ops) {
          if (o.kind === 'add') {
            const entry = { id: next++ };
            table.add(entry);
            model.set(entry.id, entry);
          } else {
            // Mostly a live id (any of them, oldest included), sometimes one never added.
            const live = [...model.keys()];
            const id = live.length && o.pick % 5 ? live[o.pick % live.length] : next + o.pick;
            expect(table.delete(id)).toBe(model.delete(id));
          }
          expect(table.size).toBe(model.size);
        }
        for (let id = 1; id < next + 2; id++) expect(table.get(id)).toBe(model.get(id));
        expect(sorted(table.values())).toEqual(sorted([...model.values()]));
      }),
    );
  });
});
